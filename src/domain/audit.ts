// The audit trail's vocabulary and its one redaction rule. What an audit row may hold is decided
// here, once, for every action: a row is written by recordAudit (db/repositories/audit.ts), which
// passes every recorded field through `redactForAudit` whatever the caller gave it.

/** Every action the trail records, as a stable dotted name (`<what>.<verb>`). */
import type { Mode } from './partition.ts';
export const AUDIT_ACTIONS = [
  'tenant.create',
  'tenant.update',
  'tenant.close',
  'api_key.issue',
  'api_key.revoke',
  'funding.create',
  'webhook_endpoint.set',
  'webhook_endpoint.rotate_secret',
  'default_sender.set',
  'customer_sender.set',
  'rate.set',
  'limit_rule.create',
  'limit_rule.delete',
  'event.retry',
  'event.retry_dead',
  'payment.recheck',
  'sandbox.simulate',
  'anomaly.resolve',
  'reconciliation.start',
  'rail_statement.import',
  'rail_statement.pull',
  'audit.archive',
  'rail.update',
  'rail_route.create',
  'rail_route.delete',
] as const;
type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What an action was done to. */
export const AUDIT_TARGET_TYPES = [
  'tenant',
  'api_key',
  'funding',
  'webhook_endpoint',
  'program',
  'customer',
  'rate',
  'limit_rule',
  'event',
  'payment',
  'anomaly',
  'reconciliation',
  'rail_statement',
  'rail',
  'rail_route',
  'audit_archive',
] as const;
type AuditTargetType = (typeof AUDIT_TARGET_TYPES)[number];

/**
 * The service itself, acting on its own schedule (the daily statement pull, the audit archive): no key,
 * no tenant, no request. The nil UUIDs say so wherever an actor is shown.
 */
export const SERVICE_ACTOR: AuditActor = {
  keyId: '00000000-0000-0000-0000-000000000000',
  tenantId: '00000000-0000-0000-0000-000000000000',
  requestId: null,
};

/** Who acted: the authenticated key, its tenant (the platform's for the platform key), the request. */
export interface AuditActor {
  keyId: string;
  tenantId: string;
  requestId: string | null;
}

interface AuditTarget {
  type: AuditTargetType;
  id: string;
  /** The tenant and mode the target belongs to, when it belongs to one. */
  tenantId?: string | null;
  mode?: Mode | null;
}

/** One action as recorded. `before`: what the changed fields held (null: nothing existed); `after`: what they hold now. */
export interface AuditEntry {
  actor: AuditActor;
  action: AuditAction;
  target: AuditTarget;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/**
 * What a redacted secret reads as.
 * @internal Exported for its tests, not used elsewhere.
 */
export const REDACTED = '[redacted]';
/** Nesting kept in a recorded field; deeper values are cut (no admin action nests this deep). */
const AUDIT_DEPTH_MAX = 6;
/** Characters kept of one recorded string. */
const AUDIT_TEXT_MAX = 2000;
/** Digits of an account number or phone left readable: enough to tell two apart, never to use one. */
const VISIBLE_DIGITS = 4;

/** Fields that hold a secret, wherever they appear (an object key or a URL query parameter): never recorded. */
const SECRET_NAMES = new Set([
  'key',
  'apikey',
  'api_key',
  'keyhash',
  'key_hash',
  'hash',
  'secret',
  'previoussecret',
  'previous_secret',
  'signingsecret',
  'password',
  'token',
  'authorization',
  'cookie',
]);
/** Fields that hold an account number or a phone: only their last digits are recorded. */
const MASKED_NAMES = new Set(['accountnumber', 'account_number', 'phone']);
/** A key or a webhook signing secret, by its shape, whatever field it hides in. */
const SECRET_SHAPE = /(?:bsk_(?:test|live|platform)_|whsec_)[A-Za-z0-9+/=_-]+/g;
/** Credentials in a URL (`https://user:password@host`). */
const URL_CREDENTIALS = /^(https?:\/\/)[^/?#@\s]*@/i;

const isSecretName = (name: string) => SECRET_NAMES.has(name.toLowerCase());
const isMaskedName = (name: string) => MASKED_NAMES.has(name.toLowerCase());

/**
 * The last digits of an account number or phone, the rest hidden: `…4567`.
 * @internal Exported for its tests, not used elsewhere.
 */
export function maskDigits(value: string): string {
  const digits = value.replace(/[^0-9]/g, '');
  return `…${digits.slice(-VISIBLE_DIGITS)}`;
}

/** A string with every key or secret it contains, and any credentials or secret query parameter of a URL, redacted. */
export function redactText(text: string): string {
  let out = text.length > AUDIT_TEXT_MAX ? `${text.slice(0, AUDIT_TEXT_MAX)}…` : text;
  out = out.replace(SECRET_SHAPE, REDACTED);
  if (/^https?:\/\//i.test(out)) out = redactUrl(out);
  return out;
}

function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text.replace(URL_CREDENTIALS, `$1${REDACTED}@`);
  }
  const hadCredentials = url.username !== '' || url.password !== '';
  url.username = '';
  url.password = '';
  for (const name of [...url.searchParams.keys()]) if (isSecretName(name)) url.searchParams.set(name, REDACTED);
  return hadCredentials ? url.href.replace(/^(https?:\/\/)/i, `$1${REDACTED}@`) : url.href;
}

/**
 * The one rule for what an audit row may hold. Recursively: a field named like a secret is replaced
 * by `[redacted]`; an account number or phone keeps its last 4 digits; any string is cleared of keys
 * and signing secrets (by their shape) and of URL credentials; bigints become decimal strings and
 * dates ISO-8601. Never throws; the input is not changed.
 * @internal Exported for its tests, not used elsewhere.
 */
export function redactForAudit(value: unknown, depth = 0): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return redactText(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (depth >= AUDIT_DEPTH_MAX) return REDACTED;
  if (Array.isArray(value)) return value.map((item) => redactForAudit(item, depth + 1));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [name, field] of Object.entries(value as Record<string, unknown>)) {
      if (field === undefined) continue;
      if (isSecretName(name)) out[name] = REDACTED;
      else if (isMaskedName(name) && typeof field === 'string') out[name] = maskDigits(field);
      else out[name] = redactForAudit(field, depth + 1);
    }
    return out;
  }
  return REDACTED;
}

/** A recorded field set, redacted; null stays null. */
export function redactedFields(fields: Record<string, unknown> | null | undefined): Record<string, unknown> | null {
  if (fields === null || fields === undefined) return null;
  return redactForAudit(fields) as Record<string, unknown>;
}

/** The fields `names` of two snapshots: what an update changed, before and after. */
export function changedFields<T extends object>(
  before: T,
  after: T,
  names: Iterable<keyof T>,
): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const was: Record<string, unknown> = {};
  const now: Record<string, unknown> = {};
  for (const name of names) {
    was[name as string] = before[name];
    now[name as string] = after[name];
  }
  return { before: was, after: now };
}
