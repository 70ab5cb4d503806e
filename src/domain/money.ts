/**
 * Money arithmetic for quotes. Everything is bigint: amounts are integer minor units and rates
 * are exact scaled decimals, so no value ever passes through a float and every rounding step is
 * an explicit floor/ceil/truncation chosen by the product rules.
 */

export type Asset = 'BS' | 'USD' | 'USDC' | 'VESC';

export const ASSET_DECIMALS: Record<Asset, number> = { BS: 2, USD: 2, USDC: 6, VESC: 2 };

/** 2^53 − 1: the largest amount a JSON number (and so any API client) can carry exactly. */
export const MAX_AMOUNT_MINOR = 9007199254740991n;

const BS_DECIMALS = ASSET_DECIMALS.BS;
const MAX_RATE_SCALE = 8;
const MAX_RATE_INT_DIGITS = 12;
const BPS = 10000n;

export class MoneyError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'MoneyError';
    this.code = code;
  }
}

/** An exact non-negative decimal: units / 10^scale. */
export type Decimal = { units: bigint; scale: number };

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** Integer division rounding up; callers only pass non-negative numerators and positive divisors. */
const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/**
 * Decimal is a plain structural type, so values built outside parseDecimal are re-checked here;
 * the limits also keep every intermediate product small enough to reason about.
 */
function assertDecimal(d: Decimal): void {
  const ok =
    typeof d?.units === 'bigint' &&
    d.units >= 0n &&
    Number.isInteger(d.scale) &&
    d.scale >= 0 &&
    d.scale <= MAX_RATE_SCALE &&
    d.units < pow10(MAX_RATE_INT_DIGITS + d.scale);
  if (!ok) throw new MoneyError('invalid_decimal', 'decimal is malformed or out of range');
}

function assertRate(d: Decimal): void {
  assertDecimal(d);
  if (d.units === 0n) throw new MoneyError('invalid_rate', 'rate must be greater than zero');
}

function assertBps(bps: number, max: number, what: string): void {
  if (!Number.isInteger(bps) || bps < 0 || bps > max) {
    throw new MoneyError('invalid_bps', `${what} must be an integer from 0 to ${max}`);
  }
}

function assertAmount(amount: bigint, min: bigint, what: string): void {
  if (typeof amount !== 'bigint') throw new MoneyError('invalid_amount', `${what} must be a bigint`);
  if (amount < min || amount > MAX_AMOUNT_MINOR) {
    throw new MoneyError('amount_out_of_range', `${what} must be from ${min} to ${MAX_AMOUNT_MINOR} minor units`);
  }
}

/** Computed amounts get the same ceiling as inputs, so nothing we store can exceed what clients can read. */
function checkResult(amount: bigint, what: string): bigint {
  if (amount > MAX_AMOUNT_MINOR) {
    throw new MoneyError('amount_out_of_range', `${what} would exceed ${MAX_AMOUNT_MINOR} minor units`);
  }
  return amount;
}

const DECIMAL_PATTERN = /^(\d+)(?:\.(\d+))?$/;

/** @internal Exported for its tests, not used elsewhere. */
export function parseDecimal(text: string): Decimal {
  const m = typeof text === 'string' ? DECIMAL_PATTERN.exec(text) : null;
  const int = m?.[1];
  const frac = m?.[2] ?? '';
  if (int === undefined || int.length > MAX_RATE_INT_DIGITS || frac.length > MAX_RATE_SCALE) {
    throw new MoneyError(
      'invalid_decimal',
      `"${String(text)}" is not a decimal with at most ${MAX_RATE_INT_DIGITS} integer and ${MAX_RATE_SCALE} fractional digits`,
    );
  }
  return { units: BigInt(int + frac), scale: frac.length };
}

/** A rate of zero would make every conversion deliver nothing, so it is never a valid market. */
export function parseRate(text: string): Decimal {
  const d = parseDecimal(text);
  assertRate(d);
  return d;
}

/**
 * Exact digits at the decimal's own scale ("925.00" stays "925.00").
 * @internal Exported for its tests, not used elsewhere.
 */
