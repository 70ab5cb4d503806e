// Amounts are integer minor units. The API reads them in a request as JSON integers (at most
// 2^53 − 1, which a JSON number holds exactly) and answers them as decimal strings. Callers may hold
// them as bigint (as the service does), number or string: each is checked here, before anything is
// sent, so that 50.5 or 1e21 never reaches the wire as something else.

/** An amount in minor units, as the caller holds it: `5000000n`, `5000000` or `'5000000'`. */
export type AmountInput = bigint | number | string;

const DIGITS = /^[0-9]+$/;
const MAX = BigInt(Number.MAX_SAFE_INTEGER);

function refuse(field: string, value: unknown, why: string): never {
  throw new RangeError(
    `${field}: ${why} (got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}); amounts are whole minor units, e.g. 5000000 for 50,000.00 Bs`,
  );
}

/** The API's form of an amount (a safe non-negative integer), or a RangeError naming the field. */
export function toApiAmount(value: AmountInput, field = 'amount'): number {
  let big: bigint;
  if (typeof value === 'bigint') {
    big = value;
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value) || !Number.isInteger(value)) refuse(field, value, 'not an integer');
    if (!Number.isSafeInteger(value))
      refuse(field, value, 'beyond 2^53 - 1, where a number is no longer exact: pass a bigint or a string');
    big = BigInt(value);
  } else if (typeof value === 'string') {
    if (!DIGITS.test(value)) refuse(field, value, 'not a string of digits');
    big = BigInt(value);
  } else {
    refuse(field, value, 'not a bigint, number or string');
  }
  if (big < 0n) refuse(field, value, 'negative');
  if (big > MAX) refuse(field, value, 'above 9007199254740991, the largest amount the API takes');
  return Number(big);
}

/** Amount fields of request bodies, by name; `creditLimits` holds one amount per asset. */
const AMOUNT_FIELDS = new Set([
  'amount',
  'creditLimit',
  'feeFixed',
  'per_tx_max',
  'daily_max',
  'monthly_max',
  'minAmount',
  'maxAmount',
]);
const AMOUNT_MAPS = new Set(['creditLimits']);

/**
 * A request body with every amount field converted (`null` kept: it clears a ceiling). `metadata`
 * is the caller's strings, never amounts, whatever its keys are called.
 */
export function withApiAmounts(body: unknown, path = ''): unknown {
  if (Array.isArray(body)) return body.map((item, i) => withApiAmounts(item, `${path}[${i}]`));
  if (typeof body !== 'object' || body === null) return body;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const field = path ? `${path}.${key}` : key;
    if (key === 'metadata') out[key] = value;
    else if (AMOUNT_FIELDS.has(key) && value !== null && value !== undefined)
      out[key] = toApiAmount(value as AmountInput, field);
    else if (AMOUNT_MAPS.has(key) && typeof value === 'object' && value !== null) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([asset, amount]) => [
          asset,
          amount === null || amount === undefined ? amount : toApiAmount(amount as AmountInput, `${field}.${asset}`),
        ]),
      );
    } else out[key] = withApiAmounts(value, field);
  }
  return out;
}

/**
 * A request type with its amount fields widened to `AmountInput` (the SDK converts them). Mapped
 * over unions member by member, so the quote's modes stay distinct.
 */
export type WithAmountInputs<T> = T extends readonly (infer U)[]
  ? WithAmountInputs<U>[]
  : T extends object
    ? {
        [K in keyof T]: K extends 'metadata'
          ? T[K]
          : K extends AmountField
            ? Widen<T[K]>
            : K extends 'creditLimits'
              ? WidenMap<T[K]>
              : WithAmountInputs<T[K]>;
      }
    : T;

type AmountField =
  'amount' | 'creditLimit' | 'feeFixed' | 'per_tx_max' | 'daily_max' | 'monthly_max' | 'minAmount' | 'maxAmount';
type Widen<V> = V extends number ? AmountInput : V;
type WidenMap<V> = V extends object ? { [K in keyof V]: Widen<V[K]> } : V;
