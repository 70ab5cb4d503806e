// Storage of the sandbox rail (migration 005): the simulated provider's own transfers, not our ledger.
// Only src/rails/sandbox-rail.ts uses it, and the connector kit's sandbox bank (test/support) reads what
// the simulated bank received. Every time comes from the caller (its injected clock), never from the
// database's now(), so tests can move time by hand.
import { relaxedOf, type Queryable } from '../database.ts';
import { COALESCER_BOUNDS, Coalescer } from '../coalescer.ts';
import type { RailFailureReason } from '../../domain/failure-reasons.ts';
import type { Instrument } from '../../domain/instrument.ts';
import { Params } from './sql-params.ts';
import { assert } from '../../domain/assert.ts';

export type SandboxScenario =
  | 'settle_at_once'
  | 'unconfirmed_then_settled'
  | 'unconfirmed_then_rejected'
  | 'beneficiary_mismatch'
  | 'bank_unreachable'
  | 'invalid_destination_account'
  | 'settled_then_reversed'
  | 'instrument_unavailable'
  | 'hang'
  | 'default';

export interface SandboxTransferRow {
  reference: string;
  mode: 'test' | 'live';
  tenant_id: string;
  instrument: Instrument;
  amount_minor: bigint;
  national_id: string;
  bank_code: string;
  scenario: SandboxScenario;
  pending_status: 'processing' | 'unconfirmed';
  received_at: Date;
  settle_at: Date;
  failure_reason: RailFailureReason | null;
  bank_reference: string | null;
  settled_at: Date | null;
  reverse_at: Date | null;
  reversal_reason: string | null;
  reversal_acknowledged_at: Date | null;
  /** How many times the transfer was submitted (the first time included). */
  submissions: number;
}

export type NewSandboxTransfer = Omit<SandboxTransferRow, 'reversal_acknowledged_at' | 'submissions'>;

const COLUMNS = `reference, mode, tenant_id, instrument, amount_minor, national_id, bank_code, scenario, pending_status,
  received_at, settle_at, failure_reason, bank_reference, settled_at, reverse_at, reversal_reason, reversal_acknowledged_at, submissions`;

/**
 * Records a submission: the transfer when its reference is new, or one more submission of the stored
 * one. A concurrent duplicate waits for the first insert, so one reference is always one transfer.
 */
export async function insertSandboxTransfer(
  db: Queryable,
  t: NewSandboxTransfer,
): Promise<{ row: SandboxTransferRow; inserted: boolean }> {
  return coalescerFor(db).submit(t);
}

// Concurrent submissions are recorded together (see Coalescer); one per database handle.
const inserters = new WeakMap<
  Queryable,
  Coalescer<NewSandboxTransfer, { row: SandboxTransferRow; inserted: boolean }>
>();

function coalescerFor(db: Queryable): Coalescer<NewSandboxTransfer, { row: SandboxTransferRow; inserted: boolean }> {
  let coalescer = inserters.get(db);
  if (!coalescer) {
    // The sandbox provider's own record: if a crash lost it, the reaper finds `not_found` and
    // submits again by the same reference, as with a real rail that never got the call.
    coalescer = new Coalescer((items) => insertSandboxTransfers(relaxedOf(db), items), COALESCER_BOUNDS);
    inserters.set(db, coalescer);
  }
  return coalescer;
}

