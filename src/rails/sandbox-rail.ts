// The sandbox rail: a simulated provider that behaves like a real asynchronous rail
// and serves test mode. The beneficiary's national id picks the outcome, as test card numbers do.
//
// Its state is durable — every transfer it receives is a row of `sandbox_rail_transfers` (migration
// 005), the provider's own table, not our ledger — because the rest of the service is built to survive
// restarts by asking the rail: the reaper resolves `unknown` payments with `lookup(reference)`, and a
// crash between our ledger commit and the rail call shows up as `not_found`. A sandbox that forgot its
// transfers on restart would turn those paths into lies. For the same reason nothing is held in timers:
// the whole schedule of a transfer (settle time, outcome, reversal time) is fixed and stored when it is
// received, and its status is computed from those timestamps against `clock.now()`.
import { randomInt, randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import {
  acknowledgeNotice,
  acknowledgeReversal,
  findSandboxTransfer,
  findSandboxTransfers,
  insertSandboxNotice,
  insertSandboxTransfer,
  listDueReversals,
  listPendingNotices,
  recordSimulatedOutcome,
  type SandboxNoticeRow,
  type NewSandboxTransfer,
  type SandboxScenario,
  type SandboxTransferRow,
  type SimulatedOutcome,
} from '../db/repositories/sandbox-rail.ts';
import type { Clock } from '../domain/clock.ts';
import { LocalBankCatalogue, type Bank } from './catalogue.ts';
import {
  ServiceDatabaseError,
  type RailAdapter,
  type RailHealth,
  type RailLookup,
  type RailNotification,
  type RailStatus,
  type RailTransfer,
} from './rail.ts';
import type { RailFailureReason } from '../domain/failure-reasons.ts';
import type { Instrument } from '../domain/instrument.ts';
import { InvariantError } from '../domain/assert.ts';

export interface SandboxRailOptions {
  /** Time from receipt until a transfer reaches its final outcome (SANDBOX_SETTLE_DELAY_MS). */
  settleDelayMs: number;
  /** Time from settlement until a V99990007 transfer is returned by the bank (SANDBOX_REVERSE_DELAY_MS). */
  reverseDelayMs: number;
  /** Upper bound of the V99990009 hang when the caller never aborts (default 60 s). */
  hangMs?: number;
}

/**
 * The trigger national ids of the sandbox; any other id is `default`.
 * @internal Exported for its tests, not used elsewhere.
 */
export const SANDBOX_TRIGGERS: Readonly<Record<string, SandboxScenario>> = {
  V99990001: 'settle_at_once',
  V99990002: 'unconfirmed_then_settled',
  V99990003: 'unconfirmed_then_rejected',
  V99990004: 'beneficiary_mismatch',
  V99990005: 'bank_unreachable',
  V99990006: 'invalid_destination_account',
  V99990007: 'settled_then_reversed',
  V99990008: 'instrument_unavailable',
  V99990009: 'hang',
};

export const SANDBOX_REVERSAL_REASON = 'returned_by_bank';
const DEFAULT_SANDBOX_HANG_MS = 60_000;

const NOTIFICATION_PREFIX = 'reversed:';
/** Ids of the notifications a test asked for (queueSandboxNotification). */
const NOTICE_PREFIX = 'notice:';
/** Notifications a test asked for that one tenant may have waiting at once. */
export const SANDBOX_NOTICES_PENDING_MAX = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function sandboxScenario(nationalId: string): SandboxScenario {
  return SANDBOX_TRIGGERS[nationalId] ?? 'default';
}

/** The status of a stored transfer at `now`: a pure function of its timestamps. */
function sandboxStatusAt(row: SandboxTransferRow, now: Date): RailStatus {
  const t = now.getTime();
  const settleAt = row.settle_at.getTime();
  if (t < settleAt) return { status: row.pending_status, retryAfterMs: Math.max(0, settleAt - t) };
  if (row.failure_reason !== null) return { status: 'failed', reason: row.failure_reason };
  if (row.bank_reference === null || row.settled_at === null) {
    throw new InvariantError(`sandbox transfer ${row.reference} has neither a failure nor a settlement`);
  }
  if (row.reverse_at !== null && t >= row.reverse_at.getTime()) {
    return {
      status: 'reversed',
      bankReference: row.bank_reference,
      reason: row.reversal_reason ?? SANDBOX_REVERSAL_REASON,
    };
  }
  return { status: 'settled', bankReference: row.bank_reference, settledAt: row.settled_at };
}

/** The outcomes the bank gives while the rail holds the transfer: part of the answer to the send. */
const DECIDED_AT_RECEIPT: ReadonlySet<SandboxScenario> = new Set([
  'settle_at_once',
  'beneficiary_mismatch',
  'bank_unreachable',
]);

/**
 * The rail's answer to a new transfer. Every other outcome comes from the bank later, so the answer
 * to the send is the transfer's pending status even when the settle delay is 0: the payout answers
 * `submitted` (or `unknown`) and the reaper resolves it, as with any delay, only sooner.
 */
function receiptStatus(row: SandboxTransferRow, now: Date): RailStatus {
  if (DECIDED_AT_RECEIPT.has(row.scenario)) return sandboxStatusAt(row, now);
  return { status: row.pending_status, retryAfterMs: Math.max(0, row.settle_at.getTime() - now.getTime()) };
}

/**
 * A statement on the sandbox bank's tables, which are in the service's own database: whatever fails
 * there is that database failing (a lost connection, a restart), never the rail (ServiceDatabaseError).
 * With `signal`, a statement still waiting when the caller gives up is that database's slowness too:
 * the call ends then, said so (the statement may still commit: the transfer's fate is unknown).
 */
function ofDatabase<T>(statement: Promise<T>, signal?: AbortSignal): Promise<T> {
  const failed = statement.catch((error: unknown) => {
    throw new ServiceDatabaseError(error);
  });
  if (!signal) return failed;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () =>
      reject(
        new ServiceDatabaseError(new Error("the sandbox bank's statement had not answered when the caller gave up")),
      );
    signal.addEventListener('abort', onAbort, { once: true });
    failed.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A bank reference as the sandbox rail writes them: 12 digits. */
export function newBankReference(): string {
  return String(randomInt(0, 1_000_000_000_000)).padStart(12, '0');
}

function nonNegativeInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`SandboxRail: ${name} must be a non-negative integer`);
  return value;
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function hang(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class SandboxRail implements RailAdapter {
  readonly name = 'sandbox';
  /** A default-outcome transfer settles this long after its receipt. */
  readonly resolvesWithinMs: number;
  private readonly settleDelayMs: number;
  private readonly reverseDelayMs: number;
  private readonly hangMs: number;
  private readonly catalogue = new LocalBankCatalogue();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    options: SandboxRailOptions,
  ) {
    this.settleDelayMs = nonNegativeInteger(options.settleDelayMs, 'settleDelayMs');
    this.resolvesWithinMs = this.settleDelayMs;
    this.reverseDelayMs = nonNegativeInteger(options.reverseDelayMs, 'reverseDelayMs');
    this.hangMs = nonNegativeInteger(options.hangMs ?? DEFAULT_SANDBOX_HANG_MS, 'hangMs');
  }

  /** V99990008 makes exactly the requested instrument unavailable; every other case is available. */
  async instrumentAvailable(
    beneficiary: RailTransfer['beneficiary'],
    instrument: Instrument,
    requested: Instrument,
  ): Promise<boolean> {
    if (sandboxScenario(beneficiary.nationalId) === 'instrument_unavailable') return instrument !== requested;
    return true;
  }

  async submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    // A call the caller already gave up on is never sent, as with any network request.
    signal.throwIfAborted();
    if (!UUID.test(transfer.reference)) throw new Error('SandboxRail: the reference must be a payment id (uuid)');
    if (transfer.amountMinor <= 0n) throw new RangeError('SandboxRail: amountMinor must be positive');

    const { row, inserted } = await ofDatabase(
      insertSandboxTransfer(this.db, this.plan(transfer, this.clock.now())),
      signal,
    );
    if (!inserted) {
      // Known reference: the same transfer again (counted). Never a second transfer, never a second hang.
      assertSameTransfer(row, transfer);
      return sandboxStatusAt(row, this.clock.now());
    }
    if (row.scenario === 'hang') {
      // Received and recorded, but the answer never comes: the caller's timeout ends this call.
      await hang(this.hangMs, signal);
    }
    return receiptStatus(row, this.clock.now());
  }

  async lookup(reference: string, mode: 'test' | 'live'): Promise<RailLookup> {
    if (!UUID.test(reference)) return { status: 'not_found' };
    const row = await ofDatabase(findSandboxTransfer(this.db, reference, mode));
    if (row === undefined) return { status: 'not_found' };
    return sandboxStatusAt(row, this.clock.now());
  }

  async lookupMany(references: readonly string[], mode: 'test' | 'live'): Promise<RailLookup[]> {
    const rows = await ofDatabase(
      findSandboxTransfers(
        this.db,
        references.filter((reference) => UUID.test(reference)),
        mode,
      ),
    );
    const now = this.clock.now();
    return references.map((reference) => {
      const row = rows.get(reference);
      return row === undefined ? { status: 'not_found' } : sandboxStatusAt(row, now);
    });
  }

  /** The returns its schedule made happen, and the notifications tests asked for, oldest first. */
  async pendingNotifications(limit: number): Promise<RailNotification[]> {
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new RangeError('SandboxRail: limit must be a non-negative integer');
    if (limit === 0) return [];
    const now = this.clock.now();
    const [reversals, notices] = await ofDatabase(
      Promise.all([listDueReversals(this.db, now, limit), listPendingNotices(this.db, now, limit)]),
    );
    const scheduled = reversals.map((row): RailNotification => ({
      id: NOTIFICATION_PREFIX + row.reference,
      reference: row.reference,
      tenantId: row.tenant_id,
      mode: row.mode,
      kind: 'reversed',
      reason: row.reversal_reason ?? SANDBOX_REVERSAL_REASON,
      bankReference: row.bank_reference!,
      amountMinor: row.amount_minor,
      occurredAt: row.reverse_at!,
    }));
    const all = [...scheduled, ...notices.map(noticeOf)];
    all.sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return all.slice(0, limit);
  }

  /** Idempotent; throws for an id that was never handed out (a caller bug). */
  async acknowledgeNotification(id: string): Promise<void> {
    const now = this.clock.now();
    if (id.startsWith(NOTICE_PREFIX)) {
      const notice = id.slice(NOTICE_PREFIX.length);
      if (UUID.test(notice) && (await ofDatabase(acknowledgeNotice(this.db, notice, now)))) return;
      throw new Error(`SandboxRail: unknown notification ${id}`);
    }
    const reference = id.startsWith(NOTIFICATION_PREFIX) ? id.slice(NOTIFICATION_PREFIX.length) : '';
    if (!UUID.test(reference) || !(await ofDatabase(acknowledgeReversal(this.db, reference, now)))) {
      throw new Error(`SandboxRail: unknown notification ${id}`);
    }
  }

  /** The shipped catalogue: the sandbox reaches every bank it lists. */
  async banks(instrument: Instrument): Promise<Bank[]> {
    return this.catalogue.banksOf(instrument);
  }

  /** The sandbox's state is our own database: it answers whenever the service does. */
  async health(): Promise<RailHealth> {
    return { ok: true };
  }

  /** The whole future of a transfer, decided once at receipt from its trigger. */
  private plan(transfer: RailTransfer, receivedAt: Date): NewSandboxTransfer {
    const scenario = sandboxScenario(transfer.beneficiary.nationalId);
    const later = new Date(receivedAt.getTime() + this.settleDelayMs);
    const base = {
      reference: transfer.reference,
      mode: transfer.mode,
      tenant_id: transfer.tenantId,
      instrument: transfer.instrument,
      amount_minor: transfer.amountMinor,
      national_id: transfer.beneficiary.nationalId,
      bank_code: transfer.beneficiary.bankCode,
      scenario,
      received_at: receivedAt,
      reverse_at: null,
      reversal_reason: null,
    };
    const settles = (settleAt: Date, pending: 'processing' | 'unconfirmed') => ({
      ...base,
      pending_status: pending,
      settle_at: settleAt,
      failure_reason: null,
      bank_reference: newBankReference(),
      settled_at: settleAt,
    });
    const fails = (settleAt: Date, pending: 'processing' | 'unconfirmed', reason: RailFailureReason) => ({
      ...base,
      pending_status: pending,
      settle_at: settleAt,
      failure_reason: reason,
      bank_reference: null,
      settled_at: null,
    });
    switch (scenario) {
      case 'settle_at_once':
        return settles(receivedAt, 'processing');
      case 'unconfirmed_then_settled':
        return settles(later, 'unconfirmed');
      case 'unconfirmed_then_rejected':
        return fails(later, 'unconfirmed', 'rail_rejected');
      case 'beneficiary_mismatch':
        return fails(receivedAt, 'processing', 'beneficiary_mismatch');
      case 'bank_unreachable':
        return fails(receivedAt, 'processing', 'bank_unreachable');
      case 'invalid_destination_account':
        return fails(later, 'processing', 'invalid_destination_account');
      case 'settled_then_reversed':
        return {
          ...settles(later, 'processing'),
          reverse_at: new Date(later.getTime() + this.reverseDelayMs),
          reversal_reason: SANDBOX_REVERSAL_REASON,
        };
      case 'instrument_unavailable':
      case 'hang':
      case 'default':
        return settles(later, 'processing');
    }
  }
}

