import type { Consumption } from '../../domain/limit-rules.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Instrument } from '../../domain/instrument.ts';

type SubjectKind = 'tenant' | 'customer' | 'beneficiary';

export interface UsageKey {
  tenantId: string;
  mode: Mode;
  kind: SubjectKind;
  subjectId: string;
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