/** Many submissions in one statement; per item the stored row and whether this item created it. */
async function insertSandboxTransfers(
  db: Queryable,
  items: readonly NewSandboxTransfer[],
): Promise<Array<{ row: SandboxTransferRow; inserted: boolean }>> {
  // A reference twice in one batch is one row submitted twice: the first item creates it.
  const distinct = new Map<string, { transfer: NewSandboxTransfer; times: number }>();
  for (const t of items) {
    const seen = distinct.get(t.reference);
    if (seen) seen.times += 1;
    else distinct.set(t.reference, { transfer: t, times: 1 });
  }
  const unique = [...distinct.values()].sort((a, b) => (a.transfer.reference < b.transfer.reference ? -1 : 1));
  const col = <T>(pick: (t: NewSandboxTransfer) => T) => unique.map((u) => pick(u.transfer));
  const p = new Params();
  const submissions = p.unnest({
    reference: ['uuid', col((t) => t.reference)],
    mode: ['text', col((t) => t.mode)],
    tenant_id: ['uuid', col((t) => t.tenant_id)],
    instrument: ['text', col((t) => t.instrument)],
    amount_minor: ['bigint', col((t) => String(t.amount_minor))],
    national_id: ['text', col((t) => t.national_id)],
    bank_code: ['text', col((t) => t.bank_code)],
    scenario: ['text', col((t) => t.scenario)],
    pending_status: ['text', col((t) => t.pending_status)],
    received_at: ['timestamptz', col((t) => t.received_at)],
    settle_at: ['timestamptz', col((t) => t.settle_at)],
    failure_reason: ['text', col((t) => t.failure_reason)],
    bank_reference: ['text', col((t) => t.bank_reference)],
    settled_at: ['timestamptz', col((t) => t.settled_at)],
    reverse_at: ['timestamptz', col((t) => t.reverse_at)],
    reversal_reason: ['text', col((t) => t.reversal_reason)],
    submissions: ['integer', unique.map((u) => u.times)],
  });
  const { rows } = await db.query<SandboxTransferRow & { inserted: boolean }>(
    `INSERT INTO sandbox_rail_transfers AS s (reference, mode, tenant_id, instrument, amount_minor, national_id, bank_code,
       scenario, pending_status, received_at, settle_at, failure_reason, bank_reference, settled_at, reverse_at, reversal_reason, submissions)
     SELECT * FROM ${submissions}
     ON CONFLICT (reference) DO UPDATE SET submissions = s.submissions + EXCLUDED.submissions
     RETURNING ${COLUMNS.replace(/\w+/g, (column) => `s.${column}`)}, (s.xmax = 0) AS inserted`,
    p.values,
  );
  const byReference = new Map(
    rows.map(({ inserted, ...row }) => [row.reference, { row: row as SandboxTransferRow, inserted }]),
  );
  const first = new Set<string>();
  return items.map((t) => {
    const stored = byReference.get(t.reference);
    assert(stored, `sandbox transfer ${t.reference} was neither inserted nor found`);
    const isFirst = !first.has(t.reference);
    first.add(t.reference);
    return { row: stored.row, inserted: stored.inserted && isFirst };
  });
}

/** Transfers of one mode by reference (one statement), keyed by reference; unknown ones are absent. */
export async function findSandboxTransfers(
  db: Queryable,
  references: readonly string[],
  mode: 'test' | 'live',
): Promise<Map<string, SandboxTransferRow>> {
  if (references.length === 0) return new Map();
  const p = new Params();
  const { rows } = await db.query<SandboxTransferRow>(
    `SELECT ${COLUMNS} FROM sandbox_rail_transfers WHERE reference = ANY(${p.add(references)}::uuid[]) AND mode = ${p.add(mode)}`,
    p.values,
  );
  return new Map(rows.map((row) => [row.reference, row]));
}

/** A transfer by reference; `mode` undefined matches either mode (idempotency check on resubmit). */
export async function findSandboxTransfer(
  db: Queryable,
  reference: string,
  mode?: 'test' | 'live',
): Promise<SandboxTransferRow | undefined> {
  const p = new Params();
  const byReference = `reference = ${p.add(reference)}`;
  const { rows } =
    mode === undefined
      ? await db.query<SandboxTransferRow>(
          `SELECT ${COLUMNS} FROM sandbox_rail_transfers WHERE ${byReference}`,
          p.values,
        )
      : await db.query<SandboxTransferRow>(
          `SELECT ${COLUMNS} FROM sandbox_rail_transfers WHERE ${byReference} AND mode = ${p.add(mode)}`,
          p.values,
        );
  return rows[0];
}

/**
 * Reversals that happened by `now` and nobody acknowledged, oldest first. A plain read at READ
 * COMMITTED: two workers may both get one (at-least-once), but once an acknowledgement has committed
 * no later call returns it.
 */
