import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import { inTransaction } from '../db/commit/transaction.ts';
import { lockAccounts, lockIdempotencyKey } from '../db/commit/single-locks.ts';
import { lockAndPostEntry } from '../db/commit/ledger-entry.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { claimDailyClose, dueCloses } from '../db/repositories/daily-closes.ts';
import { completeIdempotencyKeyInTransaction } from '../db/repositories/idempotency.ts';
import { accountBalances, fundedAssets, postedSince } from '../db/repositories/ledger.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { customerTenant } from './customer-tenant.ts';
import { businessDate, nextDate, startOfBusinessDate } from '../domain/caracas-time.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { creditCeiling } from '../domain/credit.ts';
import { answerForStoredKey, type StoredKey } from '../domain/idempotency.ts';
import { dailyCloseEntry, fundingEntry } from '../domain/ledger.ts';
import { accountKeyOf, sortedValues, type AccountRef } from '../domain/commit/keys.ts';
import { MAX_AMOUNT_MINOR } from '../domain/money.ts';
import { ApiError, notFound, validationFailed } from '../domain/errors.ts';
import type { WriterAnswer } from './commit/writer-answer.ts';
import type { Partition, Mode } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

export interface TreasuryPosition {
  tenantId: string;
  asset: string;
  prefundingBalance: string;
  platformRevenueFromTenant: string;
  creditEnabled: boolean;
  creditDrawn: string;
  creditLimit: string | null;
  creditAvailable: string | null;
}

/** The largest balance a ledger account can hold (PostgreSQL bigint). */
const BALANCE_MAX = 2n ** 63n - 1n;

export interface ClosedAsset {
  asset: string;
  /** Credit drawn that the tenant settled. */
  drawn: string;
  /** What we owed the tenant (refunds after the previous close, payments on account), netted. */
  owed: string;
}

