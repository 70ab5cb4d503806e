import { assert } from './assert.ts';
// What an Idempotency-Key already found in the database means for a new request with that key.
// Pure: the writers and the HTTP layer both ask it, so a key is answered the same way whoever finds it.

/**
 * Answers that are not stored under the key: rejections before any work (bad request, key, scope,
 * unknown reference, size, media type, rate limit). The same key may be used again, corrected.
 */
const NOT_STORED_STATUSES = new Set([400, 401, 403, 404, 413, 415, 429]);

/** Whether an answer with this status is kept under its key (a 5xx never is: it frees the key). */
export function isStoredStatus(status: number): boolean {
  return status < 500 && !NOT_STORED_STATUSES.has(status);
}

export interface StoredKey {
  fingerprint: string;
  status: 'in_progress' | 'completed';
  /** The payment a payout committed under this key (payout keys only). */
  paymentId: string | null;
  responseStatus: number | null;
  responseBody: string | null;
  /** While the request that holds the key may still answer (its lease). */
  lockedUntil: Date | null;
  expiresAt: Date;
}

export type KeyAnswer =
  /** Past its TTL: the key is free again. */
  | { kind: 'absent' }
  /** The key was used for a different request: 409 idempotency_key_reused. */
  | { kind: 'mismatch' }
  /** The first request's answer, replayed byte for byte. */
  | { kind: 'replay'; status: number; body: string }
  /** The first request is still running (within its lease): 409 idempotency_request_in_progress. */
  | { kind: 'in_progress' }
  /**
   * A payout committed this payment under the key, but its answer was never recorded (the process
   * died, or the connection was lost, after the commit): answer with the payment as it stands.
   */
  | { kind: 'payment'; paymentId: string };

export function answerForStoredKey(stored: StoredKey, fingerprint: string, now: Date): KeyAnswer {
  if (stored.expiresAt.getTime() <= now.getTime()) return { kind: 'absent' };
  if (stored.fingerprint !== fingerprint) return { kind: 'mismatch' };
  if (stored.status === 'completed') {
    assert(stored.responseStatus !== null && stored.responseBody !== null, 'a completed key has a stored response');
    return { kind: 'replay', status: stored.responseStatus, body: stored.responseBody };
  }
  const leaseOver = stored.lockedUntil !== null && stored.lockedUntil.getTime() <= now.getTime();
  if (stored.paymentId !== null && leaseOver) return { kind: 'payment', paymentId: stored.paymentId };
  return { kind: 'in_progress' };
}