export async function listDueReversals(db: Queryable, now: Date, limit: number): Promise<SandboxTransferRow[]> {
  const p = new Params();
  const { rows } = await db.query<SandboxTransferRow>(
    `SELECT ${COLUMNS} FROM sandbox_rail_transfers
      WHERE reverse_at IS NOT NULL AND reversal_acknowledged_at IS NULL AND reverse_at <= ${p.add(now)}
      ORDER BY reverse_at, reference
      LIMIT ${p.add(limit)}`,
    p.values,
  );
  return rows;
}

/**
 * Marks a reversal notification acknowledged. Idempotent: acknowledging again keeps the first time.
 * Returns false when the reference has no reversal that has happened by `at` (nothing was ever handed
 * out under that id, so there is nothing to acknowledge).
 */
export async function acknowledgeReversal(db: Queryable, reference: string, at: Date): Promise<boolean> {
  const p = new Params();
  const acknowledgedAt = p.add(at);
  const result = await db.query(
    `UPDATE sandbox_rail_transfers
        SET reversal_acknowledged_at = COALESCE(reversal_acknowledged_at, ${acknowledgedAt})
      WHERE reference = ${p.add(reference)} AND reverse_at <= ${acknowledgedAt}`,
    p.values,
  );
  return result.rowCount === 1;
}

/** The outcome a test simulated, as the sandbox rail records it. */
export type SimulatedOutcome =
  | { status: 'settled'; bankReference: string }
  | { status: 'failed'; reason: RailFailureReason }
  | { status: 'reversed'; bankReference: string; reason: string };

/** The transfer as the rail would have received it: used only when it has no record of it. */
export type SimulatedTransfer = Pick<
  NewSandboxTransfer,
  'reference' | 'mode' | 'tenant_id' | 'instrument' | 'amount_minor' | 'national_id' | 'bank_code' | 'scenario'
>;

/** What a simulated outcome sets on a transfer the rail has recorded; `at` is the placeholder of the outcome's time. */
function simulatedUpdates(at: string): Record<SimulatedOutcome['status'], string> {
  // Every time is clamped to received_at or later (the table's CHECKs): another process's clock may lag.
  const settledAt = `GREATEST(s.received_at, ${at})`;
  const keptSettlement = `COALESCE(s.settled_at, ${settledAt})`;
  return {
    settled: `settle_at = ${settledAt}, failure_reason = NULL, bank_reference = EXCLUDED.bank_reference, settled_at = ${settledAt},
            reverse_at = NULL, reversal_reason = NULL, reversal_acknowledged_at = NULL`,
    failed: `settle_at = ${settledAt}, failure_reason = EXCLUDED.failure_reason, bank_reference = NULL, settled_at = NULL,
           reverse_at = NULL, reversal_reason = NULL, reversal_acknowledged_at = NULL`,
    // The settlement the rail recorded stays; the return happens now and is already acknowledged,
    // since its effect commits in the same transaction: no notification is left to hand out.
    reversed: `settle_at = ${keptSettlement}, failure_reason = NULL, bank_reference = EXCLUDED.bank_reference, settled_at = ${keptSettlement},
             reverse_at = GREATEST(${keptSettlement}, ${at}), reversal_reason = EXCLUDED.reversal_reason,
             reversal_acknowledged_at = GREATEST(${keptSettlement}, ${at})`,
  };
}

/**
 * Replaces the whole schedule of a transfer with an outcome a test simulated, at `at`: whatever the
 * trigger had fixed for later (a failure, a settlement, a return) is gone. A transfer the rail has no
 * record of yet (the payout path has not called it) is recorded as received at `at` with that outcome,
 * so that the call, when it comes, finds it and gets this outcome back (the record counts as its first
 * submission). Runs in the caller's transaction.
 */
