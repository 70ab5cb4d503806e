// The bank-side check without a person: each live connector's statement of a day is pulled from the
// bank (the connector's `statement`) and matched by the same import as a file an operator posts
// (rail-statements.ts), so a bank that paid what we refunded is an anomaly the next morning. One
// process pulls a rail's day at a time (a lease on its row); a failed attempt is retried with a
// backoff, and after STATEMENT_PULL_ATTEMPTS_MAX (or a statement we cannot read) it is given up with
// a `statement_pull_failed` anomaly: nothing about a day that was not checked is silent.
import { Readable } from 'node:stream';
import type { Database } from '../db/database.ts';
import { openAnomalies } from '../db/repositories/anomalies.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  claimStatementPull,
  failStatementPull,
  findStatementPull,
  finishStatementPull,
  type RailStatementPullRow,
} from '../db/repositories/rail-statement-pulls.ts';
import type { AnomalyKind } from '../domain/anomalies.ts';
import type { AuditActor } from '../domain/audit.ts';
import { businessDate, isValidDate, nextDate, startOfBusinessDate } from '../domain/caracas-time.ts';
import type { Clock } from '../domain/clock.ts';
import { csvQuoted } from '../domain/csv-cell.ts';
import { ApiError, notFound, validationFailed } from '../domain/errors.ts';
import { parseColumnMapping, type ColumnMapping } from '../domain/rail-statement.ts';
import { RailNotReceivedError, RailStatementNotReady, type RailStatementEntry } from '../rails/rail.ts';
import type { RailRegistry } from './rail-registry.ts';
import type { RailStatementService } from './rail-statements.ts';
import { assert } from '../domain/assert.ts';

/** Attempts at one rail's day before it is given up (with an anomaly). */
export const STATEMENT_PULL_ATTEMPTS_MAX = 10;
/** The first retry's wait; each next one doubles, up to STATEMENT_PULL_BACKOFF_MAX_MS (10 attempts span about 6 hours). */
const STATEMENT_PULL_BACKOFF_MS = 5 * 60_000;
const STATEMENT_PULL_BACKOFF_MAX_MS = 60 * 60_000;
/** One attempt, the bank's pages and our matching together, at most: a 100,000-line day matched in 6 to 13 s. */
const STATEMENT_PULL_TIMEOUT_MS = 5 * 60_000;
/** A process's hold on an attempt: past the attempt's own bound, so a killed process is replaced after it. */
const STATEMENT_PULL_LEASE_MS = STATEMENT_PULL_TIMEOUT_MS + 60_000;
const STATEMENT_HEADER = 'reference,bank_reference,amount,status,value_date';
const ERROR_LENGTH_MAX = 200;

export type PullState = 'done' | 'in_progress' | 'retrying' | 'gave_up';

export function pullStateOf(row: RailStatementPullRow, now: Date): PullState {
  if (row.done_at !== null) return 'done';
  if (row.gave_up_at !== null) return 'gave_up';
  return row.leased_until !== null && row.leased_until.getTime() > now.getTime() ? 'in_progress' : 'retrying';
}

const STANDARD_COLUMNS = parseColumnMapping(undefined) as ColumnMapping;

async function* csvOf(entries: AsyncIterable<RailStatementEntry>): AsyncGenerator<string> {
  yield `${STATEMENT_HEADER}\n`;
  for await (const e of entries)
    yield `${[e.reference, e.bankReference, e.amountMinor, e.status, e.valueDate].map(csvQuoted).join(',')}\n`;
}

/** What a failed attempt met, in words safe to store and show (never a URL or a key). */
function failureOf(error: unknown): { error: string; definitive: boolean } {
  if (error instanceof RailStatementNotReady)
    return { error: 'not_ready: the rail has no statement of that day yet', definitive: false };
  if (error instanceof ApiError)
    return {
      error: `${error.code}: ${error.message}`.slice(0, ERROR_LENGTH_MAX),
      definitive: error.code === 'statement_malformed',
    };
  if (error instanceof RailNotReceivedError)
    return { error: 'unreachable: the rail could not be reached', definitive: false };
  if ((error as Error)?.name === 'TimeoutError' || (error as Error)?.name === 'AbortError')
    return { error: 'timeout: the pull did not end in time', definitive: false };
  return {
    error: `failed: ${String((error as Error)?.message ?? error)}`.slice(0, ERROR_LENGTH_MAX),
    definitive: false,
  };
}

