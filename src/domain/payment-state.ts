import { InvariantError } from './assert.ts';
// The payment state machine. Every transition is one conditional UPDATE (WHERE status = from); this
// table says which moves exist at all, so a bug cannot invent one.

export const PAYMENT_STATUSES = [
  'created',
  'pending',
  'submitted',
  'unknown',
  'settled',
  'failed',
  'returned',
  'reversed',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export type TransitionActor = 'api' | 'provider_event' | 'reaper' | 'system';

const ALLOWED: Record<string, readonly PaymentStatus[]> = {
  '': ['pending', 'submitted', 'failed'],
  // Waiting for a rail to admit it: sent (submitted) once one does, failed past the rail queue bound.
  pending: ['submitted', 'failed'],
  submitted: ['submitted', 'unknown', 'settled', 'failed'],
  unknown: ['settled', 'failed'],
  settled: ['reversed'],
};

export function assertTransition(from: PaymentStatus | null, to: PaymentStatus): void {
  if (!(ALLOWED[from ?? ''] ?? []).includes(to)) {
    throw new InvariantError(`payment transition ${from ?? 'null'} → ${to} does not exist`);
  }
}

export const UNRESOLVED: readonly PaymentStatus[] = ['submitted', 'unknown'];

/**
 * Charged and not yet final: its amount is in flight in the books and counts against its limits. A
 * payout waiting for a rail (`pending`) is charged as one sent, so waiting can never overdraw.
 */
export const IN_FLIGHT: readonly PaymentStatus[] = ['pending', ...UNRESOLVED];
