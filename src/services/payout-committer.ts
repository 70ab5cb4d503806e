import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import { findBeneficiaryByIdentity, insertBeneficiaryIfNew, type BeneficiaryRow } from '../db/repositories/beneficiaries.ts';
import type { NewPayment, PaymentRow } from '../db/repositories/payments.ts';
import {
  createMissingAccounts,
  lockBatch,
  quoteStates,
  releaseQuotes,
  writeAcceptedPayouts,
} from '../db/repositories/payout-batch.ts';
import { setCustomerSender } from '../db/repositories/programs.ts';
import type { QuoteRow } from '../db/repositories/quotes.ts';
import type { TenantRow } from '../db/repositories/tenants.ts';
import { pgErrorCode, PG_DEADLOCK, PG_SERIALIZATION_FAILURE } from '../db/database.ts';
import type { Mode } from '../domain/api-keys.ts';
import type { BeneficiaryDetails } from '../domain/beneficiary.ts';
import type { Clock } from '../domain/clock.ts';
import { assertBalanced, type AccountKind, type FundingAccount, type LedgerEntry } from '../domain/ledger.ts';
import type { Sender } from '../domain/sender.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { limitExceeded, type LimitSubject, type PayoutLimitPolicy } from './payout-limits.ts';

/** A payout ready to commit: everything decided, nothing written. */
export interface CommitJob {
  partition: { tenantId: string; mode: Mode };
  tenant: TenantRow;
  quote: QuoteRow;
  paymentId: string;
  beneficiary: BeneficiaryRow | BeneficiaryDetails;
  customerSender?: { customerId: string; sender: Sender };
  limitSubject: LimitSubject;
  funding: FundingAccount;
  entry: LedgerEntry;
  /** The payment row to insert once the beneficiary has its id. */
  payment: (beneficiary: BeneficiaryRow) => NewPayment;
}

interface Pending {
  job: CommitJob;
  resolve(payment: PaymentRow): void;
  reject(error: unknown): void;
}

export const BATCH_PAYOUTS_MAX = 128;
/** Every statement of the batch finds its rows by key (see TransactionOptions.seqScans). */
const KEYED = { seqScans: false } as const;
const BATCH_ATTEMPTS_MAX = 3;

/**
 * Group commit for the payout transaction. Payouts of one tenant and mode that arrive while a batch
 * is committing wait and commit together in the next one: one transaction, about a dozen statements,
 * one lock on the tenant's hot balance rows — instead of one transaction per payout, each holding
 * those locks. There is no artificial delay: a lone payout commits at once (a batch of one).
 *
 * Every guarantee of the single-payout path holds per payout: a quote is consumed once; limits and
 * funds are decided payout by payout, in arrival order, against running totals read under lock;
 * a refused payout leaves nothing behind (its quote is given back in the same transaction).
 */
