import type { LimitRule, LimitScope, RuleMethod } from '../../domain/limit-rules.ts';
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

interface LimitRuleRow {
  id: string;
  scope: LimitScope;
  tenant_id: string | null;
  subject_id: string | null;
  method: RuleMethod;
  per_tx_max: bigint;
  daily_max: bigint;
  monthly_max: bigint | null;
  daily_count_max: bigint | null;
  created_at: Date;
}

export type StoredLimitRule = LimitRule & { createdAt: Date };

const COLUMNS =
  'id, scope, tenant_id, subject_id, method, per_tx_max, daily_max, monthly_max, daily_count_max, created_at';

function toRule(row: LimitRuleRow): StoredLimitRule {
  return {
    id: row.id,
    scope: row.scope,
    tenantId: row.tenant_id,
    subjectId: row.subject_id,
    method: row.method,
    perTxMax: row.per_tx_max,
    dailyMax: row.daily_max,
    monthlyMax: row.monthly_max,
    dailyCountMax: row.daily_count_max,
    createdAt: row.created_at,
  };
}

/**
 * Starts a change of the rules, inside the transaction that makes it: a new epoch (payout batches
 * then know their cached rules are stale), and a lock that makes concurrent rule changes take turns.
 */
async function bumpEpoch(tx: Queryable): Promise<void> {
  await tx.query('UPDATE limit_rule_epoch SET epoch = epoch + 1 WHERE singleton');
}

/** The current version of the rules (see migration 013). */
export async function ruleEpoch(db: Queryable): Promise<bigint> {
  const { rows } = await db.query<{ epoch: bigint }>('SELECT epoch FROM limit_rule_epoch WHERE singleton');
  return rows[0]?.epoch ?? 0n;
}

/** Creates a rule; a live rule for the same (scope, tenant, subject, method) is replaced, and returned as `replaced`. */
export async function replaceLimitRule(
  tx: Queryable,
  rule: LimitRule,
  at: Date,
): Promise<{ rule: StoredLimitRule; replaced: StoredLimitRule | undefined }> {
  await bumpEpoch(tx);
  const retired = new Params();
  const { rows: replaced } = await tx.query<LimitRuleRow>(
    `UPDATE limit_rules SET deleted_at = ${retired.add(at)}
      WHERE deleted_at IS NULL AND scope = ${retired.add(rule.scope)} AND tenant_id IS NOT DISTINCT FROM ${retired.add(rule.tenantId)}
        AND subject_id IS NOT DISTINCT FROM ${retired.add(rule.subjectId)} AND method = ${retired.add(rule.method)}
      RETURNING ${COLUMNS}`,
    retired.values,
  );
  const p = new Params();
  const { rows } = await tx.query<LimitRuleRow>(
    `INSERT INTO limit_rules (id, scope, tenant_id, subject_id, method, per_tx_max, daily_max, monthly_max, daily_count_max, created_at)
     VALUES (${p.add(rule.id)}, ${p.add(rule.scope)}, ${p.add(rule.tenantId)}, ${p.add(rule.subjectId)}, ${p.add(rule.method)},
       ${p.add(rule.perTxMax)}, ${p.add(rule.dailyMax)}, ${p.add(rule.monthlyMax)}, ${p.add(rule.dailyCountMax)}, ${p.add(at)}) RETURNING ${COLUMNS}`,
    p.values,
  );
  return { rule: toRule(rows[0]!), replaced: replaced[0] ? toRule(replaced[0]) : undefined };
}

export async function listLimitRules(db: Queryable, tenantId?: string): Promise<StoredLimitRule[]> {
  const p = new Params();
  const tenant = p.add(tenantId ?? null);
  const { rows } = await db.query<LimitRuleRow>(
    `SELECT ${COLUMNS} FROM limit_rules WHERE deleted_at IS NULL AND (${tenant}::uuid IS NULL OR tenant_id = ${tenant} OR tenant_id IS NULL)
      ORDER BY created_at, id`,
    p.values,
  );
  return rows.map(toRule);
}

/** Deletes a live rule; returns it, or undefined when no live rule has this id. */
export async function deleteLimitRule(tx: Queryable, id: string, at: Date): Promise<StoredLimitRule | undefined> {
  await bumpEpoch(tx);
  const p = new Params();
  const { rows } = await tx.query<LimitRuleRow>(
    `UPDATE limit_rules SET deleted_at = ${p.add(at)} WHERE id = ${p.add(id)} AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0] ? toRule(rows[0]) : undefined;
}