export async function recordSimulatedOutcome(
  tx: Queryable,
  transfer: SimulatedTransfer,
  outcome: SimulatedOutcome,
  at: Date,
): Promise<void> {
  const settled = outcome.status === 'failed' ? null : at;
  const p = new Params();
  const [mode, tenant, outcomeAt] = [p.add(transfer.mode), p.add(transfer.tenant_id), p.add(at)];
  const reversed = p.add(outcome.status === 'reversed' ? at : null);
  const result = await tx.query(
    `INSERT INTO sandbox_rail_transfers AS s (reference, mode, tenant_id, instrument, amount_minor, national_id, bank_code, scenario,
       pending_status, received_at, settle_at, failure_reason, bank_reference, settled_at, reverse_at, reversal_reason, reversal_acknowledged_at, submissions)
     VALUES (${p.add(transfer.reference)}, ${mode}, ${tenant}, ${p.add(transfer.instrument)}, ${p.add(String(transfer.amount_minor))}, ${p.add(transfer.national_id)},
             ${p.add(transfer.bank_code)}, ${p.add(transfer.scenario)}, 'processing', ${outcomeAt}, ${outcomeAt},
             ${p.add(outcome.status === 'failed' ? outcome.reason : null)}, ${p.add(outcome.status === 'failed' ? null : outcome.bankReference)},
             ${p.add(settled)}, ${reversed}, ${p.add(outcome.status === 'reversed' ? outcome.reason : null)}, ${reversed}, 1)
     ON CONFLICT (reference) DO UPDATE SET ${simulatedUpdates(outcomeAt)[outcome.status]}
     WHERE s.mode = ${mode} AND s.tenant_id = ${tenant}`,
    p.values,
  );
  assert(result.rowCount === 1, `sandbox transfer ${transfer.reference} belongs to another tenant or mode`);
}

/** A notification a test asked the sandbox rail to send (migration 026). */
export interface SandboxNoticeRow {
  id: string;
  reference: string;
  mode: 'test' | 'live';
  tenant_id: string;
  kind: 'settled' | 'failed' | 'reversed';
  amount_minor: bigint | null;
  bank_reference: string | null;
  reason: string | null;
  occurred_at: Date;
  acknowledged_at: Date | null;
}

export type NewSandboxNotice = Omit<SandboxNoticeRow, 'acknowledged_at'>;

const NOTICE_COLUMNS =
  'id, reference, mode, tenant_id, kind, amount_minor, bank_reference, reason, occurred_at, acknowledged_at';

/**
 * Queues a notice unless its tenant already has `pendingMax` waiting (then false, nothing stored). The
 * count and the insert are one statement, not serialised: concurrent calls may pass the bound by a few.
 */
export async function insertSandboxNotice(
  db: Queryable,
  notice: NewSandboxNotice,
  pendingMax: number,
): Promise<boolean> {
  const p = new Params();
  const [tenant, max] = [p.add(notice.tenant_id), p.add(pendingMax)];
  const result = await db.query(
    `INSERT INTO sandbox_rail_notifications (id, reference, mode, tenant_id, kind, amount_minor, bank_reference, reason, occurred_at)
     SELECT ${p.add(notice.id)}, ${p.add(notice.reference)}, ${p.add(notice.mode)}, ${tenant}, ${p.add(notice.kind)},
            ${p.add(notice.amount_minor === null ? null : String(notice.amount_minor))}, ${p.add(notice.bank_reference)}, ${p.add(notice.reason)}, ${p.add(notice.occurred_at)}
      WHERE (SELECT count(*) FROM (SELECT 1 FROM sandbox_rail_notifications WHERE tenant_id = ${tenant} AND acknowledged_at IS NULL LIMIT ${max}) waiting) < ${max}`,
    p.values,
  );
  return result.rowCount === 1;
}

/** Notices sent by `now` that nobody acknowledged, oldest first (a plain read: at-least-once, as reversals). */
export async function listPendingNotices(db: Queryable, now: Date, limit: number): Promise<SandboxNoticeRow[]> {
  const p = new Params();
  const { rows } = await db.query<SandboxNoticeRow>(
    `SELECT ${NOTICE_COLUMNS} FROM sandbox_rail_notifications
      WHERE acknowledged_at IS NULL AND occurred_at <= ${p.add(now)}
      ORDER BY occurred_at, id
      LIMIT ${p.add(limit)}`,
    p.values,
  );
  return rows;
}

/** Marks a notice acknowledged (idempotent: the first time stays); false when there is no such notice. */
export async function acknowledgeNotice(db: Queryable, id: string, at: Date): Promise<boolean> {
  const p = new Params();
  const result = await db.query(
    `UPDATE sandbox_rail_notifications SET acknowledged_at = COALESCE(acknowledged_at, ${p.add(at)}) WHERE id = ${p.add(id)}`,
    p.values,
  );
  return result.rowCount === 1;
}
