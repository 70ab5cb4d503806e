// Webhook delivery rules as pure functions: the retry schedule,
// the exact body bytes, the signature header, the signing secret format and which destination
// addresses a live-mode endpoint may never reach.
import { createHmac, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { signatureHeader } from './webhook-signature.ts';
import { assert } from './assert.ts';

export const EVENT_TYPES = ['payment.settled', 'payment.failed', 'payment.reversed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const EVENT_STATUSES = ['pending', 'published', 'dead'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

/** After this many failed attempts an event is `dead` (the failed queue). */
export const WEBHOOK_ATTEMPTS_MAX = 12;

/** Seconds to wait before attempt 2, 3, … 12, each multiplied by WEBHOOK_BACKOFF_SCALE. */
export const BACKOFF_WAITS_SECONDS = [5, 15, 45, 135, 405, 1215, 3645, 10935, 21600, 21600, 21600] as const;

/**
 * What happens after `attempt` failed: the wait before the next one, or `dead` once the twelfth
 * (or any later, manually requeued) attempt has failed.
 */
export function afterFailure(
  attempt: number,
  backoffScale: number,
): { status: 'pending'; waitMs: number } | { status: 'dead' } {
  assert(Number.isInteger(attempt) && attempt >= 1, `attempt ${attempt} is not a positive integer`);
  if (attempt >= WEBHOOK_ATTEMPTS_MAX) return { status: 'dead' };
  const waitSeconds = BACKOFF_WAITS_SECONDS[attempt - 1]!;
  return { status: 'pending', waitMs: Math.round(waitSeconds * 1000 * backoffScale) };
}

/**
 * The delivery body, built once per attempt as a string so that the signed bytes are exactly the
 * bytes sent. `payloadText` is the stored payload JSON, embedded verbatim (never re-serialized).
 */
export function deliveryBody(event: {
  id: bigint | string;
  eventType: string;
  attempt: number;
  payloadText: string;
}): string {
  assert(Number.isInteger(event.attempt) && event.attempt >= 1, `attempt ${event.attempt} is not a positive integer`);
  return `{"id":${JSON.stringify(String(event.id))},"eventType":${JSON.stringify(event.eventType)},"attempt":${event.attempt},"payload":${event.payloadText}}`;
}

export interface EndpointSecrets {
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

/** The secrets that sign at `now`: the current one, then the previous one while its overlap lasts. */
export function signingSecrets(endpoint: EndpointSecrets, now: Date): string[] {
  const secrets = [endpoint.secret];
  if (
    endpoint.previousSecret &&
    endpoint.previousSecretExpiresAt &&
    endpoint.previousSecretExpiresAt.getTime() > now.getTime()
  ) {
    secrets.push(endpoint.previousSecret);
  }
  return secrets;
}

/** The headers of one attempt. */
export function deliveryHeaders(input: {
  eventId: string;
  eventType: string;
  attempt: number;
  body: string;
  timestampMs: number;
  secrets: readonly string[];
}): Record<string, string> {
  assert(input.secrets.length !== 0, 'a delivery needs at least one signing secret');
  const timestamp = String(input.timestampMs);
  return {
    'content-type': 'application/json',
    'user-agent': 'Bolivar-Webhooks/1.0',
    'x-signature': signatureHeader(input.secrets, timestamp, input.body),
    'x-timestamp': timestamp,
    'x-event-type': input.eventType,
    'x-event-id': input.eventId,
    'x-delivery-attempt': String(input.attempt),
    ...standardWebhookHeaders(input.eventId, Math.floor(input.timestampMs / 1000), input.body, input.secrets),
  };
}

/**
 * The same delivery signed the Standard Webhooks way (standardwebhooks.com), so a receiver can use
 * any of its libraries: `webhook-signature` holds `v1,<base64 HMAC-SHA256>` of `<id>.<seconds>.<body>`
 * per secret (current first, space-separated), keyed by the base64 part of the `whsec_` secret.
 */
function standardWebhookHeaders(
  eventId: string,
  timestampS: number,
  body: string,
  secrets: readonly string[],
): Record<string, string> {
  const signed = `${eventId}.${timestampS}.${body}`;
  const signatures = secrets.map(
    (secret) =>
      `v1,${createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
        .update(signed, 'utf8')
        .digest('base64')}`,
  );
  return { 'webhook-id': eventId, 'webhook-timestamp': String(timestampS), 'webhook-signature': signatures.join(' ') };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_RANDOM_CHARS = 40;

/** `whsec_` + 40 base62 characters (≈238 bits), drawn without modulo bias. */
export function generateWebhookSecret(): string {
  let out = '';
  while (out.length < SECRET_RANDOM_CHARS) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && out.length < SECRET_RANDOM_CHARS) out += BASE62[byte % 62];
    }
  }
  return `whsec_${out}`;
}

// Destinations an endpoint may never reach: private networks, cloud metadata services and every
// address that is not plain public unicast (SSRF); in live mode this host too. ipaddr.js names the
// special ranges, including the IPv6 forms that carry an IPv4 address a router or the OS may unwrap
// (6to4, Teredo, NAT64, SIIT), so anything it does not call `unicast` is refused rather than listed
// by hand. Test mode may also use loopback (local receivers, the built-in sink), and nothing else
// that is not public: a test key's webhooks must not become a way into the private network.

// ipaddr.js calls every IPv6 address it has no name for `unicast`, which would let through the
// deprecated IPv4-compatible ::a.b.c.d (::7f00:1 is 127.0.0.1 behind an automatic tunnel) and
// unallocated space; public IPv6 addresses are only ever allocated from 2000::/3.
const GLOBAL_UNICAST_V6: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];

