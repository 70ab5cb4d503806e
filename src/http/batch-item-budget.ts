// A payout batch costs what its payouts cost: each item is charged to a budget of items per second,
// one per API key (RATE_LIMIT_RPS: an item counts as the request it replaces) and one per tenant
// across its keys (PAYOUT_BATCH_TENANT_ITEMS_PER_S), so a batch is not one cheap call however many
// payouts it carries, and more keys do not buy a tenant more. Token buckets: each holds at most one
// full batch (PAYOUT_BATCH_MAX_ITEMS, or a second of its rate if that is more), refilled at its rate,
// so a full batch passes at once and the next waits for the refill. Per process, in memory, like the
// request limit. Hand-written: the request limiter (@fastify/rate-limit) counts one per request and
// cannot charge n at once, and a bucket is a dozen lines.

import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import type { App } from './types.ts';

/** Buckets kept per budget at most; a full bucket is the same as none, so full ones are dropped first. */
const BUCKETS_MAX = 10_000;

class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly capacity: number,
  ) {}

  /** The bucket of `key` refilled to `now` (made full when new). */
  private bucket(key: string, now: number): { tokens: number; atMs: number } {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= BUCKETS_MAX) this.evict(now);
      bucket = { tokens: this.capacity, atMs: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.atMs) * this.perSecond) / 1000);
    bucket.atMs = now;
    return bucket;
  }

  /** Milliseconds until `n` could be taken from `key` (0: now). Takes nothing. */
  waitMs(key: string, n: number, now: number): number {
    if (this.perSecond === 0) return 0;
    const bucket = this.bucket(key, now);
    return bucket.tokens >= n ? 0 : Math.ceil(((n - bucket.tokens) * 1000) / this.perSecond);
  }

  take(key: string, n: number, now: number): void {
    if (this.perSecond === 0) return;
    this.bucket(key, now).tokens -= n;
  }

  private evict(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.atMs) * this.perSecond) / 1000 >= this.capacity) this.buckets.delete(key);
    }
    // Still full of busy buckets: the oldest goes (Map order is insertion order).
    if (this.buckets.size >= BUCKETS_MAX) this.buckets.delete(this.buckets.keys().next().value!);
  }
}

export type BatchItemCharge =
  { ok: true } | { ok: false; retryAfterS: number; budget: 'key' | 'tenant'; perSecond: number };

export class BatchItemBudget {
  private readonly perKey: TokenBuckets;
  private readonly perTenant: TokenBuckets;

  constructor(
    readonly keyItemsPerSecond: number,
    readonly tenantItemsPerSecond: number,
    maxItems: number,
    private readonly nowMs: () => number,
  ) {
    this.perKey = new TokenBuckets(keyItemsPerSecond, Math.max(maxItems, keyItemsPerSecond));
    this.perTenant = new TokenBuckets(tenantItemsPerSecond, Math.max(maxItems, tenantItemsPerSecond));
  }

  /** Charges `items` to the key and its tenant, both or neither: a refusal says which budget and how long until the batch fits. */
  charge(keyId: string, tenantId: string, items: number): BatchItemCharge {
    const now = this.nowMs();
    const keyWait = this.perKey.waitMs(keyId, items, now);
    const tenantWait = this.perTenant.waitMs(tenantId, items, now);
    if (keyWait === 0 && tenantWait === 0) {
      this.perKey.take(keyId, items, now);
      this.perTenant.take(tenantId, items, now);
      return { ok: true };
    }
    const byKey = keyWait >= tenantWait;
    return {
      ok: false,
      retryAfterS: Math.max(1, Math.ceil(Math.max(keyWait, tenantWait) / 1000)),
      budget: byKey ? 'key' : 'tenant',
      perSecond: byKey ? this.keyItemsPerSecond : this.tenantItemsPerSecond,
    };
  }
}

/** This process's batch item budget, as configured (RATE_LIMIT_RPS per key, PAYOUT_BATCH_TENANT_ITEMS_PER_S per tenant). */
export function batchItemBudgetOf(
  config: Pick<Config, 'rateLimitRps' | 'payoutBatchTenantItemsPerS' | 'payoutBatchMaxItems'>,
  clock: Clock,
): BatchItemBudget {
  return new BatchItemBudget(config.rateLimitRps, config.payoutBatchTenantItemsPerS, config.payoutBatchMaxItems, () =>
    clock.now().getTime(),
  );
}

/**
 * Charges a route's items (`config.itemBudget`: its body's `items`) once the body is parsed and before
 * anything else is done with it: a batch over its budget is answered 429 without its fingerprint taken
 * or its 1,000 items validated, so a client retrying too early costs the parse alone. Registered before
 * the Idempotency-Key layer. A body without an `items` array, or with more than the batch bound, is
 * left to validation and the service (400, no budget spent).
 */
export function registerBatchItemBudget(app: App, budget: BatchItemBudget, maxItems: number): void {
  app.addHook('preValidation', async function chargeBatchItems(request, reply) {
    if (request.routeOptions.config.itemBudget !== true || !request.auth) return;
    const items = (request.body as { items?: unknown } | undefined)?.items;
    if (!Array.isArray(items) || items.length > maxItems) return;
    const charged = budget.charge(request.auth.apiKeyId, request.auth.tenantId, items.length);
    if (charged.ok) return;
    reply.header('retry-after', String(charged.retryAfterS));
    const whose = charged.budget === 'key' ? 'this API key' : "this key's tenant (all its keys together)";
    throw new ApiError(
      'rate_limited',
      `Payout batch items are limited to ${charged.perSecond} per second for ${whose}: this batch of ${items.length} items fits in ${charged.retryAfterS} s. Retry after ${charged.retryAfterS} s; nothing was written.`,
      {
        limit_per_second: charged.perSecond,
        budget: `batch_items_per_${charged.budget}`,
        retry_after_s: charged.retryAfterS,
      },
    );
  });
}