export class PayoutCommitter {
  private readonly queues = new Map<string, { pending: Pending[]; running: boolean }>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly limits: PayoutLimitPolicy,
  ) {}

  commit(job: CommitJob): Promise<PaymentRow> {
    const key = `${job.partition.tenantId}/${job.partition.mode}`;
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { pending: [], running: false };
      this.queues.set(key, queue);
    }
    const result = new Promise<PaymentRow>((resolve, reject) => queue.pending.push({ job, resolve, reject }));
    if (!queue.running) void this.drain(key, queue);
    return result;
  }

  private async drain(key: string, queue: { pending: Pending[]; running: boolean }): Promise<void> {
    queue.running = true;
    try {
      while (queue.pending.length > 0) {
        const batch = queue.pending.splice(0, BATCH_PAYOUTS_MAX);
        await this.runBatch(batch);
      }
    } finally {
      queue.running = false;
      if (queue.pending.length === 0) this.queues.delete(key);
      else void this.drain(key, queue);
    }
  }

  /** Never throws: every pending payout is resolved or rejected. */
  private async runBatch(batch: Pending[]): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const outcomes = await this.db.transaction((tx) => this.commitBatch(tx, batch.map((p) => p.job)), KEYED);
        batch.forEach((pending, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) pending.resolve(outcome.payment);
          else pending.reject(outcome.error);
        });
        return;
      } catch (error) {
        const code = pgErrorCode(error);
        if ((code === PG_DEADLOCK || code === PG_SERIALIZATION_FAILURE) && attempt < BATCH_ATTEMPTS_MAX) continue;
        if (batch.length > 1) {
          // Isolate whichever payout broke the batch: the others must not fail with it.
          for (const pending of batch) await this.runBatch([pending]);
          return;
        }
        batch[0]!.reject(error);
        return;
      }
    }
  }

  private async commitBatch(tx: Queryable, jobs: CommitJob[]): Promise<Array<{ ok: true; payment: PaymentRow } | { ok: false; error: unknown }>> {
    const { partition, tenant } = jobs[0]!;
    const now = this.clock.now();
    const refusals = new Map<number, unknown>();

    // 1. Quotes: consumed at most once, unexpired. A second payout on a quote within the batch loses.
    const firstByQuote = new Map<string, number>();
    jobs.forEach((job, i) => {
      if (firstByQuote.has(job.quote.id)) refusals.set(i, quoteError('consumed'));
      else firstByQuote.set(job.quote.id, i);
    });
    const claims = [...firstByQuote].map(([quoteId, i]) => ({ quoteId, paymentId: jobs[i]!.paymentId }));
    const claimants = [...firstByQuote.values()];

    // 2. One round trip: quotes consumed, then limit counters, then ledger accounts locked — in the
    // order every other path locks them. Counters and accounts are locked for every claimant; one
    // whose quote turns out lost only makes the batch hold a lock it did not need.
    const plan = await this.limits.prepareAllocation(tx, now, claimants.map((i) => jobs[i]!.limitSubject));
    const accountKeys = new Map<string, { asset: string; kind: AccountKind }>();
    for (const i of claimants) for (const p of jobs[i]!.entry.postings) accountKeys.set(`${p.asset}/${p.account}`, { asset: p.asset, kind: p.account });
    const held = await lockBatch(tx, partition, now, claims, plan, [...accountKeys.values()]);
    const lost = claims.filter((c) => !held.consumed.has(c.quoteId));
    if (lost.length > 0) {
      const states = await quoteStates(tx, partition, lost.map((c) => c.quoteId));
      for (const claim of lost) {
        const state = states.get(claim.quoteId);
        const error = !state ? notFound('quote') : state.consumed ? quoteError('consumed') : quoteError('expired');
        refusals.set(firstByQuote.get(claim.quoteId)!, error);
      }
    }
    const candidates = jobs.map((_, i) => i).filter((i) => !refusals.has(i));
    const allocator = await plan.allocator(tx, partition, held.usage);
    const locked = held.accounts;
    const running = new Map(locked);

    // 3. Decide payout by payout, in arrival order: limits first, then funds (decisions.md §11).
    const accepted: number[] = [];
    for (const i of candidates) {
      const job = jobs[i]!;
      const breach = allocator.check(job.limitSubject);
      if (breach) {
        refusals.set(i, limitExceeded(breach));
        continue;
      }
      const shortfall = fundsShortfall(job, running, tenant);
      if (shortfall) {
        refusals.set(i, shortfall);
        continue;
      }
      allocator.consume(job.limitSubject);
      for (const p of job.entry.postings) running.set(`${p.asset}/${p.account}`, (running.get(`${p.asset}/${p.account}`) ?? 0n) + p.amount);
      accepted.push(i);
    }
    const refusedQuotes = candidates.filter((i) => refusals.has(i)).map((i) => jobs[i]!.quote.id);
    await releaseQuotes(tx, partition, refusedQuotes);

    // 4. Write the accepted payouts.
    const payments: NewPayment[] = [];
    for (const i of accepted) {
      const job = jobs[i]!;
      const beneficiary = await persistBeneficiary(tx, job);
      job.limitSubject.beneficiaryId = beneficiary.id;
      if (job.customerSender) await setCustomerSender(tx, partition.tenantId, partition.mode, job.customerSender.customerId, job.customerSender.sender);
      payments.push(job.payment(beneficiary));
    }
    let inserted: PaymentRow[] = [];
    if (accepted.length > 0) {
      const deltas = [...accountKeys.entries()]
        .map(([key, account]) => ({ ...account, delta: (running.get(key) ?? 0n) - (locked.get(key) ?? 0n), exists: locked.has(key) }))
        .filter((d) => d.delta !== 0n);
      await createMissingAccounts(tx, partition, deltas.filter((d) => !d.exists));
      const existing = deltas.filter((d) => d.exists);
      const written = await writeAcceptedPayouts(tx, partition, {
        payments,
        entries: accepted.map((i) => {
          assertBalanced(jobs[i]!.entry);
          return { id: randomUUID(), kind: 'payout', paymentId: jobs[i]!.paymentId, postings: jobs[i]!.entry.postings };
        }),
        usage: allocator.increments(),
        accountDeltas: existing,
      });
      inserted = written.payments;
      if (inserted.length !== accepted.length) throw new Error('invariant: batch inserted a different number of payments');
      if (written.accountsUpdated !== existing.length) throw new Error(`invariant: ${existing.length} locked accounts, ${written.accountsUpdated} updated`);
    }
    const byId = new Map(inserted.map((p) => [p.id, p]));
    return jobs.map((job, i) => (refusals.has(i) ? { ok: false as const, error: refusals.get(i) } : { ok: true as const, payment: byId.get(job.paymentId)! }));
  }
}

