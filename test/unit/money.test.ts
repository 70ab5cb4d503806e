import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ASSET_DECIMALS,
  MAX_AMOUNT_MINOR,
  MoneyError,
  applySpread,
  computeFee,
  computeQuote,
  convertToBs,
  formatDecimal,
  formatRateValue,
  minimumSpend,
  parseDecimal,
  parseRate,
  railFloorMinor,
  type Asset,
  type Decimal,
  type SpendQuoteInput,
} from '../../src/domain/money.ts';

const RUNS = { numRuns: 300 };

function throwsCode(fn: () => unknown, code: string): void {
  assert.throws(fn, (e: unknown) => e instanceof MoneyError && e.code === code);
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** Reference fee without range checks, to tell legitimate refusals from spurious ones. */
function computeFeeUnchecked(a: bigint, bps: number, fixed: bigint): bigint {
  return (a * BigInt(bps) + 9999n) / 10000n + fixed;
}

// ---- arbitraries -------------------------------------------------------------------------

const arbRate: fc.Arbitrary<Decimal> = fc
  .integer({ min: 0, max: 8 })
  .chain((scale) => fc.bigInt({ min: 1n, max: pow10(12 + scale) - 1n }).map((units) => ({ units, scale })));

/** Realistic-ish rates so that spend-mode properties mostly hit the success path. */
const arbRealisticRate: fc.Arbitrary<Decimal> = fc.oneof(
  arbRate,
  fc.bigInt({ min: 1n, max: 10_000_000n }).map((units) => ({ units, scale: 2 })),
  fc.bigInt({ min: 1n, max: 100_000_000n }).map((units) => ({ units, scale: 8 })),
);

const arbAmount = fc.bigInt({ min: 1n, max: MAX_AMOUNT_MINOR });
const arbSmallAmount = fc.bigInt({ min: 1n, max: 10_000_000_000n });
const arbFeeBps = fc.integer({ min: 0, max: 10000 });
const arbSpreadBps = fc.integer({ min: 0, max: 9999 });
const arbFeeFixed = fc.oneof(fc.bigInt({ min: 0n, max: 100_000n }), fc.bigInt({ min: 0n, max: MAX_AMOUNT_MINOR }));
const arbSpendAsset = fc.constantFrom<SpendQuoteInput['spendAsset']>('USD', 'USDC', 'VESC');
const arbTooBig = fc.bigInt({ min: MAX_AMOUNT_MINOR + 1n, max: MAX_AMOUNT_MINOR * pow10(30) });
const arbNonPositive = fc.bigInt({ min: -MAX_AMOUNT_MINOR * 4n, max: 0n });

const arbSpendInput: fc.Arbitrary<SpendQuoteInput> = fc.record({
  mode: fc.constant('spend' as const),
  spendAsset: arbSpendAsset,
  spendAmount: fc.oneof(arbSmallAmount, arbAmount),
  market: arbRealisticRate,
  spreadBps: fc.oneof(fc.integer({ min: 0, max: 300 }), arbSpreadBps),
  feeBps: fc.oneof(fc.integer({ min: 0, max: 300 }), arbFeeBps),
  feeFixed: arbFeeFixed,
});

function isMoneyErrorWith(e: unknown, codes: string[]): boolean {
  return e instanceof MoneyError && codes.includes(e.code);
}

// ---- decimals ----------------------------------------------------------------------------

describe('parseDecimal / parseRate / formatDecimal', () => {
  it('parses exact scaled values', () => {
    assert.deepEqual(parseDecimal('925.00'), { units: 92500n, scale: 2 });
    assert.deepEqual(parseDecimal('1'), { units: 1n, scale: 0 });
    assert.deepEqual(parseDecimal('0.00000001'), { units: 1n, scale: 8 });
    assert.deepEqual(parseDecimal('999999999999.99999999'), { units: 99999999999999999999n, scale: 8 });
    assert.deepEqual(parseDecimal('0'), { units: 0n, scale: 0 });
  });

  it('rejects malformed or over-long text', () => {
    for (const bad of ['', '.5', '5.', '-1', '+1', '1e3', ' 1', '1 ', '1,000.00', '1.2.3', 'NaN', '0x10', '١٢']) {
      throwsCode(() => parseDecimal(bad), 'invalid_decimal');
    }
    throwsCode(() => parseDecimal('1.000000001'), 'invalid_decimal'); // 9 fractional digits
    throwsCode(() => parseDecimal('1000000000000'), 'invalid_decimal'); // 13 integer digits
    throwsCode(() => parseDecimal(925 as unknown as string), 'invalid_decimal');
  });

  it('parseRate rejects zero in any spelling', () => {
    for (const zero of ['0', '0.0', '0.00000000', '000']) throwsCode(() => parseRate(zero), 'invalid_rate');
    assert.deepEqual(parseRate('0.00000001'), { units: 1n, scale: 8 });
  });

  it('formatDecimal keeps the scale as written', () => {
    assert.equal(formatDecimal({ units: 92500n, scale: 2 }), '925.00');
    assert.equal(formatDecimal({ units: 5n, scale: 3 }), '0.005');
    assert.equal(formatDecimal({ units: 7n, scale: 0 }), '7');
  });

  it('property: format then parse round-trips', () => {
    fc.assert(
      fc.property(arbRate, (d) => {
        assert.deepEqual(parseDecimal(formatDecimal(d)), d);
      }),
      RUNS,
    );
  });
});

// ---- spread and rate formatting ----------------------------------------------------------

describe('applySpread / formatRateValue', () => {
  const spread = (market: string, bps: number): string => formatRateValue(applySpread(parseRate(market), bps));

  it('matches the product examples', () => {
    assert.equal(spread('925.00', 50), '920.375');
    assert.equal(spread('925.00', 0), '925.00');
    assert.equal(spread('1.00', 50), '0.995');
    assert.equal(spread('925', 0), '925.00');
    assert.equal(spread('925.5', 0), '925.50');
  });

  it('truncates (never rounds) beyond 8 decimals', () => {
    // 0.12345679 × 0.9999 = 0.123444444321 → 0.12344444
    assert.equal(spread('0.12345679', 1), '0.12344444');
    // 0.00000001 × 0.9999 = 0.000000009999 → 0.00000000 → shown with 2 decimals
    assert.equal(spread('0.00000001', 1), '0.00');
    // 1.99999999 × 0.0001 = 0.000199999999 → 0.00019999
    assert.equal(spread('1.99999999', 9999), '0.00019999');
  });

  it('rejects out-of-range spreads and zero markets', () => {
    for (const bps of [-1, 10000, 1.5, Number.NaN]) throwsCode(() => applySpread(parseRate('925'), bps), 'invalid_bps');
    throwsCode(() => applySpread({ units: 0n, scale: 2 }, 0), 'invalid_rate');
    throwsCode(() => applySpread({ units: 1n, scale: 9 }, 0), 'invalid_decimal');
    throwsCode(() => applySpread({ units: -1n, scale: 2 }, 0), 'invalid_decimal');
  });

  it('property: value is market × (1 − bps/10000) truncated to 8 decimals', () => {
    fc.assert(
      fc.property(arbRate, arbSpreadBps, (market, bps) => {
        const v = applySpread(market, bps);
        assert.ok(v.scale <= 8);
        // Compare exactly at scale 8+4+8: exact − 1e-8 < v ≤ exact.
        const vScaled = v.units * pow10(8 - v.scale) * pow10(market.scale + 4);
        const exactScaled = market.units * BigInt(10000 - bps) * pow10(8);
        const ulp = pow10(market.scale + 4);
        assert.ok(vScaled <= exactScaled);
        assert.ok(exactScaled - vScaled < ulp);
      }),
      RUNS,
    );
  });

  it('property: formatted value has ≥2 decimals, no extra trailing zeros, and parses back to the same number', () => {
    fc.assert(
      fc.property(arbRate, arbSpreadBps, (market, bps) => {
        const v = applySpread(market, bps);
        const text = formatRateValue(v);
        assert.match(text, /^\d+\.\d{2}(\d*[1-9])?$/);
        const back = parseDecimal(text);
        assert.equal(back.units * pow10(v.scale), v.units * pow10(back.scale));
      }),
      RUNS,
    );
  });
});

// ---- fee ---------------------------------------------------------------------------------

describe('computeFee', () => {
  it('rounds the percentage up and adds the fixed part', () => {
    assert.equal(computeFee(5_000_000n, 100, 0n), 50_000n);
    assert.equal(computeFee(9_203_750n, 100, 0n), 92_038n); // 92037.5 → 92038
    assert.equal(computeFee(1n, 1, 0n), 1n); // 0.0001 → 1
    assert.equal(computeFee(10_000n, 1, 0n), 1n); // exactly 1, no extra
    assert.equal(computeFee(10_001n, 1, 0n), 2n);
    assert.equal(computeFee(0n, 100, 0n), 0n);
    assert.equal(computeFee(0n, 100, 250n), 250n);
    assert.equal(computeFee(12_345n, 0, 7n), 7n);
    assert.equal(computeFee(12_345n, 10000, 0n), 12_345n);
  });

  it('rejects bad inputs and overflowing results', () => {
    for (const bps of [-1, 10001, 0.5]) throwsCode(() => computeFee(100n, bps, 0n), 'invalid_bps');
    throwsCode(() => computeFee(-1n, 100, 0n), 'amount_out_of_range');
    throwsCode(() => computeFee(MAX_AMOUNT_MINOR + 1n, 100, 0n), 'amount_out_of_range');
    throwsCode(() => computeFee(100n, 100, -1n), 'amount_out_of_range');
    throwsCode(() => computeFee(100n, 100, MAX_AMOUNT_MINOR + 1n), 'amount_out_of_range');
    throwsCode(() => computeFee(MAX_AMOUNT_MINOR, 10000, 1n), 'amount_out_of_range');
    assert.equal(computeFee(MAX_AMOUNT_MINOR, 10000, 0n), MAX_AMOUNT_MINOR);
    throwsCode(() => computeFee(100 as unknown as bigint, 100, 0n), 'invalid_amount');
  });

  it('property: fee is the exact ceiling of amount × bps / 10000 plus fixed', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: MAX_AMOUNT_MINOR }),
        arbFeeBps,
        fc.bigInt({ min: 0n, max: 1_000_000n }),
        (a, bps, fixed) => {
          if (computeFeeUnchecked(a, bps, fixed) > MAX_AMOUNT_MINOR) {
            throwsCode(() => computeFee(a, bps, fixed), 'amount_out_of_range');
            return;
          }
          const pct = computeFee(a, bps, fixed) - fixed;
          assert.ok(pct * 10000n >= a * BigInt(bps));
          assert.ok((pct - 1n) * 10000n < a * BigInt(bps));
        },
      ),
      RUNS,
    );
  });

  it('property: fee is monotonic non-decreasing in amount', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: MAX_AMOUNT_MINOR / 2n }),
        fc.bigInt({ min: 0n, max: MAX_AMOUNT_MINOR / 2n }),
        arbFeeBps,
        fc.bigInt({ min: 0n, max: 1_000_000n }),
        (x, y, bps, fixed) => {
          const [lo, hi] = x <= y ? [x, y] : [y, x];
          assert.ok(computeFee(lo, bps, fixed) <= computeFee(hi, bps, fixed));
          assert.ok(computeFee(lo, bps, fixed) <= computeFee(lo + 1n, bps, fixed));
        },
      ),
      RUNS,
    );
  });
});

