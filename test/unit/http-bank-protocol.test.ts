// The HTTP bank connector's pure parts: request and callback signing (with key rotation), the one
// table from the gateway's words to ours (every row, and what is not in it), and the rails file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { RAIL_FAILURE_REASONS } from '../../src/domain/failure-reasons.ts';
import {
  railSignature,
  RAIL_SIGNATURE_TOLERANCE_MS,
  signRailMessage,
  verifyRailMessage,
} from '../../src/domain/rail-signature.ts';
import { notificationOf, readCallback } from '../../src/rails/http-bank/callbacks.ts';
import { answerCheckedRail } from '../../src/rails/answer-check.ts';
import type { RailAdapter } from '../../src/rails/rail.ts';
import {
  DEFAULT_RETURN_REASON,
  GATEWAY_ERROR_MAP,
  GATEWAY_STATUS_MAP,
  gatewayErrorCodeOf,
  railStatusOf,
} from '../../src/rails/http-bank/status-map.ts';
import { GATEWAY_STATUSES } from '../../src/rails/http-bank/protocol.ts';
import { parseRailsFile, readRailsFile } from '../../src/rails/rails-file.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const CURRENT = { id: 'k-2026-11', secret: 'current-secret-0123456789abcdef' };
const PREVIOUS = { id: 'k-2026-05', secret: 'previous-secret-0123456789abcde' };
const NOW = Date.UTC(2026, 10, 27, 12);
const body = Buffer.from('{"reference":"a"}');

describe('rail message signing', () => {
  it('is HMAC-SHA256 over "<timestamp>.<body>" in hex (a known vector)', () => {
    // printf '%s' '1700000000000.{}' | openssl dgst -sha256 -hmac 'key-0123456789abcdef'
    const vector = '1a0a808ebf44b52289a7acee3302511cddc2dc509244b642cd03b1fcf93ac079';
    assert.equal(railSignature('key-0123456789abcdef', '1700000000000', '{}'), vector);
    assert.equal(railSignature('key-0123456789abcdef', '1700000000000', Buffer.from('{}')), vector);
    assert.notEqual(
      railSignature('key-0123456789abcdef', '1700000000000', '{}'),
      railSignature('key-0123456789abcdef', '1700000000001', '{}'),
    );
  });

  it('verifies with the current key and, during a rotation, the previous one, chosen by key id', () => {
    for (const key of [CURRENT, PREVIOUS]) {
      const headers = signRailMessage(key, body, NOW);
      assert.deepEqual(verifyRailMessage({ keys: [CURRENT, PREVIOUS], headers, rawBody: body, nowMs: NOW }), {
        ok: true,
        keyId: key.id,
      });
    }
    // Once the previous key is retired, its messages are refused.
    assert.deepEqual(
      verifyRailMessage({ keys: [CURRENT], headers: signRailMessage(PREVIOUS, body, NOW), rawBody: body, nowMs: NOW }),
      { ok: false, reason: 'unknown_key' },
    );
  });

  it('refuses a changed body, a wrong secret under a known id, a stale timestamp, missing headers', () => {
    const headers = signRailMessage(CURRENT, body, NOW);
    const verify = (h: Record<string, unknown>, raw = body, nowMs = NOW) =>
      verifyRailMessage({ keys: [CURRENT], headers: h, rawBody: raw, nowMs });
    assert.deepEqual(verify(headers, Buffer.from('{"reference":"b"}')), { ok: false, reason: 'signature_mismatch' });
    assert.deepEqual(
      verify(signRailMessage({ id: CURRENT.id, secret: 'another-secret-0123456789abcdef' }, body, NOW)),
      { ok: false, reason: 'signature_mismatch' },
    );
    assert.deepEqual(verify(headers, body, NOW + RAIL_SIGNATURE_TOLERANCE_MS + 1), {
      ok: false,
      reason: 'timestamp_outside_tolerance',
    });
    assert.deepEqual(verify(headers, body, NOW + RAIL_SIGNATURE_TOLERANCE_MS), { ok: true, keyId: CURRENT.id });
    assert.deepEqual(verify({ ...headers, 'x-bank-timestamp': '12e5' }), { ok: false, reason: 'invalid_timestamp' });
    assert.deepEqual(verify({ 'x-bank-key-id': CURRENT.id }), { ok: false, reason: 'missing_headers' });
    assert.deepEqual(verify({ ...headers, 'x-bank-signature': 'zz' }), { ok: false, reason: 'signature_mismatch' });
  });
});