async function persistBeneficiary(tx: Queryable, job: CommitJob): Promise<BeneficiaryRow> {
  if ('id' in job.beneficiary) return job.beneficiary;
  const { tenantId, mode } = job.partition;
  const inserted = await insertBeneficiaryIfNew(tx, tenantId, mode, randomUUID(), job.beneficiary);
  const row = inserted ?? (await findBeneficiaryByIdentity(tx, tenantId, mode, job.beneficiary));
  if (!row) throw new Error('invariant: inline beneficiary neither inserted nor found');
  return row;
}

/** The refusal if this payout's charge does not fit the running balance or credit line. */
function fundsShortfall(job: CommitJob, running: Map<string, bigint>, tenant: TenantRow): ApiError | undefined {
  const charge = job.entry.postings.find((p) => p.account === job.funding && p.amount > 0n);
  if (!charge) throw new Error('invariant: a payout entry charges its funding account');
  const balance = running.get(`${charge.asset}/${charge.account}`) ?? 0n;
  if (job.funding === 'prefunding') {
    // Prefunding is credit-normal: what is available is the negated balance.
    if (balance + charge.amount <= 0n) return undefined;
    const available = -balance > 0n ? -balance : 0n;
    return new ApiError('insufficient_tenant_funds', `The prefunding balance does not cover this payout: ${charge.amount} ${charge.asset} minor units needed.`, {
      asset: charge.asset,
      required: charge.amount.toString(),
      available: available.toString(),
    });
  }
  const limit = tenant.credit_limit;
  if (limit === null || balance + charge.amount <= limit) return undefined;
  return new ApiError('insufficient_tenant_funds', `This payout would take credit drawn past the credit limit of ${limit} minor units.`, {
    asset: charge.asset,
    required: charge.amount.toString(),
    credit_drawn: balance.toString(),
    credit_limit: limit.toString(),
  });
}

export function quoteError(kind: 'consumed' | 'expired'): ApiError {
  return kind === 'consumed'
    ? new ApiError('quote_already_consumed', 'This quote was already used by a payout. Create a new quote.')
    : new ApiError('quote_expired', 'This quote has expired. Create a new quote and pay with it.');
}
