// The payment state machine. Every transition is one conditional UPDATE (WHERE status = from); this
// table says which moves exist at all, so a bug cannot invent one.

export const PAYMENT_STATUSES = ['created', 'pending', 'submitted', 'unknown', 'settled', 'failed', 'returned', 'reversed'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export type TransitionActor = 'api' | 'provider_event' | 'reaper' | 'system';

const ALLOWED: Record<string, readonly PaymentStatus[]> = {
  '': ['submitted', 'failed'],
  submitted: ['submitted', 'unknown', 'settled', 'failed'],
  unknown: ['settled', 'failed'],
  settled: ['reversed'],
};

export function assertTransition(from: PaymentStatus | null, to: PaymentStatus): void {
  if (!(ALLOWED[from ?? ''] ?? []).includes(to)) {
    throw new Error(`invariant: payment transition ${from ?? 'null'} → ${to} does not exist`);
  }
}

export const UNRESOLVED: readonly PaymentStatus[] = ['submitted', 'unknown'];
