// Credit terms are per asset: a credit tenant's draw in one asset is compared only with that asset's
// ceiling, in that asset's minor units. BS has its own column (creditLimit); the others are a map.

/** Ceilings of the assets other than BS, as stored: minor units as decimal strings, null for none. */
export type StoredCreditLimits = Record<string, string | null>;

export function creditCeiling(bsLimit: bigint | null, others: StoredCreditLimits, asset: string): bigint | null {
  if (asset === 'BS') return bsLimit;
  const stored = others[asset];
  return stored === undefined || stored === null ? null : BigInt(stored);
}
