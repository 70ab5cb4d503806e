// Verifying the webhooks the service sends. Every delivery carries
//
//   x-timestamp: <milliseconds since the epoch>
//   x-signature: sha256=<hex HMAC-SHA256(secret, "<x-timestamp>.<raw body>")>[,sha256=<…>]
//
// During a secret rotation the header holds two signatures (new secret first); any match is enough.
// Verify over the RAW bytes of the body as received, never over a re-serialized object.
// The event id comes from the signed body (`id`), never from the `x-event-id` header, which no
// signature covers: a receiver that deduplicates on it cannot be made to handle a copy twice.
// node:crypto only, so `@bolivar/sdk/webhooks` can be imported by a receiver that needs nothing else.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PaymentFailedEvent, PaymentReversedEvent, PaymentSettledEvent } from './generated/index.js';

/** ± 5 minutes: the receiver's anti-replay window. */
export const DEFAULT_TOLERANCE_MS = 5 * 60 * 1000;

export const SIGNATURE_SCHEME = 'sha256';

/** Header values as Node's `IncomingMessage.headers` gives them, or a fetch `Headers` object. */
export type WebhookHeaders =
  Record<string, string | string[] | number | undefined> | { get(name: string): string | null };

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
  | 'signature_mismatch'
  /** Signed, but not a delivery body (`{id, eventType, payload}`): not sent by the service. */
  | 'invalid_body';

export type VerifyWebhookResult =
  /** `eventId` is the `id` of the signed body: deduplicate on it. */
  { ok: true; timestampMs: number; eventId: string } | { ok: false; reason: VerifyFailure };

/** The body of a delivery, by `eventType`: `switch (event.eventType)` narrows `payload`. */
export type WebhookEvent = PaymentSettledEvent | PaymentFailedEvent | PaymentReversedEvent;
export type WebhookEventType = WebhookEvent['eventType'];
export type { PaymentFailedEvent, PaymentReversedEvent, PaymentSettledEvent };

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
  return typeof body === 'string'
    ? Buffer.from(body, 'utf8')
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** The hex HMAC-SHA256 of `<timestamp>.<raw body>`: what `sha256=` carries. */
export function computeSignature(secret: string, timestamp: string | number, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(bytesOf(rawBody)).digest('hex');
}

/** The `x-signature` value for these secrets, in order: for a receiver's own tests of its endpoint. */
export function signatureHeader(
  secrets: string | readonly string[],
  timestamp: string | number,
  rawBody: string | Uint8Array,
): string {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  return list.map((secret) => `${SIGNATURE_SCHEME}=${computeSignature(secret, timestamp, rawBody)}`).join(',');
}

/** The verified timestamp, or why the headers and bytes do not verify. */
function checkSignature(
  options: VerifyWebhookOptions,
  body: Buffer,
): { ok: true; timestampMs: number } | { ok: false; reason: VerifyFailure } {
  const secrets = (typeof options.secret === 'string' ? [options.secret] : [...options.secret]).filter(
    (s) => typeof s === 'string' && s.length > 0,
  );
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

  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(computeSignature(secret, timestamp, body), 'utf8');
    for (const candidate of given) {
      const actual = Buffer.from(candidate, 'utf8');
      // Lengths are public (always 64 hex characters); the content is compared in constant time.
      if (actual.length === expected.length && timingSafeEqual(actual, expected)) matched = true;
    }
  }
  return matched ? { ok: true, timestampMs } : { ok: false, reason: 'signature_mismatch' };
}

/** The delivery body `{id, eventType, payload, …}` of verified bytes, or undefined when it is not one. */
function parseEvent(body: Buffer): WebhookEvent | undefined {
  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const fields = event as { id?: unknown; eventType?: unknown; payload?: unknown } | null;
  if (
    typeof fields !== 'object' ||
    fields === null ||
    typeof fields.id !== 'string' ||
    fields.id === '' ||
    typeof fields.eventType !== 'string' ||
    typeof fields.payload !== 'object' ||
    fields.payload === null
  ) {
    return undefined;
  }
  return event as WebhookEvent;
}

type Verified = { ok: true; timestampMs: number; event: WebhookEvent } | { ok: false; reason: VerifyFailure };

function verifyDelivery(options: VerifyWebhookOptions): Verified {
  const body = bytesOf(options.rawBody);
  const check = checkSignature(options, body);
  if (!check.ok) return check;
  // Parsed only once the bytes are known to be ours.
  const event = parseEvent(body);
  return event === undefined
    ? { ok: false, reason: 'invalid_body' }
    : { ok: true, timestampMs: check.timestampMs, event };
}

/**
 * Checks a delivery: fresh timestamp, then at least one `sha256=` signature made with one of the
 * secrets over exactly these bytes, then a delivery body. Never throws for bad input; returns
 * `{ok: false, reason}`, so a receiver answers 401 and logs the reason. Comparisons are
 * constant-time. `eventId` is the `id` of the signed body (the `x-event-id` header is not signed and
 * is not read): deduplicate on it.
 */
export function verifyWebhook(options: VerifyWebhookOptions): VerifyWebhookResult {
  const verified = verifyDelivery(options);
  return verified.ok ? { ok: true, timestampMs: verified.timestampMs, eventId: verified.event.id } : verified;
}

/** Thrown by `constructEvent`: `reason` says why (answer 401 and log it). */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(readonly reason: VerifyFailure) {
    super(`webhook delivery refused: ${reason}`);
  }
}

/**
 * The verified, parsed event of a delivery, or a `WebhookVerificationError`. The body is parsed only
 * once its signature and timestamp check out. An event type newer than this SDK is returned as
 * received: keep a `default` branch in a `switch` on `eventType` (and answer 2xx).
 */
export function constructEvent(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: { toleranceMs?: number; nowMs?: number } = {},
): WebhookEvent {
  const verified = verifyDelivery({ secret, headers, rawBody, ...options });
  if (!verified.ok) throw new WebhookVerificationError(verified.reason);
  return verified.event;
}
