// Storage of the daily statement pulls (migration 037): one row per rail and day. A process claims a
// row by leasing it (leased_until), so two worker processes never pull one day of one rail at once,
// and a process killed mid-pull is replaced once the lease has passed.
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

export interface RailStatementPullRow {
  rail: string;
  value_date: string;
  attempts: number;
  next_attempt_at: Date;
  leased_until: Date | null;
  last_attempt_at: Date | null;
  last_error: string | null;
  statement_id: string | null;
  done_at: Date | null;
  gave_up_at: Date | null;
}

const COLUMNS =
  'rail, value_date::text AS value_date, attempts, next_attempt_at, leased_until, last_attempt_at, last_error, statement_id, done_at, gave_up_at';

/** The row of one rail and day, its parameters added to `p`. */
const pullOf = (p: Params, key: { rail: string; day: string }) =>
  `rail = ${p.add(key.rail)} AND value_date = ${p.add(key.day)}::date`;

/**
 * Claims the pull of `rail`'s statement of `day` for one attempt (the row is made on the first claim):
 * the row with its attempts counted, or undefined when it is done, given up, or not due (another
 * process holds it, or its backoff has not passed). Done means done after `dayEndsAt`: a pull of the
 * day so far (an operator's, during the day) leaves the day's own pull due. `force`: due now even when
 * done, given up or backing off (an operator's pull), though never while another process's lease runs.
 */
export async function claimStatementPull(
  db: Queryable,
  key: { rail: string; day: string },
  at: Date,
  leaseUntil: Date,
  dayEndsAt: Date,
  force: boolean,
): Promise<RailStatementPullRow | undefined> {
  const made = new Params();
  await db.query(
    `INSERT INTO rail_statement_pulls (rail, value_date, next_attempt_at) VALUES (${made.add(key.rail)}, ${made.add(key.day)}::date, ${made.add(at)})
     ON CONFLICT (rail, value_date) DO NOTHING`,
    made.values,
  );
  const p = new Params();
  const attemptAt = p.add(at);
  const { rows } = await db.query<RailStatementPullRow>(
    `UPDATE rail_statement_pulls
        SET attempts = attempts + 1, last_attempt_at = ${attemptAt}, leased_until = ${p.add(leaseUntil)}
      WHERE ${pullOf(p, key)}
        AND (leased_until IS NULL OR leased_until <= ${attemptAt})
        AND (${p.add(force)} OR ((done_at IS NULL OR done_at < ${p.add(dayEndsAt)}) AND gave_up_at IS NULL AND next_attempt_at <= ${attemptAt}))
      RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0];
}

/** The pull ended with that day's statement matched (or found already stored). */
export async function finishStatementPull(
  db: Queryable,
  key: { rail: string; day: string },
  statementId: string,
  at: Date,
): Promise<RailStatementPullRow> {
  const p = new Params();
  const { rows } = await db.query<RailStatementPullRow>(
    `UPDATE rail_statement_pulls SET statement_id = ${p.add(statementId)}, done_at = ${p.add(at)}, gave_up_at = NULL, last_error = NULL, leased_until = NULL
      WHERE ${pullOf(p, key)} RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0]!;
}

/** The attempt failed: `error` kept, the next one not before `nextAttemptAt`, or none (`gaveUp`). */
export async function failStatementPull(
  db: Queryable,
  key: { rail: string; day: string },
  failure: { error: string; nextAttemptAt: Date; gaveUpAt: Date | null },
): Promise<RailStatementPullRow> {
  const p = new Params();
  const { rows } = await db.query<RailStatementPullRow>(
    `UPDATE rail_statement_pulls
        SET last_error = left(${p.add(failure.error)}, 500), next_attempt_at = ${p.add(failure.nextAttemptAt)}, gave_up_at = ${p.add(failure.gaveUpAt)}, done_at = NULL, leased_until = NULL
      WHERE ${pullOf(p, key)} RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0]!;
}

/** The pull of `rail`'s statement of `day`, if it was ever tried. */
export async function findStatementPull(
  db: Queryable,
  key: { rail: string; day: string },
): Promise<RailStatementPullRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<RailStatementPullRow>(
    `SELECT ${COLUMNS} FROM rail_statement_pulls WHERE ${pullOf(p, key)}`,
    p.values,
  );
  return rows[0];
}

/** Each rail's pull of its latest day. */
export async function latestStatementPulls(db: Queryable): Promise<RailStatementPullRow[]> {
  const { rows } = await db.query<RailStatementPullRow>(
    `SELECT DISTINCT ON (rail) ${COLUMNS} FROM rail_statement_pulls ORDER BY rail, value_date DESC`,
  );
  return rows;
}

/** Each rail's statement matched last (posted or pulled): its day, when, and what it found. */
export async function latestStatementChecks(db: Queryable): Promise<
  Array<{
    rail: string;
    id: string;
    value_date: string;
    created_at: Date;
    line_count: number;
    matched: number;
    mismatches: number;
    anomalies_opened: number;
  }>
> {
  const { rows } = await db.query<{
    rail: string;
    id: string;
    value_date: string;
    created_at: Date;
    line_count: number;
    matched: number;
    mismatches: number;
    anomalies_opened: number;
  }>(
    `SELECT DISTINCT ON (rail) rail, id, value_date::text AS value_date, created_at, line_count, matched,
            unknown_reference + missing_at_rail + amount_mismatch + status_mismatch + bank_reference_mismatch AS mismatches, anomalies_opened
       FROM rail_statements ORDER BY rail, created_at DESC, id DESC`,
  );
  return rows;
}