export function formatDecimal(d: Decimal): string {
  assertDecimal(d);
  if (d.scale === 0) return d.units.toString();
  const digits = d.units.toString().padStart(d.scale + 1, '0');
  return `${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}`;
}

/**
 * Rates are shown canonically: trailing zeros dropped, but always at least 2 decimals like money.
 * @internal Exported for its tests, not used elsewhere.
 */
export function formatRateValue(d: Decimal): string {
  assertDecimal(d);
  let { units, scale } = d;
  if (scale < 2) {
    units *= pow10(2 - scale);
    scale = 2;
  }
  while (scale > 2 && units % 10n === 0n) {
    units /= 10n;
    scale -= 1;
  }
  return formatDecimal({ units, scale });
}

/**
 * market × (1 − bps/10000) is exact at scale+4; truncating (not rounding) past 8 decimals means
 * the customer rate never rounds up in the customer's favour beyond what the spread allows.
 * @internal Exported for its tests, not used elsewhere.
 */
export function applySpread(market: Decimal, spreadBps: number): Decimal {
  assertRate(market);
  assertBps(spreadBps, 9999, 'spread_bps');
  const units = market.units * (BPS - BigInt(spreadBps));
  const scale = market.scale + 4;
  if (scale <= MAX_RATE_SCALE) return { units, scale };
  return { units: units / pow10(scale - MAX_RATE_SCALE), scale: MAX_RATE_SCALE };
}

/**
 * The percentage part rounds up so the service never undercharges by a fraction of a céntimo.
 * @internal Exported for its tests, not used elsewhere.
 */
export function computeFee(amountMinor: bigint, feeBps: number, feeFixedMinor: bigint): bigint {
  assertAmount(amountMinor, 0n, 'amount');
  assertBps(feeBps, 10000, 'fee_bps');
  assertAmount(feeFixedMinor, 0n, 'fee_fixed');
  return checkResult(ceilDiv(amountMinor * BigInt(feeBps), BPS) + feeFixedMinor, 'fee');
}

/**
 * Floors so that the BS we promise is never more than the asset amount is exactly worth.
 * @internal Exported for its tests, not used elsewhere.
 */
export function convertToBs(amountMinor: bigint, asset: Asset, rate: Decimal): bigint {
  assertAmount(amountMinor, 0n, 'amount');
  assertRate(rate);
  const decimals = assetDecimals(asset);
  const num = amountMinor * rate.units * pow10(BS_DECIMALS);
  return checkResult(num / pow10(rate.scale + decimals), 'converted amount');
}

/** Smallest BS amount a rail will move: one USD's worth, rounded up to the céntimo. */
export function railFloorMinor(usdMarket: Decimal): bigint {
  assertRate(usdMarket);
  return ceilDiv(usdMarket.units * pow10(BS_DECIMALS), pow10(usdMarket.scale));
}

function assetDecimals(asset: Asset): number {
  const decimals = Object.hasOwn(ASSET_DECIMALS, asset) ? ASSET_DECIMALS[asset] : undefined;
  if (decimals === undefined) throw new MoneyError('invalid_asset', `unknown asset "${String(asset)}"`);
  return decimals;
}

/**
 * Smallest spend (in minor units of `asset`, at the already-spread `value`) whose delivery is
 * positive, or null when no spend can cover the fee. Both steps are monotonic in the spend, so
 * inverting each floor/ceil gives the exact minimum:
 *   deliver = gross − ceil(gross·b/10000) − f = floor(gross·(10000−b)/10000) − f ≥ 1
 *     ⇔ gross ≥ ceil((f+1)·10000 / (10000−b))
 *   gross = floor(spend·units·100 / 10^(scale+dX)) ≥ g ⇔ spend ≥ ceil(g·10^(scale+dX) / (units·100))
 * @internal Exported for its tests, not used elsewhere.
 */