describe('the gateway status table', () => {
  const now = new Date(NOW);

  it('maps every gateway status (the protocol lists exactly the table)', () => {
    assert.deepEqual(Object.keys(GATEWAY_STATUS_MAP).sort(), [...GATEWAY_STATUSES].sort());
    const base = {
      reference: 'r',
      bankReference: '000000000001',
      settledAt: '2026-11-27T11:00:00.000Z',
      errorCode: 'ACCOUNT_INVALID',
    };
    assert.deepEqual(railStatusOf({ ...base, status: 'RECEIVED' }, now), { status: 'processing' });
    assert.deepEqual(railStatusOf({ ...base, status: 'PROCESSING' }, now), { status: 'processing' });
    assert.deepEqual(railStatusOf({ ...base, status: 'ON_HOLD' }, now), { status: 'unconfirmed' });
    assert.deepEqual(railStatusOf({ ...base, status: 'SETTLED' }, now), {
      status: 'settled',
      bankReference: '000000000001',
      settledAt: new Date('2026-11-27T11:00:00.000Z'),
    });
    assert.deepEqual(railStatusOf({ ...base, status: 'REJECTED' }, now), {
      status: 'failed',
      reason: 'invalid_destination_account',
    });
    assert.deepEqual(railStatusOf({ ...base, status: 'RETURNED', returnReason: 'account_closed' }, now), {
      status: 'reversed',
      bankReference: '000000000001',
      reason: 'account_closed',
    });
  });

  it('maps every gateway error code to its failure reason, and every failure reason has a code', () => {
    for (const [code, reason] of Object.entries(GATEWAY_ERROR_MAP)) {
      assert.deepEqual(
        railStatusOf({ reference: 'r', status: 'REJECTED', errorCode: code }, now),
        { status: 'failed', reason },
        code,
      );
    }
    for (const reason of RAIL_FAILURE_REASONS) assert.equal(GATEWAY_ERROR_MAP[gatewayErrorCodeOf(reason)], reason);
  });

  it('never invents a failure: unknown statuses and codes, and incomplete answers, are unconfirmed', () => {
    for (const transfer of [
      { reference: 'r', status: 'WHATEVER' },
      { reference: 'r', status: 'constructor' },
      { reference: 'r', status: 'REJECTED' },
      { reference: 'r', status: 'REJECTED', errorCode: 'SOMETHING_NEW' },
      { reference: 'r', status: 'REJECTED', errorCode: 'toString' },
      { reference: 'r', status: 'SETTLED' },
      { reference: 'r', status: 'RETURNED' },
    ]) {
      assert.deepEqual(railStatusOf(transfer, now), { status: 'unconfirmed' }, JSON.stringify(transfer));
    }
  });

  it('a settlement without a readable time is dated now; a return without a plain reason gets the default', () => {
    assert.deepEqual(
      railStatusOf({ reference: 'r', status: 'SETTLED', bankReference: '1', settledAt: 'yesterday' }, now),
      { status: 'settled', bankReference: '1', settledAt: now },
    );
    assert.equal(
      (
        railStatusOf({ reference: 'r', status: 'RETURNED', bankReference: '1', returnReason: 'Cuenta <b>' }, now) as {
          reason: string;
        }
      ).reason,
      DEFAULT_RETURN_REASON,
    );
  });
});