// ---- conversion and rail floor -----------------------------------------------------------

describe('convertToBs', () => {
  const v = applySpread(parseRate('925.00'), 50); // 920.375

  it('converts 2- and 6-decimal assets exactly, flooring', () => {
    assert.equal(convertToBs(10_000n, 'USD', v), 9_203_750n); // 100.00 USD → 920,375.00 BS
    assert.equal(convertToBs(1n, 'USD', v), 920n); // 0.01 USD → 9.20375 BS → 9.20
    assert.equal(convertToBs(1_000_000n, 'USDC', v), 92_037n); // 1 USDC → 920.375 BS → 920.37
    assert.equal(convertToBs(1n, 'USDC', v), 0n); // 0.000001 USDC → 0.000920375 BS
    assert.equal(convertToBs(1_087n, 'USDC', parseRate('925.00')), 100n); // 0.001087 × 925 = 1.005475 BS
    assert.equal(convertToBs(12_345n, 'VESC', parseRate('1.00')), 12_345n);
    assert.equal(convertToBs(12_345n, 'VESC', applySpread(parseRate('1.00'), 50)), 12_283n); // 122.83275 → 122.83
    assert.equal(convertToBs(0n, 'USD', v), 0n);
  });

  it('rejects overflowing results, bad amounts and unknown assets', () => {
    throwsCode(() => convertToBs(MAX_AMOUNT_MINOR, 'USD', parseRate('925')), 'amount_out_of_range');
    throwsCode(() => convertToBs(MAX_AMOUNT_MINOR + 1n, 'USD', parseRate('0.00000001')), 'amount_out_of_range');
    throwsCode(() => convertToBs(-1n, 'USD', v), 'amount_out_of_range');
    throwsCode(() => convertToBs(1n, 'EUR' as Asset, v), 'invalid_asset');
    throwsCode(() => convertToBs(1n, 'toString' as Asset, v), 'invalid_asset');
    throwsCode(() => convertToBs(1n, 'USD', { units: 0n, scale: 0 }), 'invalid_rate');
  });

  it('property: result is the exact floor of amount × rate in BS minor units', () => {
    fc.assert(
      fc.property(
        arbSmallAmount,
        fc.constantFrom<Asset>('BS', 'USD', 'USDC', 'VESC'),
        arbRealisticRate,
        (a, asset, r) => {
          let bs: bigint;
          try {
            bs = convertToBs(a, asset, r);
          } catch (e) {
            assert.ok(isMoneyErrorWith(e, ['amount_out_of_range']));
            return;
          }
          const den = pow10(r.scale + ASSET_DECIMALS[asset]);
          const num = a * r.units * 100n;
          assert.ok(bs >= 0n && bs <= MAX_AMOUNT_MINOR);
          assert.ok(bs * den <= num && num < (bs + 1n) * den);
        },
      ),
      RUNS,
    );
  });
});

