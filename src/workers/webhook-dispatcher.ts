import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { relaxedOf, type Database } from '../db/database.ts';
import { claimDueEvents, recordAttempts, type AttemptRecord, type ClaimedEventRow } from '../db/repositories/events.ts';
import { nothingClaimable } from '../db/repositories/outbox.ts';
import type { Clock } from '../domain/clock.ts';
import { afterFailure, deliveryBody, deliveryHeaders, signingSecrets } from '../domain/webhooks.ts';
import type { MoneyMetrics } from '../services/money-metrics.ts';
import type { WebhookResponse, WebhookTransport } from '../webhooks/sender.ts';
import { assert, InvariantError } from '../domain/assert.ts';
import { rethrowInvariant } from '../domain/assert.ts';

/** Events claimed per pass, at most (and never more than the free delivery slots). */
const DISPATCH_BATCH_MAX = 100;
/**
 * A claim outlives the delivery timeout by this much: time to record the attempt.
 * @internal Exported for its tests, not used elsewhere.
 */
export const DISPATCH_LEASE_MARGIN_MS = 30_000;
/*
 * ASYNC_COMMIT_NOTE: claims and attempt results commit with synchronous_commit off, so they do not
 * wait for the WAL flush (the dominant cost per delivery). It is safe because losing one of these
 * commits in a database crash can only cause a redelivery, never a loss: a lost claim leaves the
 * event claimable (and a late result of that claim fails its lease check), a lost result leaves the
 * event leased until the lease expires and then delivered again. The events themselves are written
 * by the payout transactions, with the normal synchronous commit.
 */

/** Attempt results written per statement, at most. */
const RECORD_BATCH_MAX = 200;
/** A claim looks at most this many times its size ahead in the due queue. */
const CLAIM_SCAN_FACTOR = 4;
const DEFAULT_POLL_INTERVAL_MS = 200;
/** Pause between a delivery ending and the next claim for its slot. */
const CLAIM_COALESCE_MS = 1;
/** Bound on the passes of `dispatchDue` (tests, tools): it never loops forever. */
const DISPATCH_DUE_PASSES_MAX = 1000;

/** @internal Exported for its tests, not used elsewhere. */
export const NO_ENDPOINT_ERROR = 'no webhook endpoint configured';

/**
 * The slots one receiver may hold: half of the process's. A slow or hanging receiver can never
 * take more, so the other half always keeps flowing to everybody else.
 */
export function originShareOf(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency / 2));
}

export interface DispatcherSettings {
  /** WEBHOOK_TIMEOUT_MS: hard limit of one delivery. */
  timeoutMs: number;
  /** WEBHOOK_BACKOFF_SCALE: multiplies every wait of the retry schedule. */
  backoffScale: number;
  /** WEBHOOK_CONCURRENCY: deliveries in flight in this process. */
  concurrency: number;
  /** Deliveries in flight to one receiver (scheme://host:port); default `originShareOf(concurrency)`. */
  originConcurrency?: number;
  batchMax?: number;
  /** How long a claim outlives the delivery timeout (default DISPATCH_LEASE_MARGIN_MS). */
  leaseMarginMs?: number;
  /** DISPATCHER_INTERVAL_MS: how often newly due events are looked for while deliveries are in flight. */
  pollIntervalMs?: number;
}

export interface ClaimedEvent extends ClaimedEventRow {
  leaseToken: string;
}

/**
 * The webhook dispatcher: delivers the outbox at least once.
 *
 * A pass claims due events in one short transaction (FOR UPDATE SKIP LOCKED, then a lease of
 * timeout + margin), delivers them outside any transaction, and records each attempt with a
 * conditional update that only the lease holder can make. So several dispatcher processes never
 * deliver one attempt at the same time, and a dispatcher that dies mid-delivery loses nothing: its
 * lease expires and the same attempt is delivered again.
 *
 * Concurrency is bounded twice: `concurrency` deliveries in flight per process, and
 * `originConcurrency` per receiver, whose events are not even claimed while it is full, so one slow
 * receiver holds at most its share of the slots and the others keep flowing.
 */