export type { SimulatedOutcome } from '../db/repositories/sandbox-rail.ts';

function noticeOf(row: SandboxNoticeRow): RailNotification {
  const common = {
    id: NOTICE_PREFIX + row.id,
    reference: row.reference,
    tenantId: row.tenant_id,
    mode: row.mode,
    requestedBy: { tenantId: row.tenant_id, mode: row.mode },
    occurredAt: row.occurred_at,
    ...(row.amount_minor === null ? {} : { amountMinor: row.amount_minor }),
  };
  switch (row.kind) {
    case 'settled':
      return { ...common, kind: 'settled', bankReference: row.bank_reference! };
    case 'failed':
      return { ...common, kind: 'failed', reason: row.reason! };
    case 'reversed':
      return {
        ...common,
        kind: 'reversed',
        reason: row.reason!,
        ...(row.bank_reference === null ? {} : { bankReference: row.bank_reference }),
      };
  }
}

/** What a test asks the sandbox rail to notify: a transfer's outcome or a return, as the rail would say it. */
export type SandboxNotice =
  | { kind: 'settled'; bankReference: string; amountMinor: bigint | null }
  | { kind: 'failed'; reason: string; amountMinor: bigint | null }
  | { kind: 'reversed'; reason: string; bankReference: string | null; amountMinor: bigint | null };

