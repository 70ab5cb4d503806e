// The audit trail's one redaction rule: what an audit row may hold, whatever a caller hands it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { changedFields, maskDigits, REDACTED, redactForAudit, redactText } from '../../src/domain/audit.ts';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { generateWebhookSecret } from '../../src/domain/webhooks.ts';

describe('audit redaction', () => {
  it('replaces every field named like a secret, at any depth and in any case', () => {
    const redacted = redactForAudit({
      key: 'k',
      apiKey: 'a',
      keyHash: 'h',
      key_hash: 'h',
      secret: 's',
      previousSecret: 'p',
      signingSecret: 'g',
      password: 'pw',
      Token: 't',
      nested: { deeper: [{ SECRET: 'x', kept: 'visible' }] },
    });
    assert.deepEqual(redacted, {
      key: REDACTED,
      apiKey: REDACTED,
      keyHash: REDACTED,
      key_hash: REDACTED,
      secret: REDACTED,
      previousSecret: REDACTED,
      signingSecret: REDACTED,
      password: REDACTED,
      Token: REDACTED,
      nested: { deeper: [{ SECRET: REDACTED, kept: 'visible' }] },
    });
  });

  it('keeps only the last 4 digits of account numbers and phones', () => {
    const redacted = redactForAudit({
      sender: { phone: '04141234567', nationalId: 'V12345678' },
      accountNumber: '01020123456789012345',
      account_number: '0102-0123-45',
    });
    assert.deepEqual(redacted, {
      sender: { phone: '…4567', nationalId: 'V12345678' },
      accountNumber: '…2345',
      account_number: '…2345',
    });
    assert.equal(maskDigits('0414-123.4567'), '…4567');
  });

  it('removes keys and webhook secrets by their shape, whatever field they hide in', () => {
    const live = generateApiKey('live');
    const platform = generateApiKey('platform');
    const secret = generateWebhookSecret();
    const text = `note: ${live} and ${platform}; whsec=${secret}.`;
    const redacted = redactForAudit({ note: text, list: [live], id: `x${secret}` }) as Record<string, unknown>;
    const json = JSON.stringify(redacted);
    for (const found of [live, platform, secret]) assert.ok(!json.includes(found), `${found} left in ${json}`);
    assert.equal(redacted.note, `note: ${REDACTED} and ${REDACTED}; whsec=${REDACTED}.`);
  });

  it('removes URL credentials and secret query parameters, and leaves the rest of the URL', () => {
    assert.equal(
      redactText('https://user:pa55@hooks.example.com/in?token=abc&x=1'),
      `https://${REDACTED}@hooks.example.com/in?token=%5Bredacted%5D&x=1`,
    );
    assert.equal(redactText('https://hooks.example.com/in?x=1'), 'https://hooks.example.com/in?x=1');
  });

  it('writes bigints as decimal strings and dates as ISO-8601, and never changes its input', () => {
    const input = {
      amount: 12345678901234567890n,
      at: new Date('2025-01-02T03:04:05.678Z'),
      phone: '04141234567',
      undef: undefined,
      none: null,
    };
    const copy = structuredClone(input);
    assert.deepEqual(redactForAudit(input), {
      amount: '12345678901234567890',
      at: '2025-01-02T03:04:05.678Z',
      phone: '…4567',
      none: null,
    });
    assert.deepEqual(input, copy);
  });

  it('a generated key or secret never survives, wherever it is put (property)', () => {
    const secretArb = fc
      .constantFrom('test', 'live', 'platform')
      .map((mode) => generateApiKey(mode as 'test'))
      .chain((key) => fc.constantFrom(key, generateWebhookSecret()));
    fc.assert(
      fc.property(
        secretArb,
        fc.string({ maxLength: 20 }),
        fc.string({ maxLength: 20 }),
        fc.constantFrom('a', 'b.c', 'url', 'note'),
        (secret, prefix, suffix, name) => {
          const json = JSON.stringify(
            redactForAudit({ [name]: `${prefix}${secret}${suffix}`, deep: { list: [secret] } }),
          );
          return !json.includes(secret);
        },
      ),
    );
  });

  it('changedFields picks the named fields of both snapshots', () => {
    const before = { name: 'A', feeBps: 100, spreadBps: 50 };
    const after = { name: 'B', feeBps: 100, spreadBps: 40 };
    assert.deepEqual(changedFields(before, after, ['name', 'spreadBps']), {
      before: { name: 'A', spreadBps: 50 },
      after: { name: 'B', spreadBps: 40 },
    });
  });
});