describe('railFloorMinor', () => {
  it('is one USD in BS, rounded up to the céntimo', () => {
    assert.equal(railFloorMinor(parseRate('925.00')), 92_500n);
    assert.equal(railFloorMinor(parseRate('925.001')), 92_501n);
    assert.equal(railFloorMinor(parseRate('925.00000001')), 92_501n);
    assert.equal(railFloorMinor(parseRate('925')), 92_500n);
    assert.equal(railFloorMinor(parseRate('0.00000001')), 1n);
    throwsCode(() => railFloorMinor({ units: 0n, scale: 2 }), 'invalid_rate');
  });

  it('property: exact ceiling of market × 100', () => {
    fc.assert(
      fc.property(arbRate, (r) => {
        const f = railFloorMinor(r);
        assert.ok(f * pow10(r.scale) >= r.units * 100n);
        assert.ok((f - 1n) * pow10(r.scale) < r.units * 100n);
      }),
      RUNS,
    );
  });
});

// ---- quotes ------------------------------------------------------------------------------

describe('computeQuote — deliver mode', () => {
  it('adds the fee on top of the delivered BS', () => {
    assert.deepEqual(computeQuote({ mode: 'deliver', deliverAmount: 5_000_000n, feeBps: 100, feeFixed: 0n }), {
      fixed: 'deliver',
      spend: { asset: 'BS', amount: 5_050_000n },
      deliver: { asset: 'BS', amount: 5_000_000n },
      fee: { asset: 'BS', amount: 50_000n },
      rate: null,
    });
    const q = computeQuote({ mode: 'deliver', deliverAmount: 1n, feeBps: 1, feeFixed: 500n });
    assert.equal(q.fee.amount, 501n);
    assert.equal(q.spend.amount, 502n);
  });

  it('rejects out-of-range amounts and results', () => {
    const base = { mode: 'deliver' as const, feeBps: 100, feeFixed: 0n };
    throwsCode(() => computeQuote({ ...base, deliverAmount: 0n }), 'amount_out_of_range');
    throwsCode(() => computeQuote({ ...base, deliverAmount: -5n }), 'amount_out_of_range');
    throwsCode(() => computeQuote({ ...base, deliverAmount: MAX_AMOUNT_MINOR + 1n }), 'amount_out_of_range');
    throwsCode(() => computeQuote({ ...base, deliverAmount: MAX_AMOUNT_MINOR }), 'amount_out_of_range'); // spend overflows
    throwsCode(
      () => computeQuote({ ...base, deliverAmount: 1n, feeFixed: MAX_AMOUNT_MINOR + 1n }),
      'amount_out_of_range',
    );
    assert.equal(computeQuote({ ...base, feeBps: 0, deliverAmount: MAX_AMOUNT_MINOR }).spend.amount, MAX_AMOUNT_MINOR);
  });

  it('property: spend = deliver + fee, all non-negative bigints within range', () => {
    fc.assert(
      fc.property(fc.oneof(arbSmallAmount, arbAmount), arbFeeBps, arbFeeFixed, (deliverAmount, feeBps, feeFixed) => {
        let q;
        try {
          q = computeQuote({ mode: 'deliver', deliverAmount, feeBps, feeFixed });
        } catch (e) {
          assert.ok(isMoneyErrorWith(e, ['amount_out_of_range']));
          // Only a genuinely too-large spend may be refused.
          assert.ok(deliverAmount + computeFeeUnchecked(deliverAmount, feeBps, feeFixed) > MAX_AMOUNT_MINOR);
          return;
        }
        assert.equal(q.spend.amount, q.deliver.amount + q.fee.amount);
        assert.equal(q.deliver.amount, deliverAmount);
        for (const x of [q.spend.amount, q.deliver.amount, q.fee.amount]) {
          assert.equal(typeof x, 'bigint');
          assert.ok(x >= 0n && x <= MAX_AMOUNT_MINOR);
        }
        assert.ok(q.deliver.amount > 0n);
        assert.equal(q.rate, null);
      }),
      RUNS,
    );
  });
});