describe('gateway callbacks', () => {
  const callback = {
    eventId: 'evt_1',
    occurredAt: '2026-11-27T11:59:00.000Z',
    transfer: {
      reference: '7b0e4b7e-93c1-4a47-9e1e-6a3f1c6f0c11',
      status: 'SETTLED',
      bankReference: '000000000007',
      amountMinor: '150000',
      metadata: { tenantId: '1f0e4b7e-93c1-4a47-9e1e-6a3f1c6f0c11', mode: 'live' },
    },
  };
  const raw = Buffer.from(JSON.stringify(callback));

  it('reads a verified callback into the notification the reaper applies', () => {
    const reading = readCallback([CURRENT], signRailMessage(CURRENT, raw, NOW), raw, NOW);
    assert.ok(reading.ok);
    assert.deepEqual(notificationOf('evt_1', reading.callback, reading.occurredAt), {
      id: 'evt_1',
      reference: callback.transfer.reference,
      occurredAt: new Date(callback.occurredAt),
      tenantId: callback.transfer.metadata.tenantId,
      mode: 'live',
      echo: { reference: callback.transfer.reference, amountMinor: '150000', bankReference: '000000000007' },
      kind: 'settled',
      bankReference: '000000000007',
      settledAt: new Date(callback.occurredAt),
    });
  });

  it('a callback whose amount or bank reference we cannot read carries its doubt through the answer checks, instead of an amount', async () => {
    for (const [field, value] of [
      ['amountMinor', 150000],
      ['amountMinor', '1500.00'],
      ['bankReference', '=HYPERLINK("x")'],
    ] as const) {
      const said = { ...callback, transfer: { ...callback.transfer, [field]: value } };
      const stored = notificationOf('evt_5', said as typeof callback, new Date(NOW))!;
      const adapter = { name: 'bank', pendingNotifications: async () => [stored] } as unknown as RailAdapter;
      const [notification] = await answerCheckedRail(adapter).pendingNotifications(10);
      assert.equal(notification?.doubt?.kind, 'unreadable_answer', `${field} ${JSON.stringify(value)}`);
      assert.equal(notification?.amountMinor, undefined);
      assert.ok(!('echo' in notification!), 'the echo stops at the checks');
    }
    const [readable] = await answerCheckedRail({
      name: 'bank',
      pendingNotifications: async () => [notificationOf('evt_6', callback, new Date(NOW))!],
    } as unknown as RailAdapter).pendingNotifications(10);
    assert.equal(readable?.amountMinor, 150000n);
    assert.equal(readable?.doubt, undefined);
  });

  it('refuses a bad signature before reading, and a signed body that is not a callback', () => {
    assert.deepEqual(readCallback([CURRENT], signRailMessage(PREVIOUS, raw, NOW), raw, NOW), {
      ok: false,
      refusal: 'unknown_key',
    });
    const junk = Buffer.from('{"eventId":"evt_2"}');
    assert.deepEqual(readCallback([CURRENT], signRailMessage(CURRENT, junk, NOW), junk, NOW), {
      ok: false,
      refusal: 'unreadable',
    });
    // Text jsonb cannot hold (U+0000, an unpaired surrogate) is refused, not a 500 at the insert.
    for (const text of ['a\\u0000b', '\\ud800']) {
      const unstorable = Buffer.from(
        JSON.stringify({ ...callback, transfer: { ...callback.transfer, errorMessage: 'x' } }).replace(
          '"x"',
          `"${text}"`,
        ),
      );
      assert.deepEqual(
        readCallback([CURRENT], signRailMessage(CURRENT, unstorable, NOW), unstorable, NOW),
        { ok: false, refusal: 'unreadable' },
        text,
      );
    }
  });

  it('a callback that says nothing final is no notification', () => {
    assert.equal(
      notificationOf('evt_3', { ...callback, transfer: { ...callback.transfer, status: 'PROCESSING' } }, new Date(NOW)),
      undefined,
    );
    assert.equal(
      notificationOf(
        'evt_4',
        { ...callback, transfer: { ...callback.transfer, status: 'REJECTED', errorCode: 'NEW_CODE' } },
        new Date(NOW),
      ),
      undefined,
    );
  });
});

