// Rail statements: the operator posts a rail's settlement statement for a day, and it is checked
// against our payments of that rail. The file is read as it arrives (rail-statement-file.ts); then, in
// one transaction, its lines are matched in bounded batches, every mismatch is stored with both
// sides and opens an anomaly, and the statement's counts and its audit row commit with them — or,
// on any fault, nothing does. Nothing here changes a payment or the ledger.
import type { RailRegistry } from './rail-registry.ts';
import type { Readable } from 'node:stream';
import type { Database, TransactionHandle } from '../db/database.ts';
import { openAnomalies } from '../db/repositories/anomalies.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  beginStatementMatch,
  beginStatementReferences,
  findStatement,
  findStatementByFile,
  insertMismatches,
  insertStatement,
  listMismatches,
  listStatements,
  railCarriedPayments,
  railPaymentsByIds,
  recordCounts,
  rememberReferences,
  unnamedSettledPayments,
  type MismatchRow,
  type RailStatementRow,
} from '../db/repositories/rail-statements.ts';
import { FIRST_ID } from '../db/repositories/reconciliation-reads.ts';
import type { AnomalyKind } from '../domain/anomalies.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import {
  compareLine,
  isPaymentId,
  MISMATCH_ANOMALY_KINDS,
  missingAtRail,
  STATEMENT_RESULTS,
  statementDedupKey,
  type ColumnMapping,
  type StatementLine,
  type StatementMismatch,
  type StatementResult,
} from '../domain/rail-statement.ts';
import type { MoneyMetrics } from './money-metrics.ts';
import { spooledBatches, spoolStatement, statementMalformed, type SpooledStatement } from './rail-statement-file.ts';
import { assert } from '../domain/assert.ts';

/**
 * Lines matched per batch: one read of the payments they name, one insert of their references, at
 * most three mismatches each stored in one statement. Small enough that a batch's rows stay a few
 * hundred kilobytes, large enough that 100,000 lines are 100 round trips.
 */
const STATEMENT_BATCH_LINES = 1000;
/** Payments the statement does not name, read per page (and their mismatches stored per page). */
const MISSING_PAGE_SIZE = 1000;
/**
 * Each statement of the matching transaction, at most, and the wait for another statement of the same
 * rail and day being matched: a batch is keyed reads and inserts of at most STATEMENT_BATCH_LINES rows,
 * milliseconds when the indexes are used, and a whole 100,000-line day took 6 to 13 s; a minute means
 * something is wrong, and the import is rolled back (503, retry) rather than holding its transaction.
 */
const MATCH_STATEMENT_TIMEOUT_MS = 60_000;

export interface StatementImport {
  rail: string;
  day: string;
  mapping: ColumnMapping;
  body: Readable;
  actor: AuditActor;
}

type Counts = Record<StatementResult, number>;

export class RailStatementService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly rails: Pick<RailRegistry, 'named'>,
    private readonly metrics?: Pick<MoneyMetrics, 'anomalyRecorded'>,
  ) {}

  /**
   * Whether a rail is one we know: a rail of this deployment (the sandbox, a configured connector), or
   * one that has carried a payment (a connector since removed from the rails file still has statements
   * to match). The one place that decides it.
   */
  async isKnownRail(rail: string): Promise<boolean> {
    return this.rails.named(rail) !== undefined || (await railCarriedPayments(this.db, rail));
  }

  /**
   * Reads, checks and matches a statement. `created` false: this rail, day and file was stored before,
   * and that statement is answered (nothing new is stored). 404 for an unknown rail (before the body
   * is read), 400 `statement_malformed`, 413 `payload_too_large`.
   */
  async import(input: StatementImport): Promise<{ statement: RailStatementRow; created: boolean }> {
    if (!(await this.isKnownRail(input.rail))) throw notFound('rail');
    const spool = await spoolStatement(input.body, input.mapping, input.day);
    try {
      const key = { rail: input.rail, day: input.day, sha256: spool.sha256 };
      const stored = await findStatementByFile(this.db, key);
      if (stored) return { statement: stored, created: false };
      const opened: AnomalyKind[] = [];
      const result = await this.db.transaction((tx) => this.match(tx, input, spool, opened));
      if (result === undefined) {
        const found = await findStatementByFile(this.db, key);
        assert(found, 'a statement that conflicted on insert is not stored');
        return { statement: found, created: false };
      }
      for (const kind of opened) this.metrics?.anomalyRecorded(kind);
      return { statement: result, created: true };
    } finally {
      await spool.discard();
    }
  }

  /** The matching, in the caller's transaction; undefined when the same file was stored meanwhile. */
  private async match(
    tx: TransactionHandle,
    input: StatementImport,
    spool: SpooledStatement,
    opened: AnomalyKind[],
  ): Promise<RailStatementRow | undefined> {
    await beginStatementMatch(tx, { rail: input.rail, day: input.day }, MATCH_STATEMENT_TIMEOUT_MS);
    const now = this.clock.now();
    const id = await insertStatement(tx, {
      rail: input.rail,
      day: input.day,
      sha256: spool.sha256,
      bytes: spool.bytes,
      lines: spool.lines,
      columns: input.mapping,
      createdBy: input.actor.keyId,
      at: now,
    });
    if (id === undefined) return undefined;
    await beginStatementReferences(tx);
    const counts = Object.fromEntries(STATEMENT_RESULTS.map((r) => [r, 0])) as Counts;
    const store = new MismatchWriter(
      tx,
      { id, rail: input.rail, day: input.day, sha256: spool.sha256, now },
      counts,
      opened,
    );
    await matchLines(tx, input.rail, spool, store, counts);
    await storeMissingPayments(tx, { rail: input.rail, day: input.day }, store);
    const row = await recordCounts(tx, id, counts, opened.length);
    await recordAudit(tx, {
      actor: input.actor,
      action: 'rail_statement.import',
      target: { type: 'rail_statement', id },
      before: null,
      after: {
        rail: input.rail,
        day: input.day,
        fileSha256: spool.sha256,
        fileBytes: spool.bytes,
        lines: spool.lines,
        counts,
        anomaliesOpened: opened.length,
      },
    });
    return row;
  }

  async list(rail: string, page: { limit: number; cursor?: string }) {
    const after = positionAfter(page.cursor);
    return pageOf(await listStatements(this.db, rail, { limit: page.limit, after }), page.limit);
  }

  /** A statement of `rail` and one page of its mismatches (in file order, missing payments last). */
  async get(
    rail: string,
    id: string,
    page: { limit: number; afterSeq: number },
  ): Promise<{ statement: RailStatementRow; mismatches: MismatchRow[]; hasMore: boolean }> {
    const statement = await findStatement(this.db, id);
    if (!statement || statement.rail !== rail) throw notFound('rail statement');
    const rows = await listMismatches(this.db, id, page);
    return { statement, mismatches: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
  }
}

