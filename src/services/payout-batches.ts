// POST /v1/payout-batches and its reads (docs/payout-batches.md): many payouts in one call. Each item
// is a payout as POST /v1/payouts makes it — the same checks, the same payout commit transactions (the
// committer's one-writer path, in the one lock order), the same states, webhooks and reaper — with
// the request's own costs (authentication, parsing, the key, the reads of its references) paid once
// per batch instead of once per payout.
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/database.ts';
import { inTransaction } from '../db/commit/transaction.ts';
import {
  claimPayoutBatch,
  completePayoutBatch,
  findPayoutBatch,
  findPayoutBatchByKey,
  listPayoutBatches,
  recordPayoutBatchItems,
  releasePayoutBatch,
  tallyPayoutBatches,
  takeOverPayoutBatch,
  type BatchItemRecord,
  type BatchItemRow,
  type BatchScope,
  type BatchTally,
  type PayoutBatchRow,
} from '../db/repositories/payout-batches.ts';
import { anyLiveIdempotencyKey } from '../db/repositories/idempotency.ts';
import { readPayoutReferences, type PayoutReads } from '../db/repositories/payout-reads.ts';
import { deleteUnusedBatchQuotes, insertQuotes, type NewQuote } from '../db/repositories/quotes.ts';
import { findRate } from '../db/repositories/rates.ts';
import { parseRate, railFloorMinor } from '../domain/money.ts';
import type { Clock } from '../domain/clock.ts';
import { ApiError, validationFailed, type FieldError } from '../domain/errors.ts';
import { answerForStoredKey } from '../domain/idempotency.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import type { Partition } from '../domain/partition.ts';
import type { BackgroundShare } from './background-share.ts';
import { mapBounded, Window } from './bounded-concurrency.ts';
import type { Committer } from './commit/committer.ts';
import type { LimitRuleSource } from './limits.ts';
import { BatchPrecheck, unpayableBatchRefusal } from './payout-batch-precheck.ts';
import type { PayoutJob } from './commit/payout-lane.ts';
import { canonicalItem, itemKeyOf, refusalOf, type BatchItemRequest, type ItemOutcome } from './payout-batch-items.ts';
import { keyInProgress, keyReused } from './payout-refusals.ts';
import { validate, type CheckedPayout, type PayoutService } from './payouts.ts';
import type { QuoteService } from './quotes.ts';
import type { WriterAnswer } from './commit/writer-answer.ts';
import { assert } from '../domain/assert.ts';

export interface PayoutBatchSettings {
  /** PAYOUT_BATCH_MAX_ITEMS: the most items one batch may carry. */
  maxItems: number;
  /** PAYOUT_BATCHES_IN_PROGRESS_MAX: batches of one tenant and mode recording their items at once. */
  inProgressMax: number;
}

/**
 * How long a request holds its batch while recording the items; past it (the process died) a retry
 * with the same key takes the batch over. A batch of 1,000 is answered in well under 2 s; a retry that
 * comes while the first request still runs is safe anyway (each item is paid once, by its reference).
 */
const PAYOUT_BATCH_LEASE_MS = 15_000;
/** Items of one batch waiting in the committer at once: room for other payouts between its transactions. */
const ITEMS_IN_COMMIT_MAX = 512;
/** Items of one batch being prepared at once (routing asks the rails whether they can deliver). */
const PREPARE_CONCURRENCY = 32;
/**
 * Items handled in one turn of the background share (services/background-share.ts): preparing and
 * checking an item resolves without I/O, so a batch of 1,000 would otherwise hold the process, and
 * every other tenant's request with it (docs/scaling.md, "Batch items yield to requests").
 */
const ITEMS_PER_TURN = 25;
/** The item at `index` is the last of its slice: a turn of the share comes after it. */
const endsSlice = (index: number) => index % ITEMS_PER_TURN === ITEMS_PER_TURN - 1;
/** Field errors listed in one 400, at most (the message says how many more there were). */
const FIELD_ERRORS_MAX = 100;

