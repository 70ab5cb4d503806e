import type { Mode } from '../../domain/api-keys.ts';
import type { Consumption } from '../../domain/limit-rules.ts';
import type { Instrument } from '../../domain/payout-route.ts';
import type { Queryable } from '../database.ts';

export type SubjectKind = 'tenant' | 'customer' | 'beneficiary';

export interface UsageKey {
  tenantId: string;
  mode: Mode;
  kind: SubjectKind;
  subjectId: string;
}

/** Gives back what a failed or reversed payout consumed. */
export async function releaseUsage(tx: Queryable, key: UsageKey, method: Instrument, day: string, amount: bigint): Promise<void> {
  await tx.query(
    `UPDATE limit_usage SET amount = amount - $7, count = count - 1
      WHERE tenant_id = $1 AND mode = $2 AND subject_kind = $3 AND subject_id = $4 AND method = $5 AND business_date = $6`,
    [key.tenantId, key.mode, key.kind, key.subjectId, method, day, amount],
  );
}

/** Day and month consumption of a subject over the given instruments (month = first day .. `day`). */
export async function readUsage(db: Queryable, key: UsageKey, methods: readonly Instrument[], day: string, monthStart: string): Promise<Consumption> {
  const { rows } = await db.query<{ day_amount: bigint; day_count: bigint; month_amount: bigint }>(
    `SELECT coalesce(sum(amount) FILTER (WHERE business_date = $6::date), 0)::bigint AS day_amount,
            coalesce(sum(count) FILTER (WHERE business_date = $6::date), 0)::bigint AS day_count,
            coalesce(sum(amount), 0)::bigint AS month_amount
       FROM limit_usage
      WHERE tenant_id = $1 AND mode = $2 AND subject_kind = $3 AND subject_id = $4 AND method = ANY($5::text[])
        AND business_date BETWEEN $7::date AND $6::date`,
    [key.tenantId, key.mode, key.kind, key.subjectId, methods, day, monthStart],
  );
  const row = rows[0]!;
  return { dayAmount: row.day_amount, dayCount: row.day_count, monthAmount: row.month_amount };
}

export interface UsageRowKey {
  kind: SubjectKind;
  subjectId: string;
  method: Instrument;
}

/** Month-to-date consumption before `day` for some subjects (past days never change but by release). */
export async function pastMonthUsage(
  db: Queryable,
  partition: { tenantId: string; mode: Mode },
  monthStart: string,
  day: string,
  subjects: ReadonlyArray<{ kind: SubjectKind; subjectId: string }>,
): Promise<Array<UsageRowKey & { amount: bigint }>> {
  if (subjects.length === 0) return [];
  const { rows } = await db.query<{ subject_kind: SubjectKind; subject_id: string; method: Instrument; amount: bigint }>(
    `SELECT u.subject_kind, u.subject_id, u.method, sum(u.amount)::bigint AS amount
       FROM limit_usage u JOIN unnest($5::text[], $6::uuid[]) AS s(kind, subject_id)
         ON u.subject_kind = s.kind AND u.subject_id = s.subject_id
      WHERE u.tenant_id = $1 AND u.mode = $2 AND u.business_date >= $3::date AND u.business_date < $4::date
      GROUP BY u.subject_kind, u.subject_id, u.method`,
    [partition.tenantId, partition.mode, monthStart, day, subjects.map((s) => s.kind), subjects.map((s) => s.subjectId)],
  );
  return rows.map((r) => ({ kind: r.subject_kind, subjectId: r.subject_id, method: r.method, amount: r.amount }));
}