/** Every line checked against the payment it names, batch by batch; a line that agrees is counted matched. */
async function matchLines(
  tx: TransactionHandle,
  rail: string,
  spool: SpooledStatement,
  store: MismatchWriter,
  counts: Counts,
): Promise<void> {
  // At most STATEMENT_LINES_MAX / STATEMENT_BATCH_LINES batches: the spool holds no more lines.
  for await (const batch of spooledBatches(spool, STATEMENT_BATCH_LINES)) {
    await rememberBatch(tx, batch);
    const payments = new Map(
      (await railPaymentsByIds(tx, rail, batch.map((l) => l.reference).filter(isPaymentId))).map((p) => [p.id, p]),
    );
    const mismatches: StatementMismatch[] = [];
    for (const line of batch) {
      const found = compareLine(line, payments.get(line.reference));
      if (found.length === 0) counts.matched += 1;
      mismatches.push(...found);
    }
    await store.write(mismatches);
  }
}

/** The rail's payments settled that day that no line named: each is a mismatch of its own. */
async function storeMissingPayments(
  tx: TransactionHandle,
  statement: { rail: string; day: string },
  store: MismatchWriter,
): Promise<void> {
  // Ends at the first short page: the rail's payments settled that day, MISSING_PAGE_SIZE at a time.
  for (let afterId = FIRST_ID; ;) {
    const missing = await unnamedSettledPayments(tx, statement, { afterId, limit: MISSING_PAGE_SIZE });
    await store.write(missing.map(missingAtRail));
    if (missing.length < MISSING_PAGE_SIZE) break;
    afterId = missing[missing.length - 1]!.id;
  }
}

/** A batch's references remembered; a reference named twice in a statement is a malformed file. */
async function rememberBatch(tx: TransactionHandle, batch: readonly StatementLine[]): Promise<void> {
  const first = new Map<string, number>();
  for (const line of batch) {
    const earlier = first.get(line.reference);
    if (earlier !== undefined)
      throw statementMalformed(line.line, `reference ${line.reference} is named again (first on line ${earlier})`);
    first.set(line.reference, line.line);
  }
  const named = await rememberReferences(tx, batch);
  if (named.length === 0) return;
  const again = batch.filter((l) => named.some((n) => n.reference === l.reference)).sort((a, b) => a.line - b.line)[0]!;
  throw statementMalformed(
    again.line,
    `reference ${again.reference} is named again (first on line ${named.find((n) => n.reference === again.reference)!.line})`,
  );
}

/** Stores mismatches in order, each with the anomaly it opens (or the one already open for it). */
class MismatchWriter {
  private seq = 0;

  constructor(
    private readonly tx: TransactionHandle,
    private readonly statement: { id: string; rail: string; day: string; sha256: string; now: Date },
    private readonly counts: Counts,
    private readonly opened: AnomalyKind[],
  ) {}

  async write(mismatches: readonly StatementMismatch[]): Promise<void> {
    if (mismatches.length === 0) return;
    const { id, rail, day, sha256, now } = this.statement;
    const anomalies = await openAnomalies(
      this.tx,
      mismatches.map((m) => ({
        kind: MISMATCH_ANOMALY_KINDS[m.kind],
        tenantId: m.payment?.tenant_id ?? null,
        mode: m.payment?.mode ?? null,
        paymentId: m.payment?.id ?? null,
        ours: m.ours,
        theirs: m.theirs,
        raw: { rail, day, statementId: id, fileSha256: sha256, line: m.line, reference: m.reference },
        dedupKey: statementDedupKey(m.kind, rail, day, m.reference),
        reportedAt: now,
      })),
      now,
    );
    await insertMismatches(
      this.tx,
      id,
      mismatches.map((m, i) => {
        this.counts[m.kind] += 1;
        if (anomalies[i]!.created) this.opened.push(MISMATCH_ANOMALY_KINDS[m.kind]);
        this.seq += 1;
        return {
          seq: this.seq,
          result: m.kind,
          line: m.line,
          reference: m.reference,
          tenantId: m.payment?.tenant_id ?? null,
          mode: m.payment?.mode ?? null,
          paymentId: m.payment?.id ?? null,
          ours: m.ours,
          theirs: m.theirs,
          anomalyId: anomalies[i]!.id,
        };
      }),
    );
  }
}
