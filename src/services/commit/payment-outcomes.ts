import type { Config } from '../../config.ts';
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Queryable, TransactionHandle } from '../../db/database.ts';
import { lockOutcomeCommit } from '../../db/commit/outcome-locks.ts';
import { sortedIds } from '../../db/commit/lock-rows.ts';
import { openAnomalies, type NewAnomaly } from '../../db/repositories/anomalies.ts';
import { writeOutcomeCommit, type OutcomeCommitWrite } from '../../db/commit/outcome-commit.ts';
import type { PaymentRow } from '../../db/repositories/payments.ts';
import {
  answerDedupKey,
  jsonOf,
  notificationDedupKey,
  type AnomalyKind,
  type Contradiction,
} from '../../domain/anomalies.ts';
import type { Clock } from '../../domain/clock.ts';
import {
  decideOutcomeCommit,
  outcomeLockPlan,
  type OutcomeCommitDecision,
  type OutcomeJob,
  type OutcomePayment,
  type PaymentAfter,
  type RailReport,
  type ResolutionSchedule,
} from '../../domain/commit/outcome-decision.ts';
import type { TransitionActor } from '../../domain/payment-state.ts';
import type { CommitLane, Committer } from './committer.ts';
import type { MoneyMetrics } from '../money-metrics.ts';
import type { Partition } from '../../domain/partition.ts';
import { assert } from '../../domain/assert.ts';

/** The longest a rail's "ask me again in" hint is honoured. */
const RETRY_HINT_MAX_MS = 3_600_000;

/** The per-payment schedule of questions to the rail, from configuration. */
export function resolutionScheduleOf(
  config: Pick<Config, 'reaperIntervalMs' | 'reaperCheckAttemptsMax' | 'reaperBackoffMaxMs'>,
): ResolutionSchedule {
  return {
    intervalMs: config.reaperIntervalMs,
    backoffMaxMs: Math.max(config.reaperBackoffMaxMs, config.reaperIntervalMs),
    attemptsMax: config.reaperCheckAttemptsMax,
    hintMaxMs: RETRY_HINT_MAX_MS,
  };
}

/** The most outcomes of one tenant in one transaction. */
const OUTCOME_COMMIT_MAX = 128;

export interface OutcomeContext {
  actor: TransitionActor;
  /** Reason recorded on a settlement (rail_settled from the payout path, resolved_by_reaper). */
  settledReason: string;
  recheck: OutcomeJob['recheck'];
  onlyFrom?: OutcomeJob['onlyFrom'];
  /**
   * Written in the outcome's own transaction, after it, and only when this outcome moved the payment:
   * the sandbox rail's record of a simulated outcome, so that the rail can never report another one.
   * Its rows come last in the lock order (db/commit/README.md).
   */
  alongside?: (tx: Queryable, payment: PaymentRow) => Promise<void>;
  /** The report came as this rail notification (see OutcomeJob.notification). */
  notification?: OutcomeJob['notification'];
}

interface OutcomeItem {
  payment: PaymentRow;
  job: OutcomeJob;
  alongside?: OutcomeContext['alongside'];
}

export interface AppliedOutcome {
  payment: PaymentRow;
  /** This outcome moved the payment to another state (false: it was already past it, or not in `onlyFrom`). */
  moved: boolean;
  /** This outcome made the reaper stop asking the rail. */
  parkedNow: boolean;
  /** The status changes it committed (an outcome may make two: settled, then reversed). */
  changes: Array<{ to: string; reason: string | null }>;
  /** Limit counters the commit found short (reported with the first job of the commit). */
  counterShortfalls: string[];
  /** The report contradicted our record or failed the answer checks: this anomaly is stored (`created`: by this outcome). */
  anomaly?: { id: string; kind: AnomalyKind; created: boolean };
}

/**
 * Applies what the rail said about payments (or, in test mode, the outcome a sandbox simulation
 * forces): every transition, ledger entry, limit give-back, outcome event and beneficiary history
 * change, through the committer in commits per tenant, in the lock order, so the payout path, the
 * reaper, rail notifications and simulations never race or deadlock on a payment. A payment another
 * path already moved is left as it is (the decision sees the locked row).
 */
export class PaymentOutcomes {
  private readonly lane: OutcomeLane;