/** A payment past these statuses changes no more (a settled one may still be returned). */
const OPEN_STATUSES = new Set(['created', 'pending', 'submitted', 'unknown']);
const ITEM_STATUSES = [
  'created',
  'pending',
  'submitted',
  'unknown',
  'settled',
  'failed',
  'returned',
  'reversed',
  'refused',
] as const;
const NO_QUOTE = '00000000-0000-0000-0000-000000000000';
/** What the payout commit transaction answers the second of two payouts with one key in it. */
const SAME_KEY_IN_TRANSACTION = new Set(['idempotency_request_in_progress', 'idempotency_key_reused']);

export interface BatchContext {
  key: string;
  fingerprint: string;
  requestId: string;
  createdByKeyId: string;
}

export class PayoutBatchService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly payouts: PayoutService,
    private readonly quotes: QuoteService,
    private readonly committer: Committer,
    private readonly limits: Pick<LimitRuleSource, 'ruleSet'>,
    private readonly settings: PayoutBatchSettings,
    private readonly background: BackgroundShare,
    private readonly log?: FastifyBaseLogger,
  ) {}

  async create(partition: Partition, items: readonly BatchItemRequest[], context: BatchContext): Promise<WriterAnswer> {
    if (items.length > this.settings.maxItems) {
      throw new ApiError(
        'payout_batch_too_large',
        `A batch carries at most ${this.settings.maxItems} items; this one has ${items.length}. Split it into several batches, each with its own Idempotency-Key (the SDK's payoutBatches.createAll does this).`,
        { maxItems: this.settings.maxItems, items: items.length },
      );
    }
    const bankCodes = await this.payouts.bankCodes(partition);
    const checked = await checkItems(items, bankCodes, this.background);
    await this.refuseIfUnpayable(partition, items, context.key);
    const quoted = await this.priceDeliverItems(partition, items);
    const now = this.clock.now();
    const scope: BatchScope = partition;
    const claim = await inTransaction(this.db, (tx) =>
      claimPayoutBatch(tx, scope, {
        id: randomUUID(),
        key: context.key,
        fingerprint: context.fingerprint,
        itemCount: items.length,
        createdByKeyId: context.createdByKeyId,
        now,
        leasedUntil: new Date(now.getTime() + PAYOUT_BATCH_LEASE_MS),
        inProgressMax: this.settings.inProgressMax,
      }),
    );
    if (claim.kind === 'too_many') {
      throw new ApiError(
        'payout_batches_in_progress',
        `At most ${this.settings.inProgressMax} batches of a tenant are recorded at once; retry once one has been answered.`,
        { inProgressMax: this.settings.inProgressMax },
      );
    }
    let batch = claim.batch;
    if (claim.kind === 'existing') {
      const held = await this.resume(scope, claim.batch, context.fingerprint, now);
      if (held === 'replay') return { status: 201, body: await this.answer(scope, batch.id), replayed: true };
      batch = held;
    }
    try {
      const records = await this.decideItems(partition, batch, items, checked, quoted, bankCodes, context);
      const held = await recordPayoutBatchItems(
        this.db,
        scope,
        batch.id,
        batch.leased_until!,
        records,
        this.clock.now(),
      );
      // This request ran past its lease and a retry took the batch over: the retry's results stand.
      if (!held)
        this.log?.warn(
          { batchId: batch.id },
          "payout batch: taken over by a retry while this request ran; its results are the retry's",
        );
    } catch (error) {
      // Let a retry take the batch over at once: its items already paid are answered by reference.
      await releasePayoutBatch(this.db, scope, batch.id, this.clock.now()).catch(() => undefined);
      throw error;
    }
    return { status: 201, body: await this.answer(scope, batch.id), replayed: claim.kind === 'existing' };
  }

  /**
   * A batch that cannot pay even its cheapest item is refused whole (422 insufficient_tenant_funds)
   * before any item is priced or looked up: a few reads, not a thousand items' work and writes. Not when
   * the key names a batch already (its retry answers it as it stands), nor when an item's reference
   * has paid (the retry of a batch that spent the balance answers those items with their payments).
   */
  private async refuseIfUnpayable(
    partition: Partition,
    items: readonly BatchItemRequest[],
    key: string,
  ): Promise<void> {
    const refusal = await unpayableBatchRefusal(this.db, partition, items);
    if (!refusal) return;
    const now = this.clock.now();
    if (await findPayoutBatchByKey(this.db, partition, key)) return;
    if (
      await anyLiveIdempotencyKey(
        this.db,
        partition,
        items.map((item) => itemKeyOf(item.reference)),
        now,
      )
    )
      return;
    throw refusal;
  }

  /** A batch the key already names: replayed, taken over (its request stopped), or refused. */
  private async resume(
    scope: BatchScope,
    batch: PayoutBatchRow,
    fingerprint: string,
    now: Date,
  ): Promise<PayoutBatchRow | 'replay'> {
    if (batch.fingerprint !== fingerprint) throw keyReused();
    if (batch.status !== 'receiving') return 'replay';
    if (batch.leased_until && batch.leased_until.getTime() > now.getTime()) throw keyInProgress();
    const leasedUntil = new Date(now.getTime() + PAYOUT_BATCH_LEASE_MS);
    if (!(await takeOverPayoutBatch(this.db, scope, batch, now, leasedUntil))) throw keyInProgress();
    this.log?.info(
      { batchId: batch.id },
      'payout batch: taken over from a request that stopped; its paid items are answered by reference',
    );
    return { ...batch, leased_until: leasedUntil };
  }

  /**
   * Every item's outcome, in item order: each decided as a single payout would be, against the running
   * totals. What needs no lock is prepared for every item first (concurrently, bounded); the payouts
   * then enter the committer strictly in item order, so its transactions decide them in that order.
   */
  private async decideItems(
    partition: Partition,
    batch: PayoutBatchRow,
    items: readonly BatchItemRequest[],
    checked: readonly CheckedPayout[],
    quoted: ReadonlyArray<NewQuote | undefined>,
    bankCodes: Awaited<ReturnType<PayoutService['bankCodes']>>,
    context: BatchContext,
  ): Promise<BatchItemRecord[]> {
    const keys = items.map((item) => ({
      key: itemKeyOf(item.reference),
      fingerprint: createHash('sha256').update(canonicalItem(item)).digest('hex'),
    }));
    const reads = await readPayoutReferences(
      this.db,
      items.map((item, i) => ({
        ...partition,
        key: keys[i]!.key,
        quoteId: item.quoteId ?? NO_QUOTE,
        beneficiaryId: item.beneficiaryId,
        customerId: item.customerId,
      })),
    );
    const fresh = this.deliverQuotesOf(quoted, reads);
    const prepared = await mapBounded(
      items,
      PREPARE_CONCURRENCY,
      (item, i) =>
        this.prepareItem(
          partition,
          item,
          checked[i]!,
          reads[i]!,
          {
            ...keys[i]!,
            requestId: context.requestId,
            createdByKeyId: context.createdByKeyId,
            batch: { id: batch.id, item: i },
          },
          bankCodes,
        ),
      async (i) => {
        if (endsSlice(i)) await this.background.turn();
      },
    );
    await this.precheck(partition, prepared);
    // Only the quotes of items still going to their transaction are written.
    const written = fresh.filter((quote, i) => quote !== undefined && 'job' in prepared[i]!) as NewQuote[];
    await insertQuotes(this.db, written);
    const settled = await this.commitInItemOrder(partition, prepared, keys);
    // An item its transaction refused after all (another request spent meanwhile, a rule the precheck
    // leaves to the transaction) leaves no quote behind.
    await deleteUnusedBatchQuotes(
      this.db,
      partition.tenantId,
      fresh.flatMap((quote, i) => (quote && settled[i]!.kind === 'refused' ? [quote.id] : [])),
    );
    return settled.map((outcome, i) => ({
      index: i,
      reference: items[i]!.reference,
      paymentId: outcome.kind === 'payment' ? outcome.paymentId : null,
      amount: reads[i]!.quote?.deliver_amount ?? (items[i]!.deliver ? BigInt(items[i]!.deliver!.amount) : null),
      refusal: outcome.kind === 'refused' ? outcome.refusal : null,
    }));
  }

  /** An item's payout ready for the committer, or its outcome already (its reference has paid, or a single payout would have refused it). */
  private async prepareItem(
    partition: Partition,
    item: BatchItemRequest,
    checked: CheckedPayout,
    reads: PayoutReads,
    context: Parameters<PayoutService['prepare']>[4],
    bankCodes: Awaited<ReturnType<PayoutService['bankCodes']>>,
  ): Promise<{ job: PayoutJob } | ItemOutcome> {
    try {
      if (reads.key) {
        const known = this.fromKey(reads.key, context.fingerprint);
        if (known) return known;
      }
      const { job } = await this.payouts.prepare(
        partition,
        { ...item, quoteId: item.quoteId ?? reads.quote?.id ?? NO_QUOTE },
        checked,
        reads,
        context,
        bankCodes,
      );
      return { job };
    } catch (error) {
      if (error instanceof ApiError) return refusalOf(error);
      throw error;
    }
  }

  /**
   * Every prepared item's outcome, in item order: the payouts enter the committer one after another in
   * that order (so its transactions decide them so), at most ITEMS_IN_COMMIT_MAX of them waiting there
   * at once, leaving room for other payouts between the batch's transactions.
   */
  private async commitInItemOrder(
    partition: Partition,
    prepared: ReadonlyArray<{ job: PayoutJob } | ItemOutcome>,
    keys: ReadonlyArray<{ key: string; fingerprint: string }>,
  ): Promise<ItemOutcome[]> {
    const window = new Window(ITEMS_IN_COMMIT_MAX);
    const outcomes: Array<Promise<ItemOutcome>> = [];
    for (const [i, item] of prepared.entries()) {
      if ('kind' in item) {
        outcomes.push(Promise.resolve(item));
        continue;
      }
      await window.slot();
      outcomes.push(this.commitItem(partition, item.job, keys[i]!).finally(() => window.release()));
    }
    return Promise.all(outcomes);
  }

  /** Submits one payout to the committer at once (the caller keeps item order) and reads what became of it. */
  private async commitItem(
    partition: Partition,
    job: PayoutJob,
    { key, fingerprint }: { key: string; fingerprint: string },
  ): Promise<ItemOutcome> {
    try {
      const result = await this.committer.submit(this.payouts.payoutLane, partition, job);
      switch (result.kind) {
        case 'accepted':
          return { kind: 'payment', paymentId: result.payment.id };
        case 'answered':
          return outcomeOfAnswer(result.answer.status, result.answer.body);
        case 'error':
          if (!SAME_KEY_IN_TRANSACTION.has(result.error.code)) return refusalOf(result.error);
          // Another item with this reference (a concurrent batch's) was decided first in the same
          // transaction, now committed: its key tells what the reference became.
          return (await this.fromKeyNow(partition, key, fingerprint)) ?? refusalOf(result.error);
        case 'key_taken':
          return this.fromKey(result.stored, fingerprint) ?? refusalOf(keyInProgress());
      }
    } catch (error) {
      if (error instanceof ApiError) return refusalOf(error);
      throw error;
    }
  }

  /** What an item's reference holds as committed now, read again (undefined: nothing, it may pay). */
  private async fromKeyNow(partition: Partition, key: string, fingerprint: string): Promise<ItemOutcome | undefined> {
    const [reads] = await readPayoutReferences(this.db, [
      { ...partition, key, quoteId: NO_QUOTE, beneficiaryId: undefined, customerId: undefined },
    ]);
    return reads?.key ? this.fromKey(reads.key, fingerprint) : undefined;
  }

  /** What an item's reference already holds: its payment, or why it cannot be paid again. */
  private fromKey(stored: NonNullable<PayoutReads['key']>, fingerprint: string): ItemOutcome | undefined {
    const answer = answerForStoredKey(stored, fingerprint, this.clock.now());
    switch (answer.kind) {
      case 'absent':
        return undefined;
      case 'mismatch':
        return refusalOf(
          new ApiError(
            'reference_reused',
            'This reference already paid a different payout within the last 24 hours: a reference pays once. Use a new reference for a new payout.',
            { paymentId: stored.paymentId },
          ),
        );
      case 'in_progress':
        return refusalOf(keyInProgress());
      case 'replay':
        return outcomeOfAnswer(answer.status, answer.body);
      case 'payment':
        return { kind: 'payment', paymentId: answer.paymentId };
    }
  }

  /**
   * The quote of each `deliver` item, as POST /v1/quotes would make it in deliver mode with the
   * tenant's fee; not written. Worked out before the batch is claimed: an amount no quote can be made
   * for is a malformed item (400 naming it), and a malformed batch writes nothing.
   */
  private async priceDeliverItems(
    partition: Partition,
    items: readonly BatchItemRequest[],
  ): Promise<Array<NewQuote | undefined>> {
    const wanted = items.map((item) =>
      item.deliver ? { amount: item.deliver.amount, customerId: item.customerId } : undefined,
    );
    if (!wanted.some((w) => w !== undefined)) return [];
    const { quotes, errors } = await this.quotes.deliverQuotes(partition, wanted);
    if (errors.length > 0)
      throw validationFailed(errors.map((e) => ({ field: `items.${e.index}.deliver.amount`, message: e.message })));
    return quotes;
  }

  /**
   * The quotes of the `deliver` items whose reference has not paid (no live key: an item whose
   * reference holds one is answered from it), each made its item's quote in memory; written only for
   * the items that pass the precheck. By item index.
   */
  private deliverQuotesOf(
    quoted: ReadonlyArray<NewQuote | undefined>,
    reads: PayoutReads[],
  ): Array<NewQuote | undefined> {
    const now = this.clock.now().getTime();
    const quotes = quoted.map((quote, i) =>
      reads[i]!.key && reads[i]!.key!.expiresAt.getTime() > now ? undefined : quote,
    );
    quotes.forEach((quote, i) => {
      if (quote) reads[i]!.quote = { ...quote, consumed_at: null, payment_id: null };
    });
    return quotes;
  }

  /**
   * Each item that would go to its transaction, in item order, against the tenant's funds and limits as
   * read now (payout-batch-precheck.ts): one it cannot pay is refused here, as its payout would be, and
   * costs no quote and no transaction. Replaces those items' entries in `prepared`.
   */
  private async precheck(partition: Partition, prepared: Array<{ job: PayoutJob } | ItemOutcome>): Promise<void> {
    const jobs = prepared.flatMap((p) => ('job' in p ? [p.job] : []));
    if (jobs.length === 0) return;
    const now = this.clock.now();
    const [{ rules }, usd] = await Promise.all([this.limits.ruleSet(this.db), findRate(this.db, 'USD')]);
    // No USD rate: every transaction answers rate_unavailable; nothing to check here.
    if (!usd) return;
    const floor = railFloorMinor(parseRate(usd.market_text));
    const check = await BatchPrecheck.read(
      this.db,
      partition,
      rules,
      jobs.map((job) => job.candidate.spend.asset),
      now,
    );
    const claimed = new Set<string>();
    for (const [i, entry] of prepared.entries()) {
      if (endsSlice(i)) await this.background.turn();
      if (!('job' in entry)) continue;
      const { candidate: c, quote } = entry.job;
      // A quote used, expired or claimed by an earlier item is refused by the transaction for that.
      if (quote.consumed_at !== null || quote.expires_at.getTime() <= now.getTime() || claimed.has(c.quoteId)) continue;
      const consumes = c.routeFailure === null && !c.senderMissing && c.deliverAmount >= floor;
      const refusal = check.refusal({
        spend: c.spend,
        deliverAmount: c.deliverAmount,
        method: c.method,
        customerId: c.customerId,
        beneficiaryId: c.beneficiaryId,
        consumes,
      });
      if (refusal) prepared[i] = refusalOf(refusal);
      else claimed.add(c.quoteId);
    }
  }

  /** The batch as it stands: GET /v1/payout-batches/{id}, and the answer of its POST. */
  async get(partition: Partition, id: string): Promise<string> {
    return this.answer(partition, id);
  }

  private async answer(scope: BatchScope, id: string): Promise<string> {
    const found = await findPayoutBatch(this.db, scope, id);
    if (!found) throw new ApiError('resource_not_found', 'No such payout batch.');
    const tallies = tallyOf(found.items);
    const batch = await this.completeIfFinal(scope, found.batch, tallies);
    const view: PayoutBatchView = { ...summaryOf(batch, tallies), items: found.items.map(itemView) };
    return JSON.stringify(view);
  }

  async list(
    partition: Partition,
    page: { limit: number; cursor?: string },
  ): Promise<{ data: PayoutBatchSummaryView[]; has_more: boolean; next_cursor: string | null }> {
    const rows = await listPayoutBatches(this.db, partition, { limit: page.limit, after: positionAfter(page.cursor) });
    const paged = pageOf(rows, page.limit);
    const tallies = await tallyPayoutBatches(
      this.db,
      partition,
      paged.rows.map((r) => r.id),
    );
    const data: PayoutBatchSummaryView[] = [];
    for (const row of paged.rows) {
      const own = tallies.filter((t) => t.batch_id === row.id);
      data.push(summaryOf(await this.completeIfFinal(partition, row, own), own));
    }
    return { data, has_more: paged.hasMore, next_cursor: paged.nextCursor };
  }

  /**
   * A batch whose every item is final is marked completed, at the time its last payment became final:
   * found on the read that first sees it, so the outcome path (which settles payments) writes nothing
   * more for batches.
   */
  private async completeIfFinal(
    scope: BatchScope,
    batch: PayoutBatchRow,
    tallies: readonly BatchTally[],
  ): Promise<PayoutBatchRow> {
    if (batch.status !== 'processing' || tallies.some((t) => OPEN_STATUSES.has(t.status))) return batch;
    // Items all paid before the batch (by earlier batches with their references) completed it as it was made.
    const last = tallies.reduce<Date>(
      (latest, t) => (t.last_change && t.last_change > latest ? t.last_change : latest),
      batch.created_at,
    );
    await completePayoutBatch(this.db, scope, batch.id, last);
    return { ...batch, status: 'completed', completed_at: last };
  }
}

