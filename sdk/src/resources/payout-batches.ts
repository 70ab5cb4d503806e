// Payout batches: many payouts in one call (a payroll), and the two things a caller needs around it:
// a list longer than one batch may carry, sent as consecutive batches whose keys are derived from
// one key of the caller's, and a bounded wait for the outcome.
import { withApiAmounts } from '../amounts.js';
import type {
  CreatePayoutBatchData,
  ListPayoutBatchesData,
  PayoutBatch,
  PayoutBatchSummary,
} from '../generated/index.js';
import { Paginated, type PageAnswer } from '../pagination.js';
import { sleep, type RequestOptions, type Transport } from '../transport.js';
import { segment, type BodyOf, type FiltersOf, type QueryOf } from './types.js';

/** One item of a batch: a payout's body with your `reference`, and `quoteId` or `deliver`. */
export type PayoutBatchItem = BodyOf<CreatePayoutBatchData>['items'][number];

/** A batch's options: its `Idempotency-Key` is required (your payroll run's id, say). */
export type PayoutBatchOptions = RequestOptions & { idempotencyKey: string };

/** The service's default `PAYOUT_BATCH_MAX_ITEMS`: the most items one batch may carry. */
export const DEFAULT_BATCH_MAX_ITEMS = 1000;
/** The API's bound on an `Idempotency-Key`, which a derived key (`<key>:<index>`) must keep. */
const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/**
 * `createAll` stopped at a batch that got no answer or an error: `answered` holds the batches
 * answered before it, in order, and `cause` the error of batch `batchIndex`. Run `createAll` again
 * with the same key, items and `maxItems` to resume: the answered batches replay, nothing pays twice.
 */
export class PayoutBatchesIncompleteError extends Error {
  override readonly name = 'PayoutBatchesIncompleteError';
  readonly answered: PayoutBatch[];
  /** The batch that failed, from 0; its key is `<idempotencyKey>:<batchIndex>`. */
  readonly batchIndex: number;
  /** How many batches the items make. */
  readonly batchCount: number;

  constructor(answered: PayoutBatch[], batchIndex: number, batchCount: number, cause: unknown) {
    super(
      `payout batch ${batchIndex + 1} of ${batchCount} failed after ${answered.length} answered: ${(cause as Error)?.message ?? cause}`,
      { cause },
    );
    this.answered = answered;
    this.batchIndex = batchIndex;
    this.batchCount = batchCount;
  }
}

/** `waitUntilCompleted` ran out of time: `batch` is the last state read (still `receiving` or `processing`). */
export class PayoutBatchWaitTimeoutError extends Error {
  override readonly name = 'PayoutBatchWaitTimeoutError';
  readonly batch: PayoutBatch;

  constructor(batch: PayoutBatch, timeoutMs: number) {
    super(`payout batch ${batch.id} is still ${batch.status} after ${timeoutMs} ms (${batch.itemCount} items)`);
    this.batch = batch;
  }
}

function requireKey(options: PayoutBatchOptions | undefined, call: string): string {
  const key = options?.idempotencyKey;
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(
      `${call} needs { idempotencyKey }: your own id for this run (a payroll id), so that a retry answers the same batch and never pays twice`,
    );
  }
  return key;
}

/** `items` cut into consecutive runs of at most `maxItems`. */
function chunksOf<T>(items: readonly T[], maxItems: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < items.length; start += maxItems) chunks.push(items.slice(start, start + maxItems));
  return chunks;
}

