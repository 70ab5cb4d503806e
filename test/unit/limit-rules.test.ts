import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ruleBreach, usageRule, winningRule, type LimitRule } from '../../src/domain/limit-rules.ts';

const T = '00000000-0000-4000-8000-0000000000aa';
const C = '00000000-0000-4000-8000-0000000000cc';
const B = '00000000-0000-4000-8000-0000000000bb';

let n = 0;
function rule(scope: LimitRule['scope'], method: LimitRule['method'], extra: Partial<LimitRule> = {}): LimitRule {
  n += 1;
  return {
    id: `r${n}-${scope}-${method}`,
    scope,
    tenantId: scope === 'platform' ? null : T,
    subjectId: scope === 'customer' ? C : scope === 'beneficiary' ? B : null,
    method,
    perTxMax: 1000n,
    dailyMax: 5000n,
    monthlyMax: null,
    dailyCountMax: null,
    ...extra,
  };
}

describe('limit rule precedence', () => {
  const target = { tenantId: T, customerId: C, beneficiaryId: B };
  const cases: Array<[string, LimitRule[], string | undefined, 'pago_movil' | 'transferencia']> = [
    ['no rules: none applies', [], undefined, 'pago_movil'],
    ['platform alone', [rule('platform', '*')], 'platform-*', 'pago_movil'],
    ['tenant beats platform', [rule('platform', 'pago_movil'), rule('tenant', '*')], 'tenant-*', 'pago_movil'],
    ['customer beats tenant', [rule('tenant', 'pago_movil'), rule('customer', '*')], 'customer-*', 'pago_movil'],
    [
      'beneficiary beats customer',
      [rule('customer', 'pago_movil'), rule('beneficiary', '*')],
      'beneficiary-*',
      'pago_movil',
    ],
    [
      'concrete beats * within a scope',
      [rule('tenant', '*'), rule('tenant', 'pago_movil')],
      'tenant-pago_movil',
      'pago_movil',
    ],
    [
      'a concrete rule for another instrument does not apply; * does',
      [rule('tenant', 'transferencia'), rule('tenant', '*')],
      'tenant-*',
      'pago_movil',
    ],
    [
      'only another instrument in the specific scope: falls to the next scope',
      [rule('beneficiary', 'transferencia'), rule('tenant', '*')],
      'tenant-*',
      'pago_movil',
    ],
    [
      'another tenant’s rule never applies',
      [rule('tenant', '*', { tenantId: '00000000-0000-4000-8000-0000000000ff' })],
      undefined,
      'pago_movil',
    ],
    [
      'another customer’s rule never applies',
      [rule('customer', '*', { subjectId: '00000000-0000-4000-8000-0000000000ee' }), rule('platform', '*')],
      'platform-*',
      'pago_movil',
    ],
  ];
  for (const [name, rules, expected, method] of cases) {
    it(name, () => {
      const won = winningRule(rules, target, method);
      assert.equal(won ? won.id.replace(/^r\d+-/, '') : undefined, expected);
    });
  }

  it('the winner replaces the others: caps are not intersected', () => {
    const strictPlatform = rule('platform', '*', { perTxMax: 10n, dailyMax: 10n });
    const generousTenant = rule('tenant', '*', { perTxMax: 1_000_000n, dailyMax: 1_000_000n });
    const won = winningRule([strictPlatform, generousTenant], target, 'pago_movil')!;
    assert.equal(won, generousTenant);
    assert.equal(ruleBreach(won, { dayAmount: 0n, dayCount: 0n, monthAmount: 0n }, 500n), undefined);
  });

  it('a payout without a customer ignores customer rules', () => {
    const won = winningRule(
      [rule('customer', '*'), rule('tenant', '*')],
      { tenantId: T, customerId: null, beneficiaryId: B },
      'pago_movil',
    );
    assert.equal(won?.scope, 'tenant');
  });

  it('usage shows the winning rule for *, else pago_movil, else transferencia', () => {
    const t = { tenantId: T, customerId: null, beneficiaryId: null };
    assert.equal(usageRule([rule('tenant', 'transferencia'), rule('tenant', 'pago_movil')], t)?.method, 'pago_movil');
    assert.equal(usageRule([rule('tenant', 'transferencia'), rule('tenant', '*')], t)?.method, '*');
    assert.equal(usageRule([rule('tenant', 'transferencia')], t)?.method, 'transferencia');
    assert.equal(usageRule([], t), undefined);
  });

  it("usage: a more specific rule for one instrument does not hide a less specific '*' rule", () => {
    const c = { tenantId: T, customerId: C, beneficiaryId: null };
    const tenantAny = rule('tenant', '*');
    const tenantPagoMovil = rule('tenant', 'pago_movil');
    const customerTransfer = rule('customer', 'transferencia');
    assert.equal(usageRule([customerTransfer, tenantPagoMovil, tenantAny], c), tenantAny);
    assert.equal(usageRule([customerTransfer, tenantPagoMovil], c), tenantPagoMovil, 'the winner for pago_movil');
    assert.equal(
      usageRule([customerTransfer, rule('platform', 'transferencia')], c),
      customerTransfer,
      'the winner for transferencia',
    );
    const customerAny = rule('customer', '*');
    assert.equal(usageRule([customerTransfer, customerAny, tenantAny], c), customerAny);
  });
});

describe('rule breaches', () => {
  const r = rule('tenant', '*', { perTxMax: 1000n, dailyMax: 3000n, monthlyMax: 10_000n, dailyCountMax: 3n });
  const zero = { dayAmount: 0n, dayCount: 0n, monthAmount: 0n };
  it('per_tx_max', () => assert.deepEqual(ruleBreach(r, zero, 1001n)?.rule, 'per_tx_max'));
  it('daily_max counts what was consumed today', () => {
    const breach = ruleBreach(r, { dayAmount: 2500n, dayCount: 1n, monthAmount: 2500n }, 600n)!;
    assert.equal(breach.rule, 'daily_max');
    assert.equal(breach.exceededBy, 100n);
    assert.equal(breach.cap, 3000n);
  });
  it('monthly_max', () =>
    assert.equal(ruleBreach(r, { dayAmount: 0n, dayCount: 0n, monthAmount: 9500n }, 600n)?.rule, 'monthly_max'));
  it('daily_count_max', () =>
    assert.equal(ruleBreach(r, { dayAmount: 100n, dayCount: 3n, monthAmount: 100n }, 10n)?.rule, 'daily_count_max'));
  it('exactly at the cap passes', () =>
    assert.equal(ruleBreach(r, { dayAmount: 2000n, dayCount: 2n, monthAmount: 2000n }, 1000n), undefined));
});