/** A canonical literal address (v4 or v6, brackets and zone stripped, IPv4-mapped unwrapped), else undefined. */
function canonicalAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  // Only the canonical literal forms: ipaddr.js also parses 127.1, 0x7f.0.0.1 and 2130706433, which
  // no resolver hands back and no URL keeps (WHATWG rewrites them to dotted decimal).
  if (!ipaddr.IPv4.isValidFourPartDecimal(bare) && !ipaddr.IPv6.isValid(bare)) return undefined;
  const parsed = ipaddr.parse(bare);
  return parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()
    ? (parsed as ipaddr.IPv6).toIPv4Address()
    : parsed;
}

/**
 * true when a live-mode delivery may connect to this IP address (a literal, v4 or v6).
 * @internal Exported for its tests, not used elsewhere.
 */
export function isPublicAddress(address: string): boolean {
  const parsed = canonicalAddress(address);
  if (parsed === undefined) return false;
  if (parsed.kind() === 'ipv6' && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)) return false;
  return parsed.range() === 'unicast';
}

/** This host: 127.0.0.0/8 and ::1 (an IPv4-mapped ::ffff:127.x too). */
function isLoopbackAddress(address: string): boolean {
  return canonicalAddress(address)?.range() === 'loopback';
}

/** true when a delivery of this mode may connect to this IP address: public, or loopback in test mode. */
export function mayReachAddress(mode: 'test' | 'live', address: string): boolean {
  return isPublicAddress(address) || (mode === 'test' && isLoopbackAddress(address));
}

/** What a refused address is, as the admin API and the delivery log say it. */
export function forbiddenAddressText(mode: 'test' | 'live'): string {
  return mode === 'live'
    ? 'a loopback, private, link-local or metadata address'
    : 'a private, link-local or metadata address (test mode allows loopback and public addresses only)';
}

// Names that are internal by definition, whatever a resolver says.
const INTERNAL_NAMES =
  /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback|metadata|metadata\.google\.internal|instance-data)$|\.(localhost|local|internal|localdomain|home\.arpa)$/i;
// Cloud metadata services by name: never a destination, in either mode.
const METADATA_NAMES = /^(metadata|metadata\.google\.internal|instance-data|instance-data\.ec2\.internal)$/i;

export type EndpointUrlCheck = { ok: true; url: URL } | { ok: false; message: string };

/**
 * The checks that need no network: http or https only, a host, no fragment; no literal address a
 * delivery of this mode may not reach, no metadata service by name; in live mode no internal name.
 * (Host names are also resolved, at configuration time and again at every delivery: see
 * src/webhooks/destination.ts.)
 */
export function checkEndpointUrl(raw: string, mode: 'test' | 'live'): EndpointUrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: 'must be an absolute http:// or https:// URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { ok: false, message: 'must use http:// or https://' };
  if (!url.hostname) return { ok: false, message: 'must name a host' };
  if (url.hash) return { ok: false, message: 'must not contain a #fragment' };
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (isIP(host) !== 0) {
    if (!mayReachAddress(mode, host))
      return {
        ok: false,
        message: `must not point at ${forbiddenAddressText(mode)}${mode === 'live' ? ' in live mode' : ''}`,
      };
  } else if (METADATA_NAMES.test(host)) {
    return { ok: false, message: 'must not name a cloud metadata service' };
  } else if (mode === 'live' && (INTERNAL_NAMES.test(host) || !host.includes('.'))) {
    return { ok: false, message: 'must be a public host name in live mode (not localhost or an internal name)' };
  }
  return { ok: true, url };
}
