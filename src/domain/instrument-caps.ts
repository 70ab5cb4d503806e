/** Per-operation caps of each instrument; they always apply. */
import type { Instrument } from './instrument.ts';
const INSTRUMENT_CAPS: Record<Instrument, bigint> = {
  pago_movil: 10_000_000n,
  transferencia: 50_000_000n,
};

export interface LimitBreach {
  rule: 'per_tx_max' | 'daily_max' | 'monthly_max' | 'daily_count_max';
  cap: bigint;
  scope: string;
  method: string;
  /** What the payout would bring the measured figure to. */
  attempted: bigint;
  exceededBy: bigint;
  ruleId?: string;
}

export function instrumentCapBreach(method: Instrument, amount: bigint): LimitBreach | undefined {
  const cap = INSTRUMENT_CAPS[method];
  if (amount <= cap) return undefined;
  return { rule: 'per_tx_max', cap, scope: 'instrument', method, attempted: amount, exceededBy: amount - cap };
}