describe('computeQuote — spend mode', () => {
  const usd = (spendAmount: bigint, over: Partial<SpendQuoteInput> = {}): SpendQuoteInput => ({
    mode: 'spend',
    spendAsset: 'USD',
    spendAmount,
    market: parseRate('925.00'),
    spreadBps: 50,
    feeBps: 100,
    feeFixed: 0n,
    ...over,
  });

  it('matches the worked USD example', () => {
    assert.deepEqual(computeQuote(usd(10_000n)), {
      fixed: 'spend',
      spend: { asset: 'USD', amount: 10_000n },
      deliver: { asset: 'BS', amount: 9_111_712n }, // 9,203,750 − 92,038
      fee: { asset: 'BS', amount: 92_038n },
      rate: { value: '920.375', market: '925.00', spread_bps: 50 },
    });
  });

  it('handles USDC with 6 decimals', () => {
    const q = computeQuote(usd(1_000_000n, { spendAsset: 'USDC' }));
    // 1 USDC × 920.375 = 920.375 BS → gross 92,037; fee ceil(920.37) = 921
    assert.equal(q.fee.amount, 921n);
    assert.equal(q.deliver.amount, 91_116n);
    assert.deepEqual(q.spend, { asset: 'USDC', amount: 1_000_000n });
  });

  it('formats VESC and spread-free rates', () => {
    const q = computeQuote(usd(10_000n, { spendAsset: 'VESC', market: parseRate('1.00'), feeBps: 0 }));
    assert.deepEqual(q.rate, { value: '0.995', market: '1.00', spread_bps: 50 });
    assert.equal(q.deliver.amount, 9_950n);
    const q0 = computeQuote(usd(10_000n, { spreadBps: 0, market: parseRate('925'), feeBps: 0 }));
    assert.deepEqual(q0.rate, { value: '925.00', market: '925.00', spread_bps: 0 });
    assert.equal(q0.deliver.amount, 9_250_000n);
  });

  it('refuses a spend too small to cover the fee, naming the minimum', () => {
    // 0.01 USD → 9.20 BS gross, fee 10.00 fixed → nothing left.
    const input = usd(1n, { feeBps: 0, feeFixed: 1_000n });
    assert.throws(
      () => computeQuote(input),
      (e: unknown) =>
        e instanceof MoneyError &&
        e.code === 'deliver_not_positive' &&
        /too small to cover the fee/.test(e.message) &&
        /minimum spend is 2 USD/.test(e.message),
    );
    // 0.02 USD → 18.40 BS gross, so 8.40 BS after the fee.
    assert.equal(computeQuote({ ...input, spendAmount: 2n }).deliver.amount, 840n);
    // A 100% fee can never leave anything to deliver.
    assert.throws(
      () => computeQuote(usd(10_000n, { feeBps: 10000 })),
      (e: unknown) => e instanceof MoneyError && e.code === 'deliver_not_positive' && /no spend amount/.test(e.message),
    );
    // A positive market whose spread-applied value truncates to zero is "too small", not a bad rate.
    assert.throws(
      () => computeQuote(usd(10_000n, { market: parseRate('0.00000001'), spreadBps: 1, feeBps: 0 })),
      (e: unknown) => e instanceof MoneyError && e.code === 'deliver_not_positive' && /no spend amount/.test(e.message),
    );
    // 1e-6 USDC converts to 0 BS: delivery is zero, not negative.
    throwsCode(() => computeQuote(usd(1n, { spendAsset: 'USDC', feeBps: 0 })), 'deliver_not_positive');
  });

  it('rejects BS as spend asset, bad amounts and bad rates', () => {
    throwsCode(() => computeQuote(usd(100n, { spendAsset: 'BS' as 'USD' })), 'invalid_asset');
    throwsCode(() => computeQuote(usd(0n)), 'amount_out_of_range');
    throwsCode(() => computeQuote(usd(MAX_AMOUNT_MINOR + 1n)), 'amount_out_of_range');
    throwsCode(() => computeQuote(usd(MAX_AMOUNT_MINOR)), 'amount_out_of_range'); // gross overflows
    throwsCode(() => computeQuote(usd(100n, { feeFixed: MAX_AMOUNT_MINOR + 1n })), 'amount_out_of_range');
    throwsCode(() => computeQuote(usd(100n, { market: { units: 0n, scale: 2 } })), 'invalid_rate');
    throwsCode(() => computeQuote(usd(100n, { spreadBps: 10000 })), 'invalid_bps');
  });

  it('property: deliver + fee = gross = floor(spend × rate.value), deliver > 0', () => {
    fc.assert(
      fc.property(arbSpendInput, (input) => {
        let q;
        try {
          q = computeQuote(input);
        } catch (e) {
          assert.ok(isMoneyErrorWith(e, ['deliver_not_positive', 'amount_out_of_range']));
          return;
        }
        const value = parseDecimal(q.rate!.value);
        const den = pow10(value.scale + ASSET_DECIMALS[input.spendAsset]);
        const num = input.spendAmount * value.units * 100n;
        const gross = q.deliver.amount + q.fee.amount;
        assert.ok(gross * den <= num, 'never delivers more than spend × rate');
        assert.ok(num < (gross + 1n) * den, 'floors by less than one céntimo');
        assert.equal(q.fee.amount, computeFee(gross, input.feeBps, input.feeFixed));
        assert.ok(q.deliver.amount > 0n && q.fee.amount >= 0n && gross <= MAX_AMOUNT_MINOR);
        assert.equal(q.rate!.market, formatRateValue(input.market));
        assert.equal(q.rate!.spread_bps, input.spreadBps);
        assert.deepEqual(q.spend, { asset: input.spendAsset, amount: input.spendAmount });
      }),
      RUNS,
    );
  });

  it('property: minimumSpend is exactly the smallest spend that delivers', () => {
    const arb = fc.record({
      spendAsset: arbSpendAsset,
      market: arbRealisticRate,
      spreadBps: fc.integer({ min: 0, max: 300 }),
      feeBps: fc.oneof(fc.integer({ min: 0, max: 300 }), arbFeeBps),
      feeFixed: fc.bigInt({ min: 0n, max: 1_000_000n }),
    });
    fc.assert(
      fc.property(arb, (p) => {
        const min = minimumSpend(p.spendAsset, applySpread(p.market, p.spreadBps), p.feeBps, p.feeFixed);
        const at = (spendAmount: bigint) => computeQuote({ mode: 'spend', spendAmount, ...p });
        if (min === null) {
          assert.ok(p.feeBps === 10000 || applySpread(p.market, p.spreadBps).units === 0n);
          return;
        }
        if (min > MAX_AMOUNT_MINOR) return;
        try {
          assert.ok(at(min).deliver.amount > 0n);
        } catch (e) {
          assert.ok(isMoneyErrorWith(e, ['amount_out_of_range'])); // gross too big, not "too small"
        }
        if (min > 1n) throwsCode(() => at(min - 1n), 'deliver_not_positive');
      }),
      RUNS,
    );
  });
});