/**
 * Makes the sandbox rail send a notification about `reference` (a payment of the tenant's, or a
 * reference nobody has) at `at`, whatever its record of the transfer says: the reaper hears it on its
 * next pass, as it would a real rail's webhook. Its own record of the transfer is not changed. The id
 * it will carry, or undefined when the tenant already has SANDBOX_NOTICES_PENDING_MAX waiting.
 */
export async function queueSandboxNotification(
  db: Queryable,
  sender: { tenantId: string; mode: 'test' | 'live' },
  reference: string,
  notice: SandboxNotice,
  at: Date,
): Promise<string | undefined> {
  const id = randomUUID();
  const queued = await insertSandboxNotice(
    db,
    {
      id,
      reference,
      mode: sender.mode,
      tenant_id: sender.tenantId,
      kind: notice.kind,
      amount_minor: notice.amountMinor,
      bank_reference: notice.kind === 'failed' ? null : notice.bankReference,
      reason: notice.kind === 'settled' ? null : notice.reason,
      occurred_at: at,
    },
    SANDBOX_NOTICES_PENDING_MAX,
  );
  return queued ? NOTICE_PREFIX + id : undefined;
}

/**
 * The bank reference a simulated settlement of `reference` carries: the one the rail generated when it
 * received the transfer (a settling one has it from then on), else a new one.
 */
