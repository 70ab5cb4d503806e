// How requests to a bank gateway, and the gateway's callbacks to us, are signed. Every message carries
//
//   x-bank-key-id:    the id of the key that signed it
//   x-bank-timestamp: milliseconds since the epoch, when it was signed
//   x-bank-signature: hex HMAC-SHA256(secret of that key, "<timestamp>.<raw body>")
//
// A GET signs the empty body. Keys rotate by id: the signer uses its current key, the verifier accepts
// every key it is given (the current and the previous one during a rotation), chosen by the key id, so a
// rotation needs no flag day.
import { createHmac, timingSafeEqual } from 'node:crypto';

const RAIL_KEY_ID_HEADER = 'x-bank-key-id';
const RAIL_TIMESTAMP_HEADER = 'x-bank-timestamp';
const RAIL_SIGNATURE_HEADER = 'x-bank-signature';

/**
 * ± 5 minutes: a message signed further from the receiver's clock is refused (a replay, or a clock gone wrong).
 * @internal Exported for its tests, not used elsewhere.
 */
export const RAIL_SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;

/** A signing key: its id travels in the message, the secret never does. */
export interface RailKey {
  id: string;
  secret: string;
}

/**
 * The hex HMAC-SHA256 of `<timestamp>.<raw body>`.
 * @internal Exported for its tests, not used elsewhere.
 */
export function railSignature(secret: string, timestamp: string, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(rawBody).digest('hex');
}

/** The three headers that sign `rawBody` with `key` at `nowMs`. */
export function signRailMessage(key: RailKey, rawBody: string | Uint8Array, nowMs: number): Record<string, string> {
  const timestamp = String(Math.trunc(nowMs));
  return {
    [RAIL_KEY_ID_HEADER]: key.id,
    [RAIL_TIMESTAMP_HEADER]: timestamp,
    [RAIL_SIGNATURE_HEADER]: railSignature(key.secret, timestamp, rawBody),
  };
}

export type RailSignatureFailure =
  'missing_headers' | 'unknown_key' | 'invalid_timestamp' | 'timestamp_outside_tolerance' | 'signature_mismatch';

function single(headers: Record<string, unknown>, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/**
 * Checks a received message: a known key id, a timestamp within RAIL_SIGNATURE_TOLERANCE_MS of
 * `nowMs`, and that key's signature over exactly these bytes (compared in constant time). `headers`
 * as Node gives them (lower-case names). Never throws for bad input.
 */
export function verifyRailMessage(input: {
  keys: readonly RailKey[];
  headers: Record<string, unknown>;
  rawBody: Uint8Array;
  nowMs: number;
}): { ok: true; keyId: string } | { ok: false; reason: RailSignatureFailure } {
  const keyId = single(input.headers, RAIL_KEY_ID_HEADER);
  const timestamp = single(input.headers, RAIL_TIMESTAMP_HEADER);
  const offered = single(input.headers, RAIL_SIGNATURE_HEADER);
  if (!keyId || !timestamp || !offered) return { ok: false, reason: 'missing_headers' };
  const key = input.keys.find((candidate) => candidate.id === keyId && candidate.secret.length > 0);
  if (!key) return { ok: false, reason: 'unknown_key' };
  if (!/^[0-9]{1,16}$/.test(timestamp)) return { ok: false, reason: 'invalid_timestamp' };
  if (Math.abs(input.nowMs - Number(timestamp)) > RAIL_SIGNATURE_TOLERANCE_MS)
    return { ok: false, reason: 'timestamp_outside_tolerance' };
  const expected = Buffer.from(railSignature(key.secret, timestamp, input.rawBody), 'utf8');
  const actual = Buffer.from(offered.toLowerCase(), 'utf8');
  // Lengths are public (always 64 hex characters); the content is compared in constant time.
  const matches = actual.length === expected.length && timingSafeEqual(actual, expected);
  return matches ? { ok: true, keyId } : { ok: false, reason: 'signature_mismatch' };
}
