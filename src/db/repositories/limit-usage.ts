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

/** Adds to one day's counter, creating it; takes the row lock until the transaction ends. */
export async function addUsage(tx: Queryable, key: UsageKey, method: Instrument, day: string, amount: bigint, count: bigint): Promise<void> {
  await tx.query(
    `INSERT INTO limit_usage (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
     DO UPDATE SET amount = limit_usage.amount + EXCLUDED.amount, count = limit_usage.count + EXCLUDED.count`,
    [key.tenantId, key.mode, key.kind, key.subjectId, method, day, amount, count],
  );
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