  constructor(
    clock: Clock,
    private readonly committer: Committer,
    schedule: ResolutionSchedule,
    metrics?: MoneyMetrics,
    log?: FastifyBaseLogger,
  ) {
    this.lane = new OutcomeLane(clock, schedule, metrics, log);
  }

  /** Applies one report; resolves with the payment as it stands afterwards. */
  async apply(payment: PaymentRow, report: RailReport, context: OutcomeContext): Promise<PaymentRow> {
    return (await this.applyWithDetail(payment, report, context)).payment;
  }

  applyWithDetail(payment: PaymentRow, report: RailReport, context: OutcomeContext): Promise<AppliedOutcome> {
    const { alongside, ...rest } = context;
    const job: OutcomeJob = { paymentId: payment.id, report, ...rest };
    return this.committer.submit(
      this.lane,
      { tenantId: payment.tenant_id, mode: payment.mode },
      { payment, job, alongside },
    );
  }
}

class OutcomeLane implements CommitLane<OutcomeItem, AppliedOutcome> {
  readonly name = 'outcome';
  readonly commitMax = OUTCOME_COMMIT_MAX;

  constructor(
    private readonly clock: Clock,
    private readonly schedule: ResolutionSchedule,
    private readonly metrics?: MoneyMetrics,
    private readonly log?: FastifyBaseLogger,
  ) {}

  /** What the reaper and the banks' notifications bring is background work; a request's own outcome (the payout path, a simulation) is not. */
  inBackground(items: readonly OutcomeItem[]): boolean {
    return items.every((item) => item.job.actor === 'reaper' || item.job.actor === 'provider_event');
  }

  async run(tx: TransactionHandle, partition: Partition, items: readonly OutcomeItem[]): Promise<AppliedOutcome[]> {
    const now = this.clock.now();
    const { held, decided } = await this.lockAndDecide(tx, partition, items, now);
    const { write, finals } = outcomeCommitWriteOf(now, items, decided);
    const results = appliedOutcomesOf(now, items, decided, held.payments, finals);
    const alongside = alongsideWritesOf(items, results);
    const contradicted = decided.decisions.flatMap((decision, i) =>
      decision.anomaly ? [{ i, anomaly: anomalyOf(items[i]!, decision.anomaly) }] : [],
    );
    // Usually the write is the commit's last statement: it then goes out with the COMMIT.
    if (write.payments.length > 0)
      await writeOutcomeCommit(tx, partition, write, { last: alongside.length === 0 && contradicted.length === 0 });
    // In the same transaction as the rest: whoever acknowledges the report to the rail does so after
    // this commits, so a contradiction is never acknowledged without being stored.
    const opened = await openAnomalies(
      tx,
      contradicted.map((c) => c.anomaly),
      now,
    );
    contradicted.forEach(({ i, anomaly }, n) => (results[i]!.anomaly = { ...opened[n]!, kind: anomaly.kind }));
    for (const a of alongside) await a.write!(tx, a.result.payment);
    return results;
  }

  /** Locks what the commit's outcomes may touch, then decides them against the rows as locked. */
  private async lockAndDecide(
    tx: TransactionHandle,
    partition: Partition,
    items: readonly OutcomeItem[],
    now: Date,
  ): Promise<{ held: HeldForOutcomes; decided: OutcomeCommitDecision }> {
    const plan = outcomeLockPlan(items.map((item) => ({ job: item.job, payment: outcomePaymentOf(item.payment) })));
    const held = await lockOutcomeCommit(tx, partition, {
      paymentIds: sortedIds(items.map((item) => item.payment.id)),
      counters: plan.counters,
      accounts: plan.accounts,
    });
    const payments = new Map<string, OutcomePayment>();
    for (const item of items) {
      const locked = held.payments.get(item.payment.id);
      assert(locked, `payment ${item.payment.id} is not a payment of this tenant and mode`);
      // Immutable fields from the job's copy of the row, the rest as locked now.
      payments.set(item.payment.id, { ...outcomePaymentOf(item.payment), ...locked });
    }
    const decided = decideOutcomeCommit(
      { now, schedule: this.schedule, payments, balances: held.balances, counters: held.counters },
      items.map((i) => i.job),
    );
    return { held, decided };
  }

