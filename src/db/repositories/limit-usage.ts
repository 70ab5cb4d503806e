import type { Consumption } from '../../domain/limit-rules.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Instrument } from '../../domain/instrument.ts';
import { Params } from './sql-params.ts';

type SubjectKind = 'tenant' | 'customer' | 'beneficiary';

export interface UsageKey {
  tenantId: string;
  mode: Mode;
  kind: SubjectKind;
  subjectId: string;
}

/** Day and month consumption of a subject over the given instruments (month = first day .. `day`). */
export async function readUsage(
  db: Queryable,
  key: UsageKey,
  methods: readonly Instrument[],
  day: string,
  monthStart: string,
): Promise<Consumption> {
  const p = new Params();
  const today = `${p.add(day)}::date`;
  const { rows } = await db.query<{ day_amount: bigint; day_count: bigint; month_amount: bigint }>(
    `SELECT coalesce(sum(amount) FILTER (WHERE business_date = ${today}), 0)::bigint AS day_amount,
            coalesce(sum(count) FILTER (WHERE business_date = ${today}), 0)::bigint AS day_count,
            coalesce(sum(amount), 0)::bigint AS month_amount
       FROM limit_usage
      WHERE tenant_id = ${p.add(key.tenantId)} AND mode = ${p.add(key.mode)} AND subject_kind = ${p.add(key.kind)} AND subject_id = ${p.add(key.subjectId)}
        AND method = ANY(${p.add(methods)}::text[])
        AND business_date BETWEEN ${p.add(monthStart)}::date AND ${today}`,
    p.values,
  );
  const row = rows[0]!;
  return { dayAmount: row.day_amount, dayCount: row.day_count, monthAmount: row.month_amount };
}
