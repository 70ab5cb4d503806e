import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import {
  pastMonthUsage,
  readUsage,
  releaseUsage,
  type SubjectKind,
  type UsageKey,
  type UsageRowKey,
} from '../db/repositories/limit-usage.ts';
import { deleteLimitRule, listLimitRules, replaceLimitRule, type StoredLimitRule } from '../db/repositories/limit-rules.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import type { Mode } from '../domain/api-keys.ts';
import { businessDate } from '../domain/caracas-time.ts';
import type { Clock } from '../domain/clock.ts';
import { instrumentCapBreach, type LimitBreach } from '../domain/instrument-caps.ts';
import { countedSubject, ruleBreach, usageRule, winningRule, type LimitRule, type LimitTarget } from '../domain/limit-rules.ts';
import type { Instrument } from '../domain/payout-route.ts';
import { notFound, validationFailed } from '../http/errors.ts';
import { limitExceeded, type LimitAllocator, type LimitSubject, type AllocationPlan, type PayoutLimitPolicy, type ReleasablePayment, type UsageIncrements } from './payout-limits.ts';

const RULE_CACHE_TTL_MS = 1000;
const METHODS: readonly Instrument[] = ['pago_movil', 'transferencia'];

const monthStartOf = (day: string) => `${day.slice(0, 7)}-01`;
const keyOf = (k: UsageRowKey) => `${k.kind}|${k.subjectId}|${k.method}`;

/**
 * Instrument caps plus configured rules. Usage is counted per tenant, customer and beneficiary in
 * day counters; `allocate` locks them inside the payout transaction and checks the
 * winning rule against the locked totals, so concurrent payouts can never jointly pass a cap.
 */
export class LimitService implements PayoutLimitPolicy {
  private cache: { rules: StoredLimitRule[]; expiresAtMs: number } | undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Inside a transaction, pass it: on the embedded engine (one connection) a read outside the open
   * transaction would wait for it to end, forever.
   */
  private async rules(db: Queryable = this.db): Promise<StoredLimitRule[]> {
    const now = Date.now();
    if (this.cache && this.cache.expiresAtMs > now) return this.cache.rules;
    const rules = await listLimitRules(db);
    this.cache = { rules, expiresAtMs: now + RULE_CACHE_TTL_MS };
    return rules;
  }

  private target(subject: { tenantId: string; customerId: string | null; beneficiaryId: string }): LimitTarget {
    return { tenantId: subject.tenantId, customerId: subject.customerId, beneficiaryId: subject.beneficiaryId || null };
  }

  /** Read-only check, in the order of checks before anything is written. */
  async check(db: Queryable, subject: LimitSubject): Promise<void> {
    const cap = instrumentCapBreach(subject.method, subject.amount);
    if (cap) throw limitExceeded(cap);
    const target = this.target(subject);
    const rule = winningRule(await this.rules(db), target, subject.method);
    if (!rule) return;
    const day = businessDate(subject.at);
    const consumed = await readUsage(db, this.usageKey(subject, rule, target), rule.method === '*' ? METHODS : [subject.method], day, monthStartOf(day));
    const breach = ruleBreach(rule, consumed, subject.amount);
    if (breach) throw limitExceeded(breach);
  }

  /** A failed or reversed payout stops counting, in the transaction that records the outcome. */
  async release(tx: Queryable, payment: ReleasablePayment): Promise<void> {
    if (!payment.method) return;
    const day = businessDate(payment.created_at);
    const target = { tenantId: payment.tenant_id, customerId: payment.customer_id, beneficiaryId: payment.beneficiary_id };
    for (const key of this.subjectsOf(payment.tenant_id, payment.mode, target)) {
      await releaseUsage(tx, key, payment.method, day, payment.payout_amount);
    }
  }

