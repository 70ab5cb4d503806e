// A gateway callback, from the bytes that arrived to what the reaper applies: verified (key id,
// timestamp window, signature), read (a callback we cannot read is refused, not guessed at), and turned
// into a RailNotification when it says something final about a transfer.
import { verifyRailMessage, type RailKey, type RailSignatureFailure } from '../../domain/rail-signature.ts';
import type { RailNotification } from '../rail.ts';
import type { GatewayCallback } from './protocol.ts';
import { echoOf, railStatusOf } from './status-map.ts';

/** A callback's event id: printable ASCII (0x21–0x7E, no space), at most 128 characters (docs/http-bank.md). */
const EVENT_ID = /^[\x21-\x7E]{1,128}$/;
const REFERENCE_MAX_LENGTH = 100;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether every string in `value` can be stored in jsonb: no U+0000 and no unpaired surrogate
 * (PostgreSQL refuses both). Iterative: a deeply nested body must not exhaust the stack.
 */
function storable(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.includes('\u0000') || LONE_SURROGATE.test(item)) return false;
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) {
        stack.push(key, child);
      }
    }
  }
  return true;
}

export type CallbackReading =
  | { ok: true; callback: GatewayCallback; occurredAt: Date }
  | { ok: false; refusal: RailSignatureFailure | 'unreadable' };

/** Verifies and reads one callback's raw bytes. Never throws for bad input. */
export function readCallback(
  keys: readonly RailKey[],
  headers: Record<string, unknown>,
  rawBody: Uint8Array,
  nowMs: number,
): CallbackReading {
  const verified = verifyRailMessage({ keys, headers, rawBody, nowMs });
  if (!verified.ok) return { ok: false, refusal: verified.reason };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(rawBody).toString('utf8'));
  } catch {
    return { ok: false, refusal: 'unreadable' };
  }
  const callback = parsed as Partial<GatewayCallback> | null;
  const transfer = callback?.transfer;
  const occurredAt = typeof callback?.occurredAt === 'string' ? Date.parse(callback.occurredAt) : Number.NaN;
  const readable =
    typeof callback?.eventId === 'string' &&
    EVENT_ID.test(callback.eventId) &&
    !Number.isNaN(occurredAt) &&
    typeof transfer === 'object' &&
    transfer !== null &&
    typeof transfer.reference === 'string' &&
    transfer.reference.length > 0 &&
    transfer.reference.length <= REFERENCE_MAX_LENGTH &&
    typeof transfer.status === 'string';
  if (!readable || !storable(parsed)) return { ok: false, refusal: 'unreadable' };
  return { ok: true, callback: callback as GatewayCallback, occurredAt: new Date(occurredAt) };
}

/**
 * What a stored callback tells the reaper: an outcome or a return. A callback that says the transfer
 * is still being processed, or says something not in the status table, tells it nothing (undefined):
 * the reaper's own questions settle that transfer. It carries the transfer's echo, for the answer
 * checks every adapter's notifications pass (answer-check.ts).
 */
export function notificationOf(
  eventId: string,
  callback: GatewayCallback,
  occurredAt: Date,
): RailNotification | undefined {
  const transfer = callback.transfer;
  const status = railStatusOf(transfer, occurredAt);
  const metadata = transfer.metadata;
  const mode: 'test' | 'live' | undefined =
    metadata?.mode === 'test' ? 'test' : metadata?.mode === 'live' ? 'live' : undefined;
  const common: Omit<RailNotification, 'kind' | 'bankReference' | 'reason'> = {
    id: eventId,
    reference: transfer.reference,
    occurredAt,
    ...(typeof metadata?.tenantId === 'string' && UUID.test(metadata.tenantId) && mode !== undefined
      ? { tenantId: metadata.tenantId, mode }
      : {}),
    echo: echoOf(transfer),
  };
  switch (status.status) {
    case 'settled':
      return { ...common, kind: 'settled', bankReference: status.bankReference, settledAt: status.settledAt };
    case 'failed':
      return { ...common, kind: 'failed', reason: status.reason };
    case 'reversed':
      return { ...common, kind: 'reversed', reason: status.reason, bankReference: status.bankReference };
    case 'processing':
    case 'unconfirmed':
      return undefined;
  }
}
