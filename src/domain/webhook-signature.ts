// How a webhook delivery is signed, and how the sandbox sink checks a signature. Every delivery carries
//
//   x-timestamp: <milliseconds since the epoch>
//   x-signature: sha256=<hex HMAC-SHA256(secret, "<x-timestamp>.<raw body>")>[,sha256=<…>]
//
// During a secret rotation the header holds two signatures (new secret first). The integrators'
// verifier is the SDK's (sdk/src/webhooks.ts), a separate package that cannot import the service;
// test/unit/webhooks-verify.test.ts holds the two to the same bytes.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_SCHEME = 'sha256';

/** ± 5 minutes: the receiver's anti-replay window. */
const TOLERANCE_MS = 5 * 60 * 1000;

function bytesOf(body: string | Uint8Array): Buffer {
  return typeof body === 'string'
    ? Buffer.from(body, 'utf8')
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * The hex HMAC-SHA256 of `<timestamp>.<raw body>`: what `sha256=` carries.
 * @internal Exported for its tests, not used elsewhere.
 */
export function computeSignature(secret: string, timestamp: string | number, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(bytesOf(rawBody)).digest('hex');
}

/** The `x-signature` value for these secrets, in order (the current secret first). */
export function signatureHeader(
  secrets: string | readonly string[],
  timestamp: string | number,
  rawBody: string | Uint8Array,
): string {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  return list.map((secret) => `${SIGNATURE_SCHEME}=${computeSignature(secret, timestamp, rawBody)}`).join(',');
}

export type SignatureFailure =
  | 'missing_secret'
  | 'missing_timestamp'
  | 'invalid_timestamp'
  | 'timestamp_outside_tolerance'
  | 'missing_signature'
  | 'signature_mismatch';

/** The value of a received header as one string (repeated headers joined as the SDK joins them). */
function headerText(headers: Record<string, unknown>, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value.join(',');
  return value === undefined ? undefined : String(value);
}

/** The `sha256=` signatures the header offers, lower-cased hex. */
function offeredSignatures(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`${SIGNATURE_SCHEME}=`))
    .map((part) => part.slice(SIGNATURE_SCHEME.length + 1).toLowerCase());
}

/** true when one offered signature is one secret's over these bytes; compared in constant time. */
function anySignatureMatches(
  secrets: readonly string[],
  timestamp: string,
  offered: readonly string[],
  body: Buffer,
): boolean {
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(computeSignature(secret, timestamp, body), 'utf8');
    for (const candidate of offered) {
      const actual = Buffer.from(candidate, 'utf8');
      // Lengths are public (always 64 hex characters); the content is compared in constant time.
      if (actual.length === expected.length && timingSafeEqual(actual, expected)) matched = true;
    }
  }
  return matched;
}

/**
 * Checks a received delivery as a receiver must: an `x-timestamp` within ±5 minutes of `nowMs`, then
 * at least one `sha256=` signature made with one of the secrets over exactly these bytes. `headers`
 * are as Node gives them (lower-case names). Never throws for bad input.
 */
export function verifySignature(input: {
  secrets: readonly string[];
  headers: Record<string, unknown>;
  rawBody: Uint8Array;
  nowMs: number;
}): { ok: true; timestampMs: number } | { ok: false; reason: SignatureFailure } {
  const secrets = input.secrets.filter((s) => typeof s === 'string' && s.length > 0);
  if (secrets.length === 0) return { ok: false, reason: 'missing_secret' };
  const timestamp = headerText(input.headers, 'x-timestamp')?.trim();
  if (!timestamp) return { ok: false, reason: 'missing_timestamp' };
  if (!/^[0-9]{1,16}$/.test(timestamp)) return { ok: false, reason: 'invalid_timestamp' };
  const timestampMs = Number(timestamp);
  if (Math.abs(input.nowMs - timestampMs) > TOLERANCE_MS) return { ok: false, reason: 'timestamp_outside_tolerance' };
  const offered = offeredSignatures(headerText(input.headers, 'x-signature'));
  if (offered.length === 0) return { ok: false, reason: 'missing_signature' };
  return anySignatureMatches(secrets, timestamp, offered, bytesOf(input.rawBody))
    ? { ok: true, timestampMs }
    : { ok: false, reason: 'signature_mismatch' };
}