  /**
   * One info line per committed commit with every status change in it (payment id, new status,
   * reason, who reported it): cheap under load, complete for an operator following one payment.
   */
  afterCommit(partition: Partition, items: readonly OutcomeItem[], results: readonly AppliedOutcome[]): void {
    const outcomes: Array<{ paymentId: string; status: string; reason: string | null; actor: string }> = [];
    results.forEach((result, i) => {
      for (const change of result.changes) {
        this.metrics?.payoutStatus(change.to, change.reason);
        outcomes.push({
          paymentId: result.payment.id,
          status: change.to,
          reason: change.reason,
          actor: items[i]!.job.actor,
        });
      }
    });
    if (outcomes.length > 0) {
      this.log?.info(
        { tenantId: partition.tenantId, mode: partition.mode, outcomes },
        `payment outcomes applied: ${outcomes.length}`,
      );
    }
    results.forEach((result, i) => {
      for (const shortfall of result.counterShortfalls) {
        this.metrics?.counterAnomalies.inc();
        this.log?.error({ anomaly: shortfall }, 'limit counter anomaly (clamped at zero)');
      }
      if (result.anomaly?.created) {
        this.metrics?.anomalyRecorded(result.anomaly.kind);
        const line = {
          anomalyId: result.anomaly.id,
          kind: result.anomaly.kind,
          paymentId: result.payment.id,
          tenantId: partition.tenantId,
          mode: partition.mode,
          actor: items[i]!.job.actor,
        };
        const message =
          'anomaly: the rail said what contradicts our records or fails our checks; it waits for an operator (GET /v1/admin/anomalies)';
        // A test program's contradiction moves no money: no one is paged for it.
        if (partition.mode === 'test') this.log?.info(line, message);
        else this.log?.error(line, message);
      }
      if (!result.parkedNow) return;
      this.metrics?.parked.inc();
      const { payment } = items[i]!;
      this.log?.warn(
        {
          paymentId: payment.id,
          tenantId: payment.tenant_id,
          status: result.payment.status,
          checkAttempts: result.payment.check_attempts,
        },
        'reaper: the rail still cannot resolve this payment after the last allowed attempt; it stays unresolved until the rail reports it or an operator re-queues it',
      );
    });
  }
}

/** The rows one commit's outcomes hold locked: the payments' mutable state, the counters, the balances. */
type HeldForOutcomes = Awaited<ReturnType<typeof lockOutcomeCommit>>;
/** A payment's row after the commit's last decision about it; `touched`: some decision moved it. */
type PaymentFinal = { after: PaymentAfter; touched: boolean };
type BeneficiaryHistory = {
  id: string;
  successes: number;
  lastSuccessAt: Date | null;
  lastFailureReason: string | null;
};

/**
 * Everything the commit writes, gathered over its decisions in job order: a payment decided twice in
 * one commit is written once, as the last decision left it, and each beneficiary's history once.
 */