/** Positions are read from the ledger's account balances, never kept anywhere else. */
export class TreasuryService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly idempotency: { ttlMs: number },
  ) {}

  async position(partition: Partition, asset: string, db: Queryable = this.db): Promise<TreasuryPosition> {
    const tenant = await findTenant(db, partition.tenantId);
    if (!tenant) throw notFound('tenant');
    const balances = await accountBalances(db, partition, asset);
    const drawn = balances.credit_receivable;
    const limit = creditCeiling(tenant.credit_limit, tenant.credit_limits, asset);
    return {
      tenantId: tenant.id,
      asset,
      prefundingBalance: (-balances.prefunding).toString(),
      platformRevenueFromTenant: (-balances.revenue).toString(),
      creditEnabled: tenant.credit_enabled,
      creditDrawn: drawn.toString(),
      creditLimit: limit === null ? null : limit.toString(),
      creditAvailable: limit === null ? null : (limit - drawn > 0n ? limit - drawn : 0n).toString(),
    };
  }

  /**
   * Admin funding: credits the tenant's prefunding balance. The Idempotency-Key (the caller's), the
   * ledger entry and its audit row commit in one transaction: a retried funding is credited and
   * recorded once, and answered the same.
   */
  async fund(
    caller: Partition & { key: string; fingerprint: string },
    target: { tenantId: string; mode: Mode; asset: string; amount: bigint },
    render: (position: TreasuryPosition) => string,
    actor: AuditActor,
  ): Promise<WriterAnswer> {
    if (target.amount <= 0n || target.amount > MAX_AMOUNT_MINOR) {
      throw validationFailed([{ field: 'amount', message: 'must be a positive integer amount in minor units' }]);
    }
    await customerTenant(this.db, target.tenantId);
    const partition = { tenantId: target.tenantId, mode: target.mode };
    const now = this.clock.now();
    const result = await inTransaction(this.db, async (tx) => {
      const owner = randomUUID();
      const key = await lockIdempotencyKey(tx, caller, {
        key: caller.key,
        fingerprint: caller.fingerprint,
        owner,
        now,
        expiresAt: new Date(now.getTime() + this.idempotency.ttlMs),
        lockedUntil: new Date(now.getTime() + this.idempotency.ttlMs),
      });
      if (!key.owned) return { stored: key.stored, answer: undefined };
      const prefundingOf = (balances: ReadonlyMap<string, bigint>) =>
        balances.get(accountKeyOf({ asset: target.asset, kind: 'prefunding' })) ?? 0n;
      const posted = await lockAndPostEntry(tx, partition, fundingEntry(target.asset, target.amount), {
        at: now,
        check: (balances) => {
          const treasury = balances.get(accountKeyOf({ asset: target.asset, kind: 'treasury' })) ?? 0n;
          if (-prefundingOf(balances) + target.amount > BALANCE_MAX || treasury + target.amount > BALANCE_MAX) {
            throw validationFailed([
              {
                field: 'amount',
                message: `would take the ${target.asset} balance past the largest one the ledger holds; fund less`,
              },
            ]);
          }
        },
      });
      const position = await this.position(partition, target.asset, tx);
      const body = render(position);
      await recordAudit(tx, {
        actor,
        action: 'funding.create',
        target: { type: 'funding', id: posted.id, tenantId: target.tenantId, mode: target.mode },
        before: { asset: target.asset, prefundingBalance: -prefundingOf(posted.before) },
        after: {
          asset: target.asset,
          amount: target.amount,
          prefundingBalance: position.prefundingBalance,
          idempotencyKey: caller.key,
        },
      });
      const answered = await completeIdempotencyKeyInTransaction(tx, caller, owner, { status: 201, body });
      assert(answered, 'a funding lost the Idempotency-Key it holds locked');
      return { answer: { status: 201, body, replayed: false } as WriterAnswer, stored: undefined };
    });
    if (result.answer) return result.answer;
    return fundingAnswerOfStoredKey(result.stored!, caller.fingerprint, now);
  }

  /**
   * The daily close of one tenant and mode, every asset: a credit tenant settles what it drew, net of
   * what we owe it (refunds of failures or reversals after the previous close, money sent on account).
   * A prefunded tenant's prefunding is its money, never netted: only a leftover draw is settled.
   * `businessDay` set (the scheduled close): what stood at the end of that Caracas day (the balances
   * now minus what was posted since), so a draw made after its midnight waits for the next day's
   * close; the day is recorded, so each (asset, day) closes once whatever the number of workers.
   * Without it (the admin's close), everything drawn until now. `actor` (an operator's close): the
   * close is recorded in the audit trail, in its own transaction.
   */
  async close(
    tenantId: string,
    mode: Mode,
    businessDay?: string,
    actor?: AuditActor,
  ): Promise<TreasuryPosition & { closedAmount: string; closed: ClosedAsset[] }> {
    const tenant = await customerTenant(this.db, tenantId);
    const partition = { tenantId, mode };
    const now = this.clock.now();
    const dayEnded = businessDay === undefined ? undefined : startOfBusinessDate(nextDate(businessDay));
    return inTransaction(this.db, async (tx) => {
      const assets = await fundedAssets(tx, partition);
      const refs = new Map<string, AccountRef>();
      for (const asset of assets) {
        for (const kind of ['credit_receivable', 'prefunding', 'treasury'] as const)
          refs.set(accountKeyOf({ asset, kind }), { asset, kind });
      }
      const balances = await lockAccounts(tx, partition, sortedValues(refs));
      // Read under the locks: nothing posts to these accounts between this and the close's entry.
      const since =
        dayEnded && dayEnded.getTime() <= now.getTime()
          ? await postedSince(tx, partition, dayEnded, ['credit_receivable', 'prefunding'])
          : new Map<string, bigint>();
      const closed: ClosedAsset[] = [];
      for (const asset of assets) {
        const drawnNow = balances.get(accountKeyOf({ asset, kind: 'credit_receivable' })) ?? 0n;
        const owedNow = tenant.credit_enabled ? -(balances.get(accountKeyOf({ asset, kind: 'prefunding' })) ?? 0n) : 0n;
        // What stood at the end of the day, never more than stands now (a refund since then has
        // already reduced the draw it refunds).
        const drawn = clamp(drawnNow - (since.get(accountKeyOf({ asset, kind: 'credit_receivable' })) ?? 0n), drawnNow);
        const owed = clamp(owedNow + (since.get(accountKeyOf({ asset, kind: 'prefunding' })) ?? 0n), owedNow);
        const entry = dailyCloseEntry(asset, drawn, owed);
        if (businessDay) {
          // Recorded even when there is nothing to settle, so the scheduled close never looks again.
          if (!(await claimDailyClose(tx, partition, { asset, day: businessDay, drawn }))) continue;
        }
        if (!entry) continue;
        await lockAndPostEntry(tx, partition, entry, { at: now });
        closed.push({ asset, drawn: drawn.toString(), owed: owed.toString() });
      }
      if (actor) {
        const before = Object.fromEntries(
          assets.map((asset) => [
            asset,
            {
              creditDrawn: balances.get(accountKeyOf({ asset, kind: 'credit_receivable' })) ?? 0n,
              prefundingBalance: -(balances.get(accountKeyOf({ asset, kind: 'prefunding' })) ?? 0n),
            },
          ]),
        );
        await recordAudit(tx, {
          actor,
          action: 'tenant.close',
          target: { type: 'tenant', id: tenantId, tenantId, mode },
          before,
          after: { closed },
        });
      }
      const bs = closed.find((c) => c.asset === 'BS');
      return { ...(await this.position(partition, 'BS', tx)), closedAmount: bs?.drawn ?? '0', closed };
    });
  }

  /** Credit tenants and modes with something to settle and an asset not yet closed for `day`. */
  async dueCloses(day: string, limit: number): Promise<Array<Partition>> {
    return dueCloses(this.db, day, limit);
  }

  /** The Caracas day that ended most recently. */
  previousBusinessDay(): string {
    return businessDate(new Date(this.clock.now().getTime() - 24 * 3600 * 1000));
  }
}

/** `value` within 0 and `max`. */
function clamp(value: bigint, max: bigint): bigint {
  if (value < 0n) return 0n;
  return value > max ? max : value;
}

/**
 * A funding whose Idempotency-Key another request holds: that request's answer replayed, or refused
 * (the key named another request, or its request is still running).
 */
function fundingAnswerOfStoredKey(stored: StoredKey, fingerprint: string, now: Date): WriterAnswer {
  const answer = answerForStoredKey(stored, fingerprint, now);
  switch (answer.kind) {
    case 'replay':
      return { status: answer.status, body: answer.body, replayed: true };
    case 'mismatch':
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used for a different request (another route or body). Use a new key for a new operation.',
      );
    default:
      throw new ApiError(
        'idempotency_request_in_progress',
        'A request with this Idempotency-Key is still being processed. Retry the same request in a moment.',
      );
  }
}
