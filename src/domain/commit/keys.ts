// The keys both commits lock and count by: a day's limit counter, a ledger account, and the counters
// an accepted payout adds to (a payout commit adds to them; an outcome commit gives them back when the
// rail refuses the payment). Each kind is locked in the order of its key (db/commit/README.md).
import type { Instrument } from '../instrument.ts';
import type { AccountKind } from '../ledger.ts';

export type CounterKind = 'tenant' | 'customer' | 'beneficiary';

/** One of a day's limit counters: a subject's consumption through one instrument. */
export interface CounterKey {
  kind: CounterKind;
  subjectId: string;
  method: Instrument;
}

export interface AccountRef {
  asset: string;
  kind: AccountKind;
}

export const counterKeyOf = (k: CounterKey): string => `${k.kind}|${k.subjectId}|${k.method}`;
export const accountKeyOf = (a: AccountRef): string => `${a.asset}/${a.kind}`;

/** The counters an accepted payout adds to: its tenant, customer and beneficiary, for its instrument. */
export function trackedCounters(
  tenantId: string,
  c: { customerId: string | null; beneficiaryId: string; method: Instrument },
): CounterKey[] {
  const keys: CounterKey[] = [{ kind: 'tenant', subjectId: tenantId, method: c.method }];
  if (c.customerId) keys.push({ kind: 'customer', subjectId: c.customerId, method: c.method });
  keys.push({ kind: 'beneficiary', subjectId: c.beneficiaryId, method: c.method });
  return keys;
}

/** A map's values in the order of their keys: the order their rows are locked in. */
export function sortedValues<T>(map: ReadonlyMap<string, T>): T[] {
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}