export function minimumSpend(asset: Asset, value: Decimal, feeBps: number, feeFixedMinor: bigint): bigint | null {
  assertDecimal(value);
  assertBps(feeBps, 10000, 'fee_bps');
  assertAmount(feeFixedMinor, 0n, 'fee_fixed');
  const keepBps = BPS - BigInt(feeBps);
  if (keepBps === 0n || value.units === 0n) return null;
  const minGross = ceilDiv((feeFixedMinor + 1n) * BPS, keepBps);
  const spend = ceilDiv(minGross * pow10(value.scale + assetDecimals(asset)), value.units * pow10(BS_DECIMALS));
  return spend < 1n ? 1n : spend;
}

type QuoteRate = { value: string; market: string; spread_bps: number };

export type Quote = {
  fixed: 'deliver' | 'spend';
  spend: { asset: Asset; amount: bigint };
  deliver: { asset: 'BS'; amount: bigint };
  fee: { asset: 'BS'; amount: bigint };
  rate: QuoteRate | null;
};

type DeliverQuoteInput = { mode: 'deliver'; deliverAmount: bigint; feeBps: number; feeFixed: bigint };

/** @internal Exported for its tests, not used elsewhere. */
export type SpendQuoteInput = {
  mode: 'spend';
  spendAsset: Exclude<Asset, 'BS'>;
  spendAmount: bigint;
  market: Decimal;
  spreadBps: number;
  feeBps: number;
  feeFixed: bigint;
};

export type QuoteInput = DeliverQuoteInput | SpendQuoteInput;

export function computeQuote(input: QuoteInput): Quote {
  return input.mode === 'deliver' ? deliverQuote(input) : spendQuote(input);
}

/** BS→BS: the beneficiary gets exactly what was asked and the fee is added on top. */
function deliverQuote(input: DeliverQuoteInput): Quote {
  assertAmount(input.deliverAmount, 1n, 'deliver amount');
  const fee = computeFee(input.deliverAmount, input.feeBps, input.feeFixed);
  const spend = checkResult(input.deliverAmount + fee, 'spend amount');
  return {
    fixed: 'deliver',
    spend: { asset: 'BS', amount: spend },
    deliver: { asset: 'BS', amount: input.deliverAmount },
    fee: { asset: 'BS', amount: fee },
    rate: null,
  };
}

/** The customer fixes what they pay; the fee comes out of the converted BS. */
function spendQuote(input: SpendQuoteInput): Quote {
  const { spendAsset: asset, spendAmount: spend } = input;
  if (asset === ('BS' as Asset) || !Object.hasOwn(ASSET_DECIMALS, asset)) {
    throw new MoneyError('invalid_asset', 'spend mode needs a spend asset other than BS');
  }
  assertAmount(spend, 1n, 'spend amount');
  const value = applySpread(input.market, input.spreadBps);
  // A tiny market can truncate to a zero value after the spread: that is a quote too small to
  // deliver anything, not a bad rate, so it must surface as deliver_not_positive.
  const gross = value.units === 0n ? 0n : convertToBs(spend, asset, value);
  const fee = computeFee(gross, input.feeBps, input.feeFixed);
  const deliver = gross - fee;
  if (deliver <= 0n) throw notEnough(input, value, gross, fee);
  return {
    fixed: 'spend',
    spend: { asset, amount: spend },
    deliver: { asset: 'BS', amount: deliver },
    fee: { asset: 'BS', amount: fee },
    rate: { value: formatRateValue(value), market: formatRateValue(input.market), spread_bps: input.spreadBps },
  };
}

function notEnough(input: SpendQuoteInput, value: Decimal, gross: bigint, fee: bigint): MoneyError {
  const min = minimumSpend(input.spendAsset, value, input.feeBps, input.feeFixed);
  const hint =
    min === null || min > MAX_AMOUNT_MINOR
      ? 'no spend amount can cover the fee at this rate'
      : `the minimum spend is ${min} ${input.spendAsset} minor units`;
  return new MoneyError(
    'deliver_not_positive',
    `spend amount ${input.spendAmount} ${input.spendAsset} minor units is too small to cover the fee: ` +
      `it converts to ${gross} BS minor units and the fee is ${fee}; ${hint}`,
  );
}