export class RailStatementPullService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly registry: Pick<RailRegistry, 'named' | 'list' | 'routing'>,
    private readonly statements: RailStatementService,
    private readonly metrics?: { anomalyRecorded(kind: AnomalyKind): void },
  ) {}

  /** The connectors that serve live money and can give their statement: the rails pulled daily. */
  async liveRails(): Promise<string[]> {
    const { settings } = await this.registry.routing();
    const live = new Set(settings.filter((setting) => setting.modes.includes('live')).map((setting) => setting.name));
    return this.registry
      .list()
      .filter((rail) => rail.kind === 'connector' && rail.adapter.statement !== undefined && live.has(rail.name))
      .map((rail) => rail.name);
  }

  /**
   * One attempt at `rail`'s statement of `day`, when it is due (or `force`: an operator's pull, even of
   * a day done or given up). Undefined: not due, or another process's attempt is under way.
   */
  async pull(
    name: string,
    day: string,
    options: { actor: AuditActor; force: boolean },
  ): Promise<RailStatementPullRow | undefined> {
    const rail = this.registry.named(name);
    if (!rail) throw notFound('rail');
    const statement = rail.adapter.statement?.bind(rail.adapter);
    if (!statement)
      throw validationFailed([
        {
          field: 'rail',
          message: `rail ${name} gives no statement (only a bank connector does); post its file to /v1/admin/rails/${name}/statements instead`,
        },
      ]);
    const now = this.clock.now();
    const dayEndsAt = startOfBusinessDate(nextDate(day));
    const claimed = await claimStatementPull(
      this.db,
      { rail: name, day },
      now,
      new Date(now.getTime() + STATEMENT_PULL_LEASE_MS),
      dayEndsAt,
      options.force,
    );
    if (!claimed) return undefined;
    try {
      const signal = AbortSignal.timeout(STATEMENT_PULL_TIMEOUT_MS);
      const imported = await this.statements.import({
        rail: name,
        day,
        mapping: STANDARD_COLUMNS,
        body: Readable.from(csvOf(statement(day, signal))),
        actor: options.actor,
      });
      return await finishStatementPull(this.db, { rail: name, day }, imported.statement.id, this.clock.now());
    } catch (error) {
      return this.failed(name, day, claimed.attempts, failureOf(error));
    }
  }

  /**
   * An operator's pull of `rail`'s day, now, whatever its state (a day done is matched again: the
   * bank may have corrected its record). `started` false: another process's attempt is under way, and
   * its row is answered.
   */
  async forcePull(
    name: string,
    day: string,
    actor: AuditActor,
  ): Promise<{ pull: RailStatementPullRow; started: boolean; state: PullState }> {
    if (!isValidDate(day)) throw validationFailed([{ field: 'day', message: 'a date, YYYY-MM-DD' }]);
    if (day > businessDate(this.clock.now()))
      throw validationFailed([{ field: 'day', message: `${day} has not begun in Caracas yet` }]);
    const pulled = await this.pull(name, day, { actor, force: true });
    if (pulled) {
      const state = pullStateOf(pulled, this.clock.now());
      const after = {
        day,
        state,
        attempts: pulled.attempts,
        statementId: pulled.statement_id,
        error: pulled.last_error,
      };
      await recordAudit(this.db, {
        actor,
        action: 'rail_statement.pull',
        target: { type: 'rail', id: name },
        before: null,
        after,
      });
      return { pull: pulled, started: true, state };
    }
    const held = await findStatementPull(this.db, { rail: name, day });
    assert(held, 'a pull that was not claimed has no row');
    return { pull: held, started: false, state: pullStateOf(held, this.clock.now()) };
  }

  private async failed(
    rail: string,
    day: string,
    attempts: number,
    failure: { error: string; definitive: boolean },
  ): Promise<RailStatementPullRow> {
    const now = this.clock.now();
    const giveUp = failure.definitive || attempts >= STATEMENT_PULL_ATTEMPTS_MAX;
    const backoffMs = Math.min(
      STATEMENT_PULL_BACKOFF_MAX_MS,
      STATEMENT_PULL_BACKOFF_MS * 2 ** Math.min(attempts - 1, 20),
    );
    let opened = false;
    const row = await this.db.transaction(async (tx) => {
      const stored = await failStatementPull(
        tx,
        { rail, day },
        { error: failure.error, nextAttemptAt: new Date(now.getTime() + backoffMs), gaveUpAt: giveUp ? now : null },
      );
      if (giveUp) {
        const [anomaly] = await openAnomalies(
          tx,
          [
            {
              kind: 'statement_pull_failed',
              tenantId: null,
              mode: null,
              paymentId: null,
              ours: { rail, day, attempts: String(attempts) },
              theirs: { error: failure.error },
              raw: { rail, day, attempts, error: failure.error },
              dedupKey: `statement_pull_failed:${rail}:${day}`,
              reportedAt: now,
            },
          ],
          now,
        );
        opened = anomaly!.created;
      }
      return stored;
    });
    if (opened) this.metrics?.anomalyRecorded('statement_pull_failed');
    return row;
  }
}