  /**
   * Check and consume for a group commit, in two steps. This one works out which of the day's
   * counters the batch must lock (sorted, so concurrent batches lock in one order), reading nothing
   * but the cached rules. The caller locks them — before any ledger account, as every other path
   * does — and hands the locked rows to `allocator`, which lets it decide payout by payout against
   * running totals and gives back the accepted payouts' increments to write.
   */
  async prepareAllocation(tx: Queryable, at: Date, subjects: readonly LimitSubject[]): Promise<AllocationPlan> {
    const rules = await this.rules(tx);
    const day = businessDate(at);
    const plans = subjects.map((subject) => {
      const target = this.target(subject);
      const rule = winningRule(rules, target, subject.method);
      const tracked = this.subjectsOf(subject.tenantId, subject.mode, target).map((k) => ({ kind: k.kind, subjectId: k.subjectId, method: subject.method }));
      const counted = rule ? countedSubject(rule, target) : undefined;
      const measured: UsageRowKey[] = rule && counted ? (rule.method === '*' ? METHODS : [subject.method]).map((method) => ({ kind: counted.kind, subjectId: counted.id, method })) : [];
      return { subject, rule, tracked, measured };
    });
    const toLock = new Map<string, UsageRowKey>();
    for (const plan of plans) for (const key of [...plan.tracked, ...plan.measured]) toLock.set(keyOf(key), key);
    const sorted = [...toLock.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, key]) => key);
    return { day, keys: sorted, allocator: (lockedTx, partition, lockedRows) => this.allocator(lockedTx, partition, day, plans, lockedRows) };
  }

  private async allocator(
    tx: Queryable,
    partition: { tenantId: string; mode: Mode },
    day: string,
    plans: Array<{ subject: LimitSubject; rule: LimitRule | undefined; tracked: UsageRowKey[]; measured: UsageRowKey[] }>,
    lockedRows: ReadonlyArray<UsageRowKey & { amount: bigint; count: bigint }>,
  ): Promise<LimitAllocator> {
    const running = new Map<string, { amount: bigint; count: bigint }>();
    for (const row of lockedRows) running.set(keyOf(row), { amount: row.amount, count: row.count });
    const monthly = plans.filter((p) => p.rule?.monthlyMax !== null && p.rule !== undefined);
    const pastMonth = new Map<string, bigint>();
    if (monthly.length > 0) {
      const subjectsForMonth = [...new Map(monthly.flatMap((p) => p.measured).map((k) => [`${k.kind}|${k.subjectId}`, { kind: k.kind, subjectId: k.subjectId }])).values()];
      for (const row of await pastMonthUsage(tx, partition, monthStartOf(day), day, subjectsForMonth)) pastMonth.set(keyOf(row), row.amount);
    }
    const byPayment = new Map(plans.map((p) => [p.subject.paymentId, p]));
    const accepted: typeof plans = [];
    const keysAtWrite = (subject: LimitSubject) =>
      this.subjectsOf(subject.tenantId, subject.mode, this.target(subject)).map((k) => ({ kind: k.kind, subjectId: k.subjectId, method: subject.method }));
    return {
      check(subject: LimitSubject): LimitBreach | undefined {
        const cap = instrumentCapBreach(subject.method, subject.amount);
        if (cap) return cap;
        const plan = byPayment.get(subject.paymentId)!;
        if (!plan.rule) return undefined;
        let dayAmount = 0n;
        let dayCount = 0n;
        let monthAmount = 0n;
        for (const key of plan.measured) {
          const today = running.get(keyOf(key)) ?? { amount: 0n, count: 0n };
          dayAmount += today.amount;
          dayCount += today.count;
          monthAmount += today.amount + (pastMonth.get(keyOf(key)) ?? 0n);
        }
        return ruleBreach(plan.rule, { dayAmount, dayCount, monthAmount }, subject.amount);
      },
      consume(subject: LimitSubject): void {
        const plan = byPayment.get(subject.paymentId)!;
        for (const key of plan.tracked) {
          const current = running.get(keyOf(key)) ?? { amount: 0n, count: 0n };
          running.set(keyOf(key), { amount: current.amount + subject.amount, count: current.count + 1n });
        }
        accepted.push(plan);
      },
      increments(): UsageIncrements {
        const increments = new Map<string, UsageRowKey & { amount: bigint; count: bigint }>();
        for (const plan of accepted) {
          // Re-derived at write time: an inline beneficiary created in this batch now has its id.
          for (const key of keysAtWrite(plan.subject)) {
            const current = increments.get(keyOf(key)) ?? { ...key, amount: 0n, count: 0n };
            increments.set(keyOf(key), { ...current, amount: current.amount + plan.subject.amount, count: current.count + 1n });
          }
        }
        const rows = [...increments.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
        return { day, rows };
      },
    };
  }

  private subjectsOf(tenantId: string, mode: Mode, target: LimitTarget): UsageKey[] {
    const keys: UsageKey[] = [{ tenantId, mode, kind: 'tenant', subjectId: tenantId }];
    if (target.customerId) keys.push({ tenantId, mode, kind: 'customer', subjectId: target.customerId });
    if (target.beneficiaryId) keys.push({ tenantId, mode, kind: 'beneficiary', subjectId: target.beneficiaryId });
    return keys;
  }

  private usageKey(subject: { tenantId: string; mode: Mode }, rule: LimitRule, target: LimitTarget): UsageKey {
    const counted = countedSubject(rule, target);
    return { tenantId: subject.tenantId, mode: subject.mode, kind: counted.kind as SubjectKind, subjectId: counted.id };
  }

  /** GET /limits/usage: the subject's day and month figures, all instruments, and its rule. */
  async usage(partition: { tenantId: string; mode: Mode }, asset: string, customerId?: string) {
    const day = businessDate(this.clock.now());
    const key: UsageKey = customerId
      ? { ...partition, kind: 'customer', subjectId: customerId }
      : { ...partition, kind: 'tenant', subjectId: partition.tenantId };
    // Limits measure the delivered amount, which is always BS.
    const consumed =
      asset === 'BS' ? await readUsage(this.db, key, METHODS, day, monthStartOf(day)) : { dayAmount: 0n, dayCount: 0n, monthAmount: 0n };
    const rule = usageRule(await this.rules(), { tenantId: partition.tenantId, customerId: customerId ?? null, beneficiaryId: null });
    return { consumed, rule };
  }

  async createRule(input: Omit<LimitRule, 'id'>): Promise<StoredLimitRule> {
    const errors = ruleShapeErrors(input);
    if (errors.length > 0) throw validationFailed(errors);
    if (input.tenantId) {
      const tenant = await findTenant(this.db, input.tenantId);
      if (!tenant || tenant.is_platform) throw notFound('tenant');
    }
    const stored = await this.db.transaction((tx) => replaceLimitRule(tx, { ...input, id: randomUUID() }, this.clock.now()));
    this.cache = undefined;
    return stored;
  }

  async listRules(tenantId?: string): Promise<StoredLimitRule[]> {
    return listLimitRules(this.db, tenantId);
  }

  async deleteRule(id: string): Promise<void> {
    if (!(await deleteLimitRule(this.db, id, this.clock.now()))) throw notFound('limit rule');
    this.cache = undefined;
  }
}

function ruleShapeErrors(rule: Omit<LimitRule, 'id'>): Array<{ field: string; message: string }> {
  const errors: Array<{ field: string; message: string }> = [];
  if (rule.scope === 'platform' && rule.tenantId) errors.push({ field: 'tenantId', message: 'must be absent for a platform rule (it applies to every tenant)' });
  if (rule.scope !== 'platform' && !rule.tenantId) errors.push({ field: 'tenantId', message: `is required for a ${rule.scope} rule` });
  if ((rule.scope === 'customer' || rule.scope === 'beneficiary') && !rule.subjectId) {
    errors.push({ field: 'subjectId', message: `is required for a ${rule.scope} rule: the ${rule.scope} id` });
  }
  if ((rule.scope === 'platform' || rule.scope === 'tenant') && rule.subjectId) {
    errors.push({ field: 'subjectId', message: `must be absent for a ${rule.scope} rule` });
  }
  return errors;
}