export class WebhookDispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly unrecorded: Array<{
    record: AttemptRecord;
    resolve: (recorded: boolean) => void;
    reject: (error: unknown) => void;
  }> = [];
  private recording = false;
  private readonly perOrigin = new Map<string, number>();
  private readonly originMax: number;
  private readonly batchMax: number;
  private readonly pollIntervalMs: number;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly transport: WebhookTransport,
    private readonly settings: DispatcherSettings,
    private readonly log?: FastifyBaseLogger,
    private readonly metrics?: MoneyMetrics,
  ) {
    assert(settings.concurrency >= 1, 'dispatcher concurrency must be at least 1');
    this.originMax = Math.max(
      1,
      Math.min(settings.concurrency, settings.originConcurrency ?? originShareOf(settings.concurrency)),
    );
    this.batchMax = Math.max(1, settings.batchMax ?? DISPATCH_BATCH_MAX);
    this.pollIntervalMs = settings.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  }

  get deliveriesInFlight(): number {
    return this.inFlight.size;
  }

  /**
   * One pass of the worker loop: fills the free delivery slots with due events and returns without
   * waiting for those deliveries (true: run again at once). With no free slot it waits for one.
   */
  async runOnce(): Promise<boolean> {
    const free = this.settings.concurrency - this.inFlight.size;
    if (free <= 0) {
      await Promise.race(this.inFlight);
      return true;
    }
    const wanted = Math.min(free, this.batchMax);
    const claimed = await this.claim(wanted);
    for (const event of claimed) this.start(event);
    if (claimed.length === wanted) return true;
    if (this.inFlight.size > 0) {
      // What is still due may be waiting for a receiver that is full here: look again as soon as
      // a delivery ends (a moment later, so that deliveries ending together are claimed for
      // together), or after the poll interval for newly due events, whichever comes first.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.race(this.inFlight).then(() => new Promise((resolve) => setTimeout(resolve, CLAIM_COALESCE_MS))),
        new Promise((resolve) => (timer = setTimeout(resolve, this.pollIntervalMs))),
      ]);
      clearTimeout(timer);
      return true;
    }
    return false;
  }

  /** Waits for every delivery in flight to be sent and recorded. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Delivers everything due now (and whatever becomes due meanwhile), then returns: for tests and tools. */
  async dispatchDue(): Promise<void> {
    for (let pass = 0; pass < DISPATCH_DUE_PASSES_MAX; pass += 1) {
      const more = await this.runOnce();
      await this.drain();
      if (!more && (await this.nothingClaimable())) return;
    }
    throw new InvariantError(`dispatchDue did not settle within ${DISPATCH_DUE_PASSES_MAX} passes`);
  }

  /** Stops after the deliveries in flight; closes the HTTP connections. */
  async close(): Promise<void> {
    await this.drain();
    await this.transport.close();
  }

  /** Claims up to `limit` due events under a new lease (exposed so tests can simulate a crash after it). */
  async claim(limit: number): Promise<ClaimedEvent[]> {
    const now = this.clock.now();
    const leaseToken = randomUUID();
    const leaseUntil = new Date(
      now.getTime() + this.settings.timeoutMs + (this.settings.leaseMarginMs ?? DISPATCH_LEASE_MARGIN_MS),
    );
    const inFlight = [...this.perOrigin].map(([origin, count]) => ({ origin, count }));
    // One statement on the relaxed handle: atomic on its own, and the dispatcher's own bookkeeping
    // may skip the WAL flush wait (see ASYNC_COMMIT_NOTE) — one round trip instead of four.
    const rows = await claimDueEvents(relaxedOf(this.db), {
      now,
      leaseUntil,
      leaseToken,
      limit,
      originMax: this.originMax,
      inFlight,
      scanMax: limit * CLAIM_SCAN_FACTOR,
    });
    const taken = new Map<string, number>();
    for (const row of rows) if (row.origin !== null) taken.set(row.origin, (taken.get(row.origin) ?? 0) + 1);
    for (const [origin, count] of taken) {
      assert(
        count + (this.perOrigin.get(origin) ?? 0) <= this.originMax,
        `claimed ${count} events for a receiver beyond its free slots`,
      );
    }
    return rows.map((row) => ({ ...row, leaseToken }));
  }

  /** Sends one attempt (attempts + 1) of a claimed event; records nothing. */
  async send(event: ClaimedEvent): Promise<WebhookResponse> {
    if (event.url === null || event.secret === null)
      return { statusCode: null, ok: false, error: NO_ENDPOINT_ERROR, durationMs: 0 };
    const attempt = event.attempts + 1;
    const eventId = event.id.toString();
    const body = deliveryBody({ id: eventId, eventType: event.event_type, attempt, payloadText: event.payload_text });
    const now = this.clock.now();
    const secrets = signingSecrets(
      {
        secret: event.secret,
        previousSecret: event.previous_secret,
        previousSecretExpiresAt: event.previous_secret_expires_at,
      },
      now,
    );
    const headers = deliveryHeaders({
      eventId,
      eventType: event.event_type,
      attempt,
      body,
      timestampMs: now.getTime(),
      secrets,
    });
    return this.transport.send({ url: event.url, mode: event.mode, headers, body });
  }

  /**
   * Records an attempt's result if the lease is still ours; false when another dispatcher took
   * over. Results are written in batches (one statement for every result waiting when the previous
   * write ends), so the database cost per delivery falls as the rate rises, without added latency.
   */
  async record(event: ClaimedEvent, response: WebhookResponse): Promise<boolean> {
    const attempt = event.attempts + 1;
    const at = this.clock.now();
    let next: AttemptRecord['next'];
    if (response.ok) next = { status: 'published' };
    else {
      const after = afterFailure(attempt, this.settings.backoffScale);
      next = after.status === 'dead' ? after : { status: 'pending', at: new Date(at.getTime() + after.waitMs) };
    }
    const record: AttemptRecord = {
      tenantId: event.tenant_id,
      eventId: event.id,
      leaseToken: event.leaseToken,
      attempt,
      next,
      statusCode: response.statusCode,
      ok: response.ok,
      error: response.ok ? null : (response.error ?? 'failed'),
      durationMs: response.durationMs,
      at,
    };
    const recorded = await new Promise<boolean>((resolve, reject) => {
      this.unrecorded.push({ record, resolve, reject });
      this.flushRecords();
    });
    const eventId = event.id.toString();
    if (!recorded)
      this.log?.warn({ eventId, attempt }, 'webhook attempt not recorded: the lease had passed to another dispatcher');
    else if (next.status === 'dead') {
      this.log?.warn(
        {
          eventId,
          eventType: event.event_type,
          paymentId: event.aggregate_id,
          tenantId: event.tenant_id,
          mode: event.mode,
          attempt,
          statusCode: response.statusCode,
          error: response.error,
        },
        'webhook event dead: attempts exhausted (POST /v1/events/retry-dead sends it again)',
      );
    } else
      this.log?.debug(
        { eventId, attempt, ok: response.ok, statusCode: response.statusCode, durationMs: response.durationMs },
        'webhook attempt',
      );
    return recorded;
  }

  /** One writer at a time; each write takes every result waiting (up to RECORD_BATCH_MAX). */
  private flushRecords(): void {
    if (this.recording) return;
    this.recording = true;
    void (async () => {
      while (this.unrecorded.length > 0) {
        const batch = this.unrecorded.splice(0, RECORD_BATCH_MAX);
        try {
          // One statement on the relaxed handle (see the claim).
          const recorded = await recordAttempts(
            relaxedOf(this.db),
            batch.map((b) => b.record),
          );
          for (const b of batch) b.resolve(recorded.has(`${b.record.tenantId}:${b.record.eventId}`));
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      }
      this.recording = false;
    })();
  }

  private start(event: ClaimedEvent): void {
    const origin = event.origin;
    if (origin !== null) this.perOrigin.set(origin, (this.perOrigin.get(origin) ?? 0) + 1);
    const task: Promise<void> = this.deliver(event).finally(() => {
      if (origin !== null) {
        const left = (this.perOrigin.get(origin) ?? 1) - 1;
        if (left <= 0) this.perOrigin.delete(origin);
        else this.perOrigin.set(origin, left);
      }
      this.inFlight.delete(task);
    });
    this.inFlight.add(task);
  }

  private async deliver(event: ClaimedEvent): Promise<void> {
    try {
      const response = await this.send(event);
      this.metrics?.delivery(response, event.url !== null && event.secret !== null);
      await this.record(event, response);
    } catch (error) {
      rethrowInvariant(error);
      // Not recorded: the lease expires and the attempt is made again, by this or another process.
      this.log?.error({ err: error, eventId: event.id.toString() }, 'webhook delivery could not be recorded');
    }
  }

  private nothingClaimable(): Promise<boolean> {
    return nothingClaimable(this.db, this.clock.now());
  }
}