export interface PayoutBatchSummaryView {
  id: string;
  status: PayoutBatchRow['status'];
  itemCount: number;
  counts: Record<string, number>;
  totals: Record<string, string>;
  createdAt: string;
  completedAt: string | null;
}

interface PayoutBatchView extends PayoutBatchSummaryView {
  items: ReturnType<typeof itemView>[];
}

function summaryOf(batch: PayoutBatchRow, tallies: readonly BatchTally[]): PayoutBatchSummaryView {
  const counts: Record<string, number> = Object.fromEntries(ITEM_STATUSES.map((s) => [s, 0]));
  const totals: Record<string, bigint> = Object.fromEntries(ITEM_STATUSES.map((s) => [s, 0n]));
  for (const t of tallies) {
    counts[t.status] = (counts[t.status] ?? 0) + t.items;
    totals[t.status] = (totals[t.status] ?? 0n) + BigInt(t.amount);
  }
  return {
    id: batch.id,
    status: batch.status,
    itemCount: batch.item_count,
    counts,
    totals: Object.fromEntries(Object.entries(totals).map(([s, v]) => [s, v.toString()])),
    createdAt: batch.created_at.toISOString(),
    completedAt: batch.completed_at?.toISOString() ?? null,
  };
}

/** The tallies of one batch from its items (the read that has them all anyway). */
function tallyOf(items: readonly BatchItemRow[]): BatchTally[] {
  const byStatus = new Map<string, BatchTally>();
  for (const item of items) {
    const status = item.status ?? 'refused';
    const tally = byStatus.get(status) ?? { batch_id: '', status, items: 0, amount: 0n, last_change: null };
    tally.items += 1;
    tally.amount += item.amount === null ? 0n : BigInt(item.amount);
    if (item.updated_at && (!tally.last_change || item.updated_at > tally.last_change))
      tally.last_change = item.updated_at;
    byStatus.set(status, tally);
  }
  return [...byStatus.values()];
}

