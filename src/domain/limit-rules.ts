// Which configured limit rule governs a payout: the most specific scope that has a
// rule for the payout's instrument or for '*' wins — beneficiary, then customer, then tenant, then
// platform; within that scope a concrete instrument beats '*'. The winner replaces every other rule
// entirely: caps are never intersected.

import type { LimitBreach } from './instrument-caps.ts';
import type { Instrument } from './instrument.ts';

export type LimitScope = 'platform' | 'tenant' | 'customer' | 'beneficiary';
export type RuleMethod = Instrument | '*';

export interface LimitRule {
  id: string;
  scope: LimitScope;
  tenantId: string | null;
  subjectId: string | null;
  method: RuleMethod;
  perTxMax: bigint;
  dailyMax: bigint;
  monthlyMax: bigint | null;
  dailyCountMax: bigint | null;
}

export interface LimitTarget {
  tenantId: string;
  customerId: string | null;
  beneficiaryId: string | null;
}

const SCOPE_PRECEDENCE: readonly LimitScope[] = ['beneficiary', 'customer', 'tenant', 'platform'];

function appliesTo(rule: LimitRule, scope: LimitScope, target: LimitTarget): boolean {
  if (rule.scope !== scope) return false;
  switch (scope) {
    case 'platform':
      return true;
    case 'tenant':
      return rule.tenantId === target.tenantId;
    case 'customer':
      return target.customerId !== null && rule.tenantId === target.tenantId && rule.subjectId === target.customerId;
    case 'beneficiary':
      return (
        target.beneficiaryId !== null && rule.tenantId === target.tenantId && rule.subjectId === target.beneficiaryId
      );
  }
}

/** The rule that governs a payout by `method` for `target`, or undefined when none is configured. */
export function winningRule(
  rules: readonly LimitRule[],
  target: LimitTarget,
  method: Instrument,
): LimitRule | undefined {
  for (const scope of SCOPE_PRECEDENCE) {
    const here = rules.filter((rule) => appliesTo(rule, scope, target));
    const concrete = here.find((rule) => rule.method === method);
    if (concrete) return concrete;
    const any = here.find((rule) => rule.method === '*');
    if (any) return any;
  }
  return undefined;
}

/**
 * For GET /limits/usage: the winning rule for '*' (the most specific scope with a '*' rule), else
 * the winning rule for pago_movil, else for transferencia. A more specific rule for one instrument
 * does not hide a '*' rule: it governs only that instrument.
 */
export function usageRule(rules: readonly LimitRule[], target: LimitTarget): LimitRule | undefined {
  for (const scope of SCOPE_PRECEDENCE) {
    const any = rules.find((rule) => appliesTo(rule, scope, target) && rule.method === '*');
    if (any) return any;
  }
  return winningRule(rules, target, 'pago_movil') ?? winningRule(rules, target, 'transferencia');
}

/** Whom a rule's consumption is counted against: platform and tenant rules per tenant. */
export function countedSubject(
  rule: LimitRule,
  target: LimitTarget,
): { kind: 'tenant' | 'customer' | 'beneficiary'; id: string } {
  if (rule.scope === 'customer') return { kind: 'customer', id: target.customerId! };
  if (rule.scope === 'beneficiary') return { kind: 'beneficiary', id: target.beneficiaryId! };
  return { kind: 'tenant', id: target.tenantId };
}

export interface Consumption {
  dayAmount: bigint;
  dayCount: bigint;
  monthAmount: bigint;
}

/**
 * The first cap a payout of `amount` breaks, given what was consumed BEFORE it. Measured on the
 * delivered amount.
 */
export function ruleBreach(rule: LimitRule, consumed: Consumption, amount: bigint): LimitBreach | undefined {
  const breach = (name: LimitBreach['rule'], cap: bigint, attempted: bigint): LimitBreach | undefined =>
    attempted > cap
      ? {
          rule: name,
          cap,
          scope: rule.scope,
          method: rule.method,
          attempted,
          exceededBy: attempted - cap,
          ruleId: rule.id,
        }
      : undefined;
  return (
    breach('per_tx_max', rule.perTxMax, amount) ??
    breach('daily_max', rule.dailyMax, consumed.dayAmount + amount) ??
    (rule.monthlyMax === null ? undefined : breach('monthly_max', rule.monthlyMax, consumed.monthAmount + amount)) ??
    (rule.dailyCountMax === null ? undefined : breach('daily_count_max', rule.dailyCountMax, consumed.dayCount + 1n))
  );
}
