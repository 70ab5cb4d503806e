import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerForStoredKey, isStoredStatus, type StoredKey } from '../../src/domain/idempotency.ts';

const NOW = new Date('2026-11-23T12:00:00Z');
const later = (ms: number) => new Date(NOW.getTime() + ms);

function stored(overrides: Partial<StoredKey> = {}): StoredKey {
  return {
    fingerprint: 'f',
    status: 'completed',
    paymentId: null,
    responseStatus: 201,
    responseBody: '{"id":1}',
    lockedUntil: null,
    expiresAt: later(60_000),
    ...overrides,
  };
}

describe('what a stored Idempotency-Key answers', () => {
  it('replays a completed answer, refuses another body, and forgets a key past its TTL', () => {
    assert.deepEqual(answerForStoredKey(stored(), 'f', NOW), { kind: 'replay', status: 201, body: '{"id":1}' });
    assert.deepEqual(answerForStoredKey(stored(), 'other', NOW), { kind: 'mismatch' });
    assert.deepEqual(answerForStoredKey(stored({ expiresAt: NOW }), 'other', NOW), { kind: 'absent' });
  });

  it('a payout committed under the key: in progress while its request may still answer, then the payment as it stands', () => {
    const committed = stored({
      status: 'in_progress',
      paymentId: 'p1',
      responseStatus: null,
      responseBody: null,
      lockedUntil: later(5_000),
    });
    assert.deepEqual(answerForStoredKey(committed, 'f', NOW), { kind: 'in_progress' });
    assert.deepEqual(answerForStoredKey(committed, 'f', later(5_000)), { kind: 'payment', paymentId: 'p1' });
    assert.deepEqual(answerForStoredKey(committed, 'other', later(5_000)), { kind: 'mismatch' });
  });

  it('a generic claim still running is in progress, whatever its lease says (its holder may finish)', () => {
    const claimed = stored({ status: 'in_progress', responseStatus: null, responseBody: null, lockedUntil: later(-1) });
    assert.deepEqual(answerForStoredKey(claimed, 'f', NOW), { kind: 'in_progress' });
  });

  it('stores business answers; never rejections before any work, nor a 5xx', () => {
    for (const status of [200, 201, 409, 422]) assert.equal(isStoredStatus(status), true, String(status));
    for (const status of [400, 401, 403, 404, 413, 415, 429, 500, 503])
      assert.equal(isStoredStatus(status), false, String(status));
  });
});