function itemView(item: BatchItemRow) {
  const refused = item.payment_id === null;
  return {
    index: item.item_index,
    reference: item.reference,
    status: refused ? 'refused' : item.status!,
    paymentId: item.payment_id,
    reason: item.status === 'failed' ? item.status_reason : null,
    amount: item.amount === null ? null : item.amount.toString(),
    error: item.refusal,
  };
}

/** A payout's stored answer: 201 names its payment; anything else is the error it answered. */
function outcomeOfAnswer(status: number, body: string): ItemOutcome {
  const parsed = JSON.parse(body) as {
    id?: string;
    error?: { code: string; message: string; meta?: Record<string, unknown> };
  };
  if (status === 201 && parsed.id) return { kind: 'payment', paymentId: parsed.id };
  assert(parsed.error, `a stored payout answer (${status}) is neither a payment nor an error`);
  return {
    kind: 'refused',
    refusal: {
      code: parsed.error.code,
      message: parsed.error.message,
      ...(parsed.error.meta ? { meta: parsed.error.meta } : {}),
    },
  };
}

/**
 * Each item's own rules, before anything is written: exactly one of `quoteId` or `deliver`, a reference
 * used once in the batch, and the payout's field rules. Any violation rejects the whole batch (400),
 * every field named with its item's index.
 */