export async function simulatedBankReference(db: Queryable, reference: string, mode: 'test' | 'live'): Promise<string> {
  return (await findSandboxTransfer(db, reference, mode))?.bank_reference ?? newBankReference();
}

/**
 * Makes the sandbox rail's own record of a transfer say `outcome` from `at` on, in the caller's
 * transaction (the one that applies the same outcome to the payment), and cancels whatever its trigger
 * had scheduled: from then on a lookup, a resubmission or a notification can only tell the simulated
 * outcome, never a second, different one.
 */
export async function recordSimulation(
  tx: Queryable,
  transfer: Pick<RailTransfer, 'reference' | 'tenantId' | 'mode' | 'instrument' | 'amountMinor'> & {
    beneficiary: Pick<RailTransfer['beneficiary'], 'nationalId' | 'bankCode'>;
  },
  outcome: SimulatedOutcome,
  at: Date,
): Promise<void> {
  await recordSimulatedOutcome(
    tx,
    {
      reference: transfer.reference,
      mode: transfer.mode,
      tenant_id: transfer.tenantId.toLowerCase(),
      instrument: transfer.instrument,
      amount_minor: transfer.amountMinor,
      national_id: transfer.beneficiary.nationalId,
      bank_code: transfer.beneficiary.bankCode,
      scenario: sandboxScenario(transfer.beneficiary.nationalId),
    },
    outcome,
    at,
  );
}

/** A reference names one transfer: reusing it for different money is a caller bug, not a resubmit. */
function assertSameTransfer(row: SandboxTransferRow, transfer: RailTransfer): void {
  const same =
    row.mode === transfer.mode &&
    row.tenant_id === transfer.tenantId.toLowerCase() &&
    row.instrument === transfer.instrument &&
    row.amount_minor === transfer.amountMinor &&
    row.national_id === transfer.beneficiary.nationalId &&
    row.bank_code === transfer.beneficiary.bankCode;
  if (!same) throw new Error(`SandboxRail: reference ${transfer.reference} was already used for a different transfer`);
}
