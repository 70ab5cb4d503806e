// Webhook signature verification for integrators.
//
// Dependency-free on purpose (node:crypto only): copy this file into a receiver, or import it as
// `bolivar-disbursement-service/webhooks`. Every delivery carries
//
//   x-timestamp: <milliseconds since the epoch>
//   x-signature: sha256=<hex HMAC-SHA256(secret, "<x-timestamp>.<raw body>")>[,sha256=<…>]
//
// During a secret rotation the header holds two signatures (new secret first); any match is enough.
// Verify over the RAW bytes of the body as received, never over a re-serialized object.

import { createHmac, timingSafeEqual } from 'node:crypto';

/** ± 5 minutes: the receiver's anti-replay window. */
export const DEFAULT_TOLERANCE_MS = 5 * 60 * 1000;

export const SIGNATURE_SCHEME = 'sha256';

/** Header values as Node's `IncomingMessage.headers` gives them, or a fetch `Headers` object. */
export type WebhookHeaders =
  | Record<string, string | string[] | number | undefined>
  | { get(name: string): string | null };

export interface VerifyWebhookOptions {
  /** The endpoint's signing secret (`whsec_…`), or several (e.g. new and old around a rotation). */
  secret: string | readonly string[];
  /** The request headers; names are matched case-insensitively. */
  headers: WebhookHeaders;
  /** The body exactly as received: a string (UTF-8) or the raw bytes. */
  rawBody: string | Uint8Array;
  /** Largest accepted distance between x-timestamp and now, in ms (default 300000 = 5 minutes). */
  toleranceMs?: number;
  /** "Now" in ms since the epoch (default `Date.now()`); for tests and replays of stored requests. */
  nowMs?: number;
}

export type VerifyFailure =
  | 'missing_secret'
  | 'missing_timestamp'
  | 'invalid_timestamp'
  | 'timestamp_outside_tolerance'
  | 'missing_signature'
  | 'signature_mismatch';

export type VerifyWebhookResult =
  | { ok: true; timestampMs: number; eventId: string | undefined }
  | { ok: false; reason: VerifyFailure };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | number | undefined>;
  let value = record[name];
  if (value === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : record[key];
  }
  if (Array.isArray(value)) return value.join(',');
  return value === undefined ? undefined : String(value);
}

function bytesOf(body: string | Uint8Array): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** The hex HMAC-SHA256 of `<timestamp>.<raw body>`: what `sha256=` carries. */
export function computeSignature(secret: string, timestamp: string | number, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(bytesOf(rawBody)).digest('hex');
}

/**
 * The `x-signature` value for these secrets, in order (the current secret first): sending side, and
 * handy for a receiver's own tests.
 */
export function signatureHeader(secrets: string | readonly string[], timestamp: string | number, rawBody: string | Uint8Array): string {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  return list.map((secret) => `${SIGNATURE_SCHEME}=${computeSignature(secret, timestamp, rawBody)}`).join(',');
}

/**
 * Checks a delivery: fresh timestamp, then at least one `sha256=` signature made with one of the
 * secrets over exactly these bytes. Never throws for bad input; returns `{ok: false, reason}`, so a
 * receiver answers 401 and logs the reason. Comparisons are constant-time.
 */
export function verifyWebhook(options: VerifyWebhookOptions): VerifyWebhookResult {
  const secrets = (typeof options.secret === 'string' ? [options.secret] : [...options.secret]).filter((s) => typeof s === 'string' && s.length > 0);
  if (secrets.length === 0) return { ok: false, reason: 'missing_secret' };

  const timestamp = header(options.headers, 'x-timestamp')?.trim();
  if (!timestamp) return { ok: false, reason: 'missing_timestamp' };
  if (!/^[0-9]{1,16}$/.test(timestamp)) return { ok: false, reason: 'invalid_timestamp' };
  const timestampMs = Number(timestamp);
  const toleranceMs = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;
  const nowMs = options.nowMs ?? Date.now();
  if (Math.abs(nowMs - timestampMs) > toleranceMs) return { ok: false, reason: 'timestamp_outside_tolerance' };

  const given = (header(options.headers, 'x-signature') ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`${SIGNATURE_SCHEME}=`))
    .map((part) => part.slice(SIGNATURE_SCHEME.length + 1).toLowerCase());
  if (given.length === 0) return { ok: false, reason: 'missing_signature' };

  const body = bytesOf(options.rawBody);
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(computeSignature(secret, timestamp, body), 'utf8');
    for (const candidate of given) {
      const actual = Buffer.from(candidate, 'utf8');
      // Lengths are public (always 64 hex characters); the content is compared in constant time.
      if (actual.length === expected.length && timingSafeEqual(actual, expected)) matched = true;
    }
  }
  if (!matched) return { ok: false, reason: 'signature_mismatch' };
  return { ok: true, timestampMs, eventId: header(options.headers, 'x-event-id') };
}