function outcomeCommitWriteOf(
  now: Date,
  items: readonly OutcomeItem[],
  decided: OutcomeCommitDecision,
): { write: OutcomeCommitWrite; finals: Map<string, PaymentFinal> } {
  const write: OutcomeCommitWrite = {
    now,
    payments: [],
    transitions: [],
    entries: [],
    accountDeltas: [...decided.accountDeltas.values()],
    giveBacks: [...decided.giveBacks.values()],
    events: [],
    beneficiaries: [],
  };
  const finals = new Map<string, PaymentFinal>();
  const history = new Map<string, BeneficiaryHistory>();
  decided.decisions.forEach((decision, i) => {
    const { payment } = items[i]!;
    const metadata = { methodRequested: payment.method_requested, methodUsed: payment.method };
    for (const t of decision.transitions) write.transitions.push({ paymentId: payment.id, ...t, metadata });
    for (const entry of decision.entries)
      write.entries.push({ id: randomUUID(), kind: entry.kind, paymentId: payment.id, postings: entry.postings });
    for (const event of decision.events)
      write.events.push({ paymentId: payment.id, type: event.type, payload: event.payload });
    if (decision.after) {
      const moved = decision.transitions.some((t) => t.from !== t.to);
      const touched = moved || (finals.get(payment.id)?.touched ?? false);
      finals.set(payment.id, { after: decision.after, touched });
    }
    if (decision.beneficiary && payment.beneficiary_id)
      addBeneficiaryHistory(history, payment.beneficiary_id, decision.beneficiary);
  });
  write.payments = [...finals.entries()].map(([id, f]) => ({ id, after: f.after, touched: f.touched }));
  write.beneficiaries = [...history.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  return { write, finals };
}

/** Folds one decision's success or failure into its beneficiary's history: the latest success time wins. */
function addBeneficiaryHistory(
  history: Map<string, BeneficiaryHistory>,
  beneficiaryId: string,
  beneficiary: NonNullable<OutcomeCommitDecision['decisions'][number]['beneficiary']>,
): void {
  const h = history.get(beneficiaryId) ?? {
    id: beneficiaryId,
    successes: 0,
    lastSuccessAt: null,
    lastFailureReason: null,
  };
  if (beneficiary.successAt) {
    h.successes += 1;
    h.lastSuccessAt =
      h.lastSuccessAt && h.lastSuccessAt > beneficiary.successAt ? h.lastSuccessAt : beneficiary.successAt;
  }
  if (beneficiary.failureReason) h.lastFailureReason = beneficiary.failureReason;
  history.set(beneficiaryId, h);
}

/** Each job's answer: its payment as the commit leaves it, and what this job changed of it. */
function appliedOutcomesOf(
  now: Date,
  items: readonly OutcomeItem[],
  decided: OutcomeCommitDecision,
  locked: HeldForOutcomes['payments'],
  finals: ReadonlyMap<string, PaymentFinal>,
): AppliedOutcome[] {
  return items.map((item, i): AppliedOutcome => {
    const final = finals.get(item.payment.id);
    const row: PaymentRow = {
      ...item.payment,
      ...locked.get(item.payment.id)!,
      ...(final?.after ?? {}),
      updated_at: final?.touched ? now : item.payment.updated_at,
    };
    const decision = decided.decisions[i]!;
    const changes = decision.transitions.filter((t) => t.from !== t.to).map((t) => ({ to: t.to, reason: t.reason }));
    return {
      payment: row,
      moved: changes.length > 0,
      parkedNow: decision.parkedNow,
      changes,
      counterShortfalls: i === 0 ? decided.counterShortfalls : [],
    };
  });
}

/** The `alongside` writes to make: in payment id order, as every kind of row is locked; only for outcomes that took effect. */
function alongsideWritesOf(
  items: readonly OutcomeItem[],
  results: readonly AppliedOutcome[],
): Array<{ write: OutcomeItem['alongside']; result: AppliedOutcome }> {
  const alongside = items
    .map((item, i) => ({ write: item.alongside, result: results[i]! }))
    .filter((a) => a.write && a.result.moved);
  alongside.sort((a, b) => (a.result.payment.id < b.result.payment.id ? -1 : 1));
  return alongside;
}

/** The anomaly a contradicted outcome stores: keyed by the notification, or by what the rail answered. */
function anomalyOf(item: OutcomeItem, contradiction: Contradiction): NewAnomaly {
  const { payment, job } = item;
  const { kind, ours, theirs } = contradiction;
  return {
    kind,
    tenantId: payment.tenant_id,
    mode: payment.mode,
    paymentId: payment.id,
    ours,
    theirs,
    raw: job.notification ? job.notification.raw : { via: job.actor, answer: jsonOf(job.report) },
    dedupKey: job.notification
      ? notificationDedupKey(kind, payment.mode, job.notification.id)
      : answerDedupKey(kind, payment.tenant_id, payment.id, theirs),
    reportedAt: job.notification?.occurredAt,
  };
}

function outcomePaymentOf(p: PaymentRow): OutcomePayment {
  return {
    tenant_id: p.tenant_id,
    mode: p.mode,
    id: p.id,
    status: p.status,
    status_reason: p.status_reason,
    message: p.message,
    compensated: p.compensated,
    next_check_at: p.next_check_at,
    resolution_parked_at: p.resolution_parked_at,
    funding_account: p.funding_account,
    source_asset: p.source_asset,
    source_amount: p.source_amount,
    payout_asset: p.payout_asset,
    payout_amount: p.payout_amount,
    fee_amount: p.fee_amount,
    method: p.method,
    method_requested: p.method_requested,
    customer_id: p.customer_id,
    beneficiary_id: p.beneficiary_id,
    usage_day: p.usage_day,
    check_attempts: p.check_attempts,
    created_at: p.created_at,
    bank_reference: p.bank_reference,
    settled_at: p.settled_at,
    metadata: p.metadata,
  };
}