export class PayoutBatchesResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Up to `PAYOUT_BATCH_MAX_ITEMS` payouts in one call, under your `Idempotency-Key`: the same key and
   * items answer the batch as it stands now, never a second payment; each item's `reference` pays
   * at most once (24 h) whatever the key.
   */
  async create(items: PayoutBatchItem[], options: PayoutBatchOptions): Promise<PayoutBatch> {
    requireKey(options, 'payoutBatches.create');
    return (
      await this.transport.request<PayoutBatch>({
        method: 'POST',
        path: '/v1/payout-batches',
        body: withApiAmounts({ items }),
        idempotent: true,
        options,
      })
    ).data;
  }

  /**
   * Any number of payouts, as consecutive batches of at most `maxItems` (the service's
   * `PAYOUT_BATCH_MAX_ITEMS`, 1000 by default), sent one after another under the keys
   * `<idempotencyKey>:0`, `<idempotencyKey>:1`, … (always derived, even for one batch). Answers every
   * batch in order.
   *
   * Running it again with the same key, items and `maxItems` replays every batch: the same batch ids,
   * no new payment. With another `maxItems` the batches differ, so a reused derived key answers 409
   * `idempotency_key_reused`; under a new key the items already paid are answered with their
   * payments, because each `reference` pays once. An error mid-way throws
   * `PayoutBatchesIncompleteError` with the batches already answered; run it again to resume.
   */
  async createAll(
    items: PayoutBatchItem[],
    options: PayoutBatchOptions & { maxItems?: number },
  ): Promise<PayoutBatch[]> {
    const key = requireKey(options, 'payoutBatches.createAll');
    const maxItems = options.maxItems ?? DEFAULT_BATCH_MAX_ITEMS;
    if (!Number.isInteger(maxItems) || maxItems < 1)
      throw new RangeError(`maxItems must be an integer >= 1 (got ${maxItems})`);
    const chunks = chunksOf(items, maxItems);
    if (`${key}:${chunks.length - 1}`.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
      throw new RangeError(
        `idempotencyKey is too long: with ":${chunks.length - 1}" it passes the ${IDEMPOTENCY_KEY_MAX_LENGTH} characters an Idempotency-Key may have`,
      );
    }
    const answered: PayoutBatch[] = [];
    for (const [index, chunk] of chunks.entries()) {
      try {
        answered.push(await this.create(chunk, { signal: options.signal, idempotencyKey: `${key}:${index}` }));
      } catch (error) {
        throw new PayoutBatchesIncompleteError([...answered], index, chunks.length, error);
      }
    }
    return answered;
  }

  /** The batch as it stands: counts, totals, each item's payment status now, `completedAt`. */
  async get(id: string, options?: RequestOptions): Promise<PayoutBatch> {
    return (
      await this.transport.request<PayoutBatch>({ method: 'GET', path: `/v1/payout-batches/${segment(id)}`, options })
    ).data;
  }

  /** One page of batches, newest first, without their items (`limit`, `cursor`). */
  async listPage(
    query: QueryOf<ListPayoutBatchesData> = {},
    options?: RequestOptions,
  ): Promise<PageAnswer<PayoutBatchSummary>> {
    return (
      await this.transport.request<PageAnswer<PayoutBatchSummary>>({
        method: 'GET',
        path: '/v1/payout-batches',
        query,
        options,
      })
    ).data;
  }

  /** Every batch, newest first, page after page: `for await (const b of client.payoutBatches.list())`. */
  list(query: FiltersOf<ListPayoutBatchesData> = {}, options?: RequestOptions): Paginated<PayoutBatchSummary> {
    return new Paginated((cursor) => this.listPage({ ...query, cursor }, options));
  }

  /**
   * Reads the batch every `intervalMs` (default 1000) until it is `completed` (every payment final or
   * refused) and answers it; past `timeoutMs` (default 60000) throws `PayoutBatchWaitTimeoutError`
   * with the last state read. The webhooks tell the same per payment, without polling.
   */
  async waitUntilCompleted(
    id: string,
    options: RequestOptions & { timeoutMs?: number; intervalMs?: number } = {},
  ): Promise<PayoutBatch> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const intervalMs = options.intervalMs ?? 1_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const batch = await this.get(id, { signal: options.signal });
      if (batch.status === 'completed') return batch;
      const left = deadline - Date.now();
      if (left <= 0) throw new PayoutBatchWaitTimeoutError(batch, timeoutMs);
      await sleep(Math.min(intervalMs, left), options.signal);
    }
  }
}