describe('bounds', () => {
  it('property: huge or non-positive inputs are rejected, never overflowed', () => {
    fc.assert(
      fc.property(fc.oneof(arbTooBig, arbNonPositive), arbFeeBps, arbSpendAsset, (amount, feeBps, spendAsset) => {
        throwsCode(
          () => computeQuote({ mode: 'deliver', deliverAmount: amount, feeBps, feeFixed: 0n }),
          'amount_out_of_range',
        );
        throwsCode(
          () =>
            computeQuote({
              mode: 'spend',
              spendAsset,
              spendAmount: amount,
              market: parseRate('0.00000001'),
              spreadBps: 0,
              feeBps,
              feeFixed: 0n,
            }),
          'amount_out_of_range',
        );
      }),
      RUNS,
    );
    fc.assert(
      fc.property(arbTooBig, (feeFixed) => {
        throwsCode(
          () => computeQuote({ mode: 'deliver', deliverAmount: 1n, feeBps: 0, feeFixed }),
          'amount_out_of_range',
        );
        throwsCode(() => computeFee(1n, 0, feeFixed), 'amount_out_of_range');
      }),
      RUNS,
    );
  });

  it('property: large valid inputs either succeed within range or are refused as out of range', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: MAX_AMOUNT_MINOR / 1000n, max: MAX_AMOUNT_MINOR }),
        arbSpendAsset,
        arbRate,
        (amount, spendAsset, market) => {
          try {
            const q = computeQuote({
              mode: 'spend',
              spendAsset,
              spendAmount: amount,
              market,
              spreadBps: 0,
              feeBps: 0,
              feeFixed: 0n,
            });
            assert.ok(q.deliver.amount <= MAX_AMOUNT_MINOR);
          } catch (e) {
            assert.ok(isMoneyErrorWith(e, ['amount_out_of_range', 'deliver_not_positive']));
          }
        },
      ),
      RUNS,
    );
  });
});
