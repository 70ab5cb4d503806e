import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import { readUsage, type UsageKey } from '../db/repositories/limit-usage.ts';
import {
  deleteLimitRule,
  listLimitRules,
  replaceLimitRule,
  ruleEpoch,
  type StoredLimitRule,
} from '../db/repositories/limit-rules.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import type { AuditActor } from '../domain/audit.ts';
import { businessDate } from '../domain/caracas-time.ts';
import type { Clock } from '../domain/clock.ts';
import { usageRule, type LimitRule } from '../domain/limit-rules.ts';
import { notFound, validationFailed } from '../domain/errors.ts';
import type { Partition } from '../domain/partition.ts';
import { INSTRUMENTS } from '../domain/instrument.ts';

/** How long a process keeps the rules it read without asking whether they changed (payout batches always ask). */
const RULE_CACHE_TTL_MS = 1000;

const monthStartOf = (day: string) => `${day.slice(0, 7)}-01`;

/** The configured rules as of one epoch of the rules table. */
export interface RuleSet {
  rules: readonly StoredLimitRule[];
  epoch: bigint;
}

/** Where payout batches read the configured limit rules from. */
export interface LimitRuleSource {
  /**
   * The rules, possibly cached; the batch checks `epoch` against the current one under its locks.
   * Inside a transaction, pass it: on the embedded engine a read outside the open transaction would
   * wait for it forever.
   */
  ruleSet(db: Queryable): Promise<RuleSet>;
  /** Drops the cache: the next `ruleSet` reads the table. */
  forget(): void;
}

/**
 * Configured limit rules and usage figures. The rules are decided against by payout batches
 * (domain/commit/payout-decision.ts), which lock the day's counters, so concurrent payouts can never jointly
 * pass a cap; this service keeps the rules (cached for a second) and answers GET /limits/usage.
 */
export class LimitService implements LimitRuleSource {
  private cache: (RuleSet & { rules: StoredLimitRule[]; expiresAtMs: number }) | undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async rules(db: Queryable = this.db): Promise<StoredLimitRule[]> {
    return (await this.ruleSet(db)).rules as StoredLimitRule[];
  }

  async ruleSet(db: Queryable = this.db): Promise<RuleSet> {
    const now = Date.now();
    if (this.cache && this.cache.expiresAtMs > now) return this.cache;
    // The epoch first: rules changed after it only make the set newer than it claims, never older.
    const epoch = await ruleEpoch(db);
    const rules = await listLimitRules(db);
    this.cache = { rules, epoch, expiresAtMs: now + RULE_CACHE_TTL_MS };
    return this.cache;
  }

  forget(): void {
    this.cache = undefined;
  }

  /** GET /limits/usage: the subject's day and month figures, all instruments, and its rule. */
  async usage(partition: Partition, asset: string, customerId?: string) {
    const day = businessDate(this.clock.now());
    const key: UsageKey = customerId
      ? { ...partition, kind: 'customer', subjectId: customerId }
      : { ...partition, kind: 'tenant', subjectId: partition.tenantId };
    // Limits measure the delivered amount, which is always BS.
    const consumed =
      asset === 'BS'
        ? await readUsage(this.db, key, INSTRUMENTS, day, monthStartOf(day))
        : { dayAmount: 0n, dayCount: 0n, monthAmount: 0n };
    const rule = usageRule(await this.rules(), {
      tenantId: partition.tenantId,
      customerId: customerId ?? null,
      beneficiaryId: null,
    });
    return { consumed, rule };
  }

  async createRule(input: Omit<LimitRule, 'id'>, actor: AuditActor): Promise<StoredLimitRule> {
    const errors = ruleShapeErrors(input);
    if (errors.length > 0) throw validationFailed(errors);
    if (input.tenantId) {
      const tenant = await findTenant(this.db, input.tenantId);
      if (!tenant || tenant.is_platform) throw notFound('tenant');
    }
    const stored = await this.db.transaction(async (tx) => {
      const { rule, replaced } = await replaceLimitRule(tx, { ...input, id: randomUUID() }, this.clock.now());
      // The rule it replaced, if any, is the `before`: one row tells the whole change.
      await recordAudit(tx, {
        actor,
        action: 'limit_rule.create',
        target: ruleTarget(rule),
        before: replaced ? ruleFields(replaced) : null,
        after: ruleFields(rule),
      });
      return rule;
    });
    this.cache = undefined;
    return stored;
  }

  async listRules(tenantId?: string): Promise<StoredLimitRule[]> {
    return listLimitRules(this.db, tenantId);
  }

  async deleteRule(id: string, actor: AuditActor): Promise<void> {
    const deleted = await this.db.transaction(async (tx) => {
      const rule = await deleteLimitRule(tx, id, this.clock.now());
      if (rule)
        await recordAudit(tx, {
          actor,
          action: 'limit_rule.delete',
          target: ruleTarget(rule),
          before: ruleFields(rule),
          after: null,
        });
      return rule;
    });
    if (!deleted) throw notFound('limit rule');
    this.cache = undefined;
  }
}

const ruleTarget = (rule: StoredLimitRule) => ({ type: 'limit_rule' as const, id: rule.id, tenantId: rule.tenantId });

/** A rule as recorded: its id (a replaced rule's differs from the new one's) and its terms. */
function ruleFields(rule: StoredLimitRule): Record<string, unknown> {
  const { createdAt: _createdAt, ...fields } = rule;
  return fields;
}

function ruleShapeErrors(rule: Omit<LimitRule, 'id'>): Array<{ field: string; message: string }> {
  const errors: Array<{ field: string; message: string }> = [];
  if (rule.scope === 'platform' && rule.tenantId)
    errors.push({ field: 'tenantId', message: 'must be absent for a platform rule (it applies to every tenant)' });
  if (rule.scope !== 'platform' && !rule.tenantId)
    errors.push({ field: 'tenantId', message: `is required for a ${rule.scope} rule` });
  if ((rule.scope === 'customer' || rule.scope === 'beneficiary') && !rule.subjectId) {
    errors.push({ field: 'subjectId', message: `is required for a ${rule.scope} rule: the ${rule.scope} id` });
  }
  if ((rule.scope === 'platform' || rule.scope === 'tenant') && rule.subjectId) {
    errors.push({ field: 'subjectId', message: `must be absent for a ${rule.scope} rule` });
  }
  return errors;
}