async function checkItems(
  items: readonly BatchItemRequest[],
  bankCodes: Awaited<ReturnType<PayoutService['bankCodes']>>,
  background: BackgroundShare,
): Promise<CheckedPayout[]> {
  const errors: FieldError[] = [];
  const firstOf = new Map<string, number>();
  const checked: CheckedPayout[] = [];
  for (const [i, item] of items.entries()) {
    if (endsSlice(i)) await background.turn();
    checked.push(checkItem(item, i, bankCodes, firstOf, errors));
  }
  if (errors.length > 0) {
    const shown = errors.slice(0, FIELD_ERRORS_MAX);
    const more = errors.length - shown.length;
    throw validationFailed(
      shown,
      `${shown.map((e) => `${e.field}: ${e.message}`).join('; ')}${more > 0 ? `; and ${more} more` : ''}. Nothing was written.`,
    );
  }
  return checked;
}

/** One item's checks; its field errors are added to `errors`, and its reference to `firstOf`. */
function checkItem(
  item: BatchItemRequest,
  i: number,
  bankCodes: Awaited<ReturnType<PayoutService['bankCodes']>>,
  firstOf: Map<string, number>,
  errors: FieldError[],
): CheckedPayout {
  const at = (field: string) => `items.${i}.${field}`;
  if ((item.quoteId === undefined) === (item.deliver === undefined)) {
    errors.push({
      field: at('quoteId'),
      message:
        'send exactly one of quoteId (a quote you made) or deliver {asset: "BS", amount} (quoted now with your fee)',
    });
  }
  const first = firstOf.get(item.reference);
  if (first !== undefined)
    errors.push({
      field: at('reference'),
      message: `repeats the reference of items.${first}: each item of a batch has its own reference`,
    });
  else firstOf.set(item.reference, i);
  try {
    return validate(item, bankCodes);
  } catch (error) {
    const fields = error instanceof ApiError ? ((error.meta?.errors as FieldError[] | undefined) ?? []) : [];
    if (fields.length === 0) throw error;
    errors.push(...fields.map((e) => ({ field: at(e.field), message: e.message })));
    return {};
  }
}
