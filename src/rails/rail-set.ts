// The rails a process knows, as the reaper needs them: the rail that carries a payment, and every
// rail whose notifications it processes. The process's rail registry (services/rail-registry.ts) is
// one; a single rail per mode (a test of one rail) is another.
import type { Instrument } from '../domain/instrument.ts';
import type { RailAdapter, RailTransfer } from './rail.ts';
import type { RailsByMode, SendOutcome } from './send.ts';

export interface RailSet {
  /**
   * The rail that carries a payment: the one it records, or, on a payment made before payments
   * recorded their rail (null), its mode's default rail. Undefined: this process has no such rail.
   */
  railOf(payment: { rail: string | null; mode: 'test' | 'live' }): RailAdapter | undefined;
  /** Every rail, each once (the reaper processes each one's notifications). */
  all(): readonly RailAdapter[];
  /** A question to `rail` was answered: its circuit breaker's failures in a row end. */
  answered(rail: string): void;
  /**
   * A question to `rail` failed with `error`: its circuit breaker counts it when it is the rail's
   * failure, not when the service's own database failed under it (isRailFailure).
   */
  unanswered(rail: string, error: unknown): void;
  /** What a submit to `rail` ended in: its breaker and its failures by reason count it. */
  sent(rail: string, outcome: SendOutcome): void;
  /**
   * The rail a payment waiting for one (`pending`) may be sent to now — its own first, else another
   * that may carry it and can deliver through its instrument — or null when none admits it yet.
   */
  railForWaiting(payment: WaitingPayment): Promise<string | null>;
}

/** What choosing a rail for a waiting payment reads of it. */
export interface WaitingPayment {
  tenant_id: string;
  mode: 'test' | 'live';
  rail: string | null;
  method: Instrument | null;
  method_requested: Instrument;
  payout_amount: bigint;
  beneficiary: RailTransfer['beneficiary'];
}

/** One rail per mode: every payment of a mode is that rail's, whatever it records. */
export function railSetOf(rails: RailsByMode | RailSet): RailSet {
  if ('railOf' in rails) return rails;
  const all = rails.live && rails.live !== rails.test ? [rails.test, rails.live] : [rails.test];
  return {
    railOf: (payment) => (payment.mode === 'test' ? rails.test : rails.live),
    all: () => all,
    answered: () => undefined,
    unanswered: () => undefined,
    sent: () => undefined,
    railForWaiting: async (payment) => (payment.mode === 'test' ? rails.test : rails.live)?.name ?? null,
  };
}
