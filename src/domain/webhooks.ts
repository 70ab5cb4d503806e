// Webhook delivery rules as pure functions: the retry schedule,
// the exact body bytes, the signature header, the signing secret format and which destination
// addresses a live-mode endpoint may never reach.
import { randomBytes } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { signatureHeader } from '../webhooks/verify.ts';

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
export function afterFailure(attempt: number, backoffScale: number): { status: 'pending'; waitMs: number } | { status: 'dead' } {
  if (!Number.isInteger(attempt) || attempt < 1) throw new Error(`invariant: attempt ${attempt} is not a positive integer`);
  if (attempt >= WEBHOOK_ATTEMPTS_MAX) return { status: 'dead' };
  const waitSeconds = BACKOFF_WAITS_SECONDS[attempt - 1]!;
  return { status: 'pending', waitMs: Math.round(waitSeconds * 1000 * backoffScale) };
}

/**
 * The delivery body, built once per attempt as a string so that the signed bytes are exactly the
 * bytes sent. `payloadText` is the stored payload JSON, embedded verbatim (never re-serialized).
 */
export function deliveryBody(event: { id: bigint | string; eventType: string; attempt: number; payloadText: string }): string {
  if (!Number.isInteger(event.attempt) || event.attempt < 1) throw new Error(`invariant: attempt ${event.attempt} is not a positive integer`);
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
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt.getTime() > now.getTime()) {
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
  if (input.secrets.length === 0) throw new Error('invariant: a delivery needs at least one signing secret');
  const timestamp = String(input.timestampMs);
  return {
    'content-type': 'application/json',
    'user-agent': 'Bolivar-Webhooks/1.0',
    'x-signature': signatureHeader(input.secrets, timestamp, input.body),
    'x-timestamp': timestamp,
    'x-event-type': input.eventType,
    'x-event-id': input.eventId,
    'x-delivery-attempt': String(input.attempt),
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_RANDOM_CHARS = 40;
export const WEBHOOK_SECRET_PATTERN = /^whsec_[0-9A-Za-z]{32,}$/;

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

// Destinations a live-mode endpoint may never reach: this host, private networks and cloud metadata
// services (SSRF). Test mode may use loopback (local receivers, the built-in sink).
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", 0.0.0.0
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (also Alibaba's metadata 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (AWS/GCP/Azure metadata 169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (incl. 192.0.0.192 Oracle metadata)
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (incl. AWS fd00:ec2::254 metadata)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, compatible ::a.b.c.d). */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::|::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::|::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  // Fully written forms such as 0:0:0:0:0:ffff:7f00:1.
  const full = /^0{1,4}:0{1,4}:0{1,4}:0{1,4}:0{1,4}:ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (full) {
    const high = parseInt(full[1]!, 16);
    const low = parseInt(full[2]!, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return undefined;
}

/** true when a live-mode delivery may connect to this IP address (a literal, v4 or v6). */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return !FORBIDDEN.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4 !== undefined && isIP(v4) === 4 && FORBIDDEN.check(v4, 'ipv4')) return false;
    return !FORBIDDEN.check(bare, 'ipv6');
  }
  return false;
}

// Names that are internal by definition, whatever a resolver says.
const INTERNAL_NAMES = /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback|metadata|metadata\.google\.internal|instance-data)$|\.(localhost|local|internal|localdomain|home\.arpa)$/i;

export type EndpointUrlCheck = { ok: true; url: URL } | { ok: false; message: string };

/**
 * The checks that need no network: http or https only, a host, no fragment; in live mode no
 * internal name and no literal address outside the public internet. (Live-mode host names are also
 * resolved, at configuration time and again at every delivery: see src/webhooks/destination.ts.)
 */
export function checkEndpointUrl(raw: string, mode: 'test' | 'live'): EndpointUrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: 'must be an absolute http:// or https:// URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, message: 'must use http:// or https://' };
  if (!url.hostname) return { ok: false, message: 'must name a host' };
  if (url.hash) return { ok: false, message: 'must not contain a #fragment' };
  if (mode === 'live') {
    const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
    if (isIP(host) !== 0) {
      if (!isPublicAddress(host)) return { ok: false, message: 'must not point at a loopback, private, link-local or metadata address in live mode' };
    } else if (INTERNAL_NAMES.test(host) || !host.includes('.')) {
      return { ok: false, message: 'must be a public host name in live mode (not localhost or an internal name)' };
    }
  }
  return { ok: true, url };
}