describe('the rails file', () => {
  const connector = {
    name: 'banco-uno',
    kind: 'http-bank',
    baseUrl: 'https://gw.example/',
    keys: [{ id: 'k1', secretEnv: 'BANK_KEY' }],
    callbackKeys: [{ id: 'c1', secret: 'callback-secret-0123456789' }],
    timeoutMs: 4000,
    modes: ['live'],
  };

  it('reads connectors, secrets inline or from the environment', () => {
    const parsed = parseRailsFile(JSON.stringify({ connectors: [connector] }), {
      BANK_KEY: 'request-secret-0123456789',
    });
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.connectors[0]!.keys, [{ id: 'k1', secret: 'request-secret-0123456789' }]);
    assert.equal(parsed.connectors[0]!.timeoutMs, 4000);
  });

  it('names the problem of a bad file', () => {
    const problem = (file: unknown, env: Record<string, string> = { BANK_KEY: 'request-secret-0123456789' }) => {
      const parsed = parseRailsFile(typeof file === 'string' ? file : JSON.stringify(file), env);
      return parsed.ok ? 'ok' : parsed.problem;
    };
    assert.match(problem('{'), /not JSON/);
    assert.match(problem({ connectors: [connector] }, {}), /secretEnv names BANK_KEY, which is not set/);
    assert.match(problem({ connectors: [{ ...connector, kind: 'soap' }] }), /kind must be "http-bank"/);
    assert.match(problem({ connectors: [{ ...connector, modes: ['prod'] }] }), /modes/);
    assert.match(problem({ connectors: [{ ...connector, timeoutMs: 0 }] }), /timeoutMs/);
    assert.match(problem({ connectors: [{ ...connector, baseUrl: 'ftp://x' }] }), /baseUrl/);
    assert.match(
      problem({ connectors: [{ ...connector, callbackKeys: [{ id: 'c1', secret: 'short' }] }] }),
      /at least 16/,
    );
    assert.match(problem({ connectors: [connector, connector] }), /used twice/);
    assert.match(problem({ connectors: [{ ...connector, extra: 1 }] }), /unknown field extra/);
  });

  it('modes never meet: a connector serves one mode; a test and a live connector share neither gateway URL nor signing secret', () => {
    const env = { BANK_KEY: 'request-secret-0123456789', TEST_KEY: 'test-request-secret-0123456' };
    const problem = (file: unknown) => {
      const parsed = parseRailsFile(JSON.stringify(file), env);
      return parsed.ok ? 'ok' : parsed.problem;
    };
    assert.match(
      problem({ connectors: [{ ...connector, modes: ['test', 'live'] }] }),
      /banco-uno.*modes must be \["test"\] or \["live"\].*second connector/,
    );
    const testing = {
      ...connector,
      name: 'banco-uno-test',
      baseUrl: 'https://gw-test.example/',
      keys: [{ id: 't1', secretEnv: 'TEST_KEY' }],
      modes: ['test'],
    };
    assert.equal(problem({ connectors: [connector, testing] }), 'ok');
    assert.match(
      problem({ connectors: [connector, { ...testing, baseUrl: connector.baseUrl }] }),
      /banco-uno-test \(test\) and banco-uno \(live\) have the same baseUrl/,
    );
    assert.match(
      problem({ connectors: [connector, { ...testing, keys: [{ id: 'other-id', secretEnv: 'BANK_KEY' }] }] }),
      /banco-uno-test \(test\) and banco-uno \(live\) sign with the same secret \(key other-id\)/,
    );
  });

  it('RAILS_FILE: a bad file stops the start with a ConfigError naming it; none means no connectors', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rails-file-'));
    const file = path.join(dir, 'rails.json');
    writeFileSync(file, JSON.stringify({ connectors: [{ ...connector, modes: [] }] }));
    const connectorsOf = (env: Record<string, string>) => readRailsFile(loadConfig(env).railsFile, env);
    assert.throws(
      () => connectorsOf({ RAILS_FILE: file, BANK_KEY: 'request-secret-0123456789' }),
      (error: unknown) =>
        error instanceof ConfigError && /RAILS_FILE/.test(error.message) && /modes/.test(error.message),
    );
    assert.throws(() => connectorsOf({ RAILS_FILE: path.join(dir, 'missing.json') }), /RAILS_FILE.*ENOENT/s);
    assert.deepEqual(connectorsOf({}), []);
  });
});
