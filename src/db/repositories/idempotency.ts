import { randomUUID } from 'node:crypto';
import { relaxedOf, type Queryable } from '../database.ts';
import { COALESCER_BOUNDS, Coalescer } from '../coalescer.ts';
import type { Mode } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';
import { ParamsOf } from './sql-params-of.ts';
import { assert } from '../../domain/assert.ts';

// Idempotency keys. Every decision is one statement that the database makes
// atomically (an INSERT … ON CONFLICT DO NOTHING or a conditional UPDATE/DELETE), so concurrent
// requests, in one process or in several sharing a PostgreSQL, agree on which one runs.

type IdempotencyStatus = 'in_progress' | 'completed';

export interface IdempotencyScope {
  tenantId: string;
  mode: Mode;
  key: string;
}

/** @internal Exported for its tests, not used elsewhere. */
export interface IdempotencyRow {
  tenant_id: string;
  mode: Mode;
  key: string;
  fingerprint: string;
  status: IdempotencyStatus;
  owner: string | null;
  response_status: number | null;
  response_body: string | null;
  locked_until: Date | null;
  created_at: Date;
  expires_at: Date;
}

const COLUMNS = `tenant_id, mode, key, fingerprint, status, owner, response_status, response_body, locked_until,
  created_at, expires_at`;

export interface ClaimTiming {
  /** The caller's clock: every time written or compared comes from it. */
  now: Date;
  /** How long the key is remembered (IDEMPOTENCY_TTL_HOURS). */
  ttlMs: number;
  /** How long a running request holds the key before another may take it over. */
  leaseMs: number;
}

export type ClaimResult =
  /** This request runs; `owner` must be given back to complete or release the key. */
  | { outcome: 'claimed'; owner: string; tookOver: 'expired' | 'lease' | null }
  /** A completed request with the same fingerprint: send this back without running anything. */
  | { outcome: 'replay'; status: number; body: string }
  /** The key was used for a different request. */
  | { outcome: 'mismatch' }
  /** Another request with this key and fingerprint still holds a valid lease. */
  | { outcome: 'in_progress' };

/** Rounds of insert → read → take over; only a key that keeps appearing and vanishing needs more than two. */
const MAX_CLAIM_ROUNDS = 5;

interface ClaimInsert {
  scope: IdempotencyScope;
  fingerprint: string;
  owner: string;
  lockedUntil: Date;
  now: Date;
  expiresAt: Date;
}

export interface KeyCompletion {
  scope: IdempotencyScope;
  owner: string;
  status: number;
  body: string;
}

// Concurrent requests claim and complete their keys together: one multi-row statement per batch
// (see Coalescer). Keyed by database handle, so each pool gets its own.
const coalescers = new WeakMap<
  Queryable,
  { claims: Coalescer<ClaimInsert, boolean>; completions: Coalescer<KeyCompletion, boolean> }
>();

function coalescersFor(db: Queryable) {
  let entry = coalescers.get(db);
  if (!entry) {
    entry = {
      // A claim lost in a database crash only frees the key again: no answer was given under it yet.
      claims: new Coalescer((items) => insertClaims(relaxedOf(db), items), COALESCER_BOUNDS),
      completions: new Coalescer((items) => completeMany(db, items), COALESCER_BOUNDS),
    };
    coalescers.set(db, entry);
  }
  return entry;
}

/** First round of many claims: INSERT … ON CONFLICT DO NOTHING; an item won when its owner came back. */
async function insertClaims(db: Queryable, items: readonly ClaimInsert[]): Promise<boolean[]> {
  const p = new Params();
  const claims = p.unnest({
    tenant_id: ['uuid', items.map((i) => i.scope.tenantId)],
    mode: ['text', items.map((i) => i.scope.mode)],
    key: ['text', items.map((i) => i.scope.key)],
    fingerprint: ['text', items.map((i) => i.fingerprint)],
    owner: ['uuid', items.map((i) => i.owner)],
    locked_until: ['timestamptz', items.map((i) => i.lockedUntil)],
    created_at: ['timestamptz', items.map((i) => i.now)],
    expires_at: ['timestamptz', items.map((i) => i.expiresAt)],
  });
  const { rows } = await db.query<{ owner: string }>(
    `INSERT INTO idempotency_keys (tenant_id, mode, key, fingerprint, status, owner, locked_until, created_at, expires_at)
     SELECT v.tenant_id, v.mode, v.key, v.fingerprint, 'in_progress', v.owner, v.locked_until, v.created_at, v.expires_at
       FROM ${claims}
     ON CONFLICT (tenant_id, mode, key) DO NOTHING
     RETURNING owner`,
    p.values,
  );
  const won = new Set(rows.map((r) => r.owner));
  return items.map((i) => won.has(i.owner));
}

const completions = new ParamsOf<readonly KeyCompletion[]>();

/**
 * Stores the answers of keys still held by their owners (tenant id, mode, key, owner, response status
 * and body: keyCompletionParams); returns the owner of each key it completed. Shared with the payout
 * path's answer statement (payout-answers.ts), which runs it as a CTE and numbers its own parameters
 * after these six ($1..$6).
 */
export const KEY_COMPLETIONS_SQL = `UPDATE idempotency_keys k
    SET status = 'completed', owner = NULL, locked_until = NULL, response_status = v.response_status, response_body = v.response_body
   FROM ${completions.unnest({
     tenant_id: ['uuid', (items) => items.map((i) => i.scope.tenantId)],
     mode: ['text', (items) => items.map((i) => i.scope.mode)],
     key: ['text', (items) => items.map((i) => i.scope.key)],
     owner: ['uuid', (items) => items.map((i) => i.owner)],
     response_status: ['integer', (items) => items.map((i) => i.status)],
     response_body: ['text', (items) => items.map((i) => i.body)],
   })}
  -- Joined on the primary key only. An added \`tenant_id = ANY(…) AND key = ANY(…)\` let the generic
  -- plan walk every key of the tenant through the primary key (mode is its middle column): 9.8 ms
  -- a batch at 16,000 keys and growing, against 0.5 ms.
  WHERE k.tenant_id = v.tenant_id AND k.mode = v.mode AND k.key = v.key AND k.owner = v.owner AND k.status = 'in_progress'
  RETURNING v.owner`;

/** The parameters of KEY_COMPLETIONS_SQL for these completions. */
export function keyCompletionParams(items: readonly KeyCompletion[]): unknown[] {
  return completions.values(items);
}

async function completeMany(db: Queryable, items: readonly KeyCompletion[]): Promise<boolean[]> {
  const { rows } = await db.query<{ owner: string }>(KEY_COMPLETIONS_SQL, keyCompletionParams(items));
  const done = new Set(rows.map((r) => r.owner));
  return items.map((i) => done.has(i.owner));
}

/**
 * Claims `scope` for a request whose fingerprint is `fingerprint`: inserts an `in_progress` row,
 * or decides from the row already there (expired → taken over; another fingerprint → mismatch;
 * completed → replay; running with a valid lease → in_progress; running with an expired lease →
 * taken over). A takeover is a conditional UPDATE, so of two requests racing for it one wins.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  scope: IdempotencyScope,
  fingerprint: string,
  timing: ClaimTiming,
): Promise<ClaimResult> {
  const { now } = timing;
  const lockedUntil = new Date(now.getTime() + timing.leaseMs);
  const expiresAt = new Date(now.getTime() + timing.ttlMs);
  /** The key's primary key, for a statement that adds its parameters to `p`. */
  const keyOf = (p: Params) =>
    `tenant_id = ${p.add(scope.tenantId)} AND mode = ${p.add(scope.mode)} AND key = ${p.add(scope.key)}`;

  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    const owner = randomUUID();
    const inserted = await coalescersFor(db).claims.submit({ scope, fingerprint, owner, lockedUntil, now, expiresAt });
    if (inserted) return { outcome: 'claimed', owner, tookOver: null };

    const read = new Params();
    const { rows } = await db.query<IdempotencyRow>(
      `SELECT ${COLUMNS} FROM idempotency_keys WHERE ${keyOf(read)}`,
      read.values,
    );
    const row = rows[0];
    if (!row) continue; // released (a 4xx/5xx) between our insert and our read: try again

    if (row.expires_at.getTime() <= now.getTime()) {
      // Past its TTL the key is free again, whatever the row says: start it afresh.
      const p = new Params();
      const at = p.add(now);
      const taken = await db.query(
        `UPDATE idempotency_keys
            SET fingerprint = ${p.add(fingerprint)}, status = 'in_progress', owner = ${p.add(owner)}, response_status = NULL, response_body = NULL,
                locked_until = ${p.add(lockedUntil)}, created_at = ${at}, expires_at = ${p.add(expiresAt)}
          WHERE ${keyOf(p)} AND expires_at <= ${at}
          RETURNING owner`,
        p.values,
      );
      if (taken.rows.length === 1) return { outcome: 'claimed', owner, tookOver: 'expired' };
      continue; // someone else took it over first: look again
    }

    if (row.fingerprint !== fingerprint) return { outcome: 'mismatch' };

    if (row.status === 'completed') {
      return { outcome: 'replay', status: row.response_status!, body: row.response_body! };
    }

    if (row.locked_until!.getTime() > now.getTime()) return { outcome: 'in_progress' };

    // The holder's lease ran out (it crashed, or lost its database connection): take it over.
    const p = new Params();
    const at = p.add(now);
    const taken = await db.query(
      `UPDATE idempotency_keys SET owner = ${p.add(owner)}, locked_until = ${p.add(lockedUntil)}
        WHERE ${keyOf(p)}
          AND status = 'in_progress' AND fingerprint = ${p.add(fingerprint)} AND locked_until <= ${at} AND expires_at > ${at}
        RETURNING owner`,
      p.values,
    );
    if (taken.rows.length === 1) return { outcome: 'claimed', owner, tookOver: 'lease' };
    // Completed, released or taken over meanwhile: look again.
  }
  return { outcome: 'in_progress' };
}

/**
 * Stores the response of the request holding `owner`. False when it no longer holds the key (its
 * lease expired and another request took the key over): that response is then not the one kept.
 * (A payout's answer is stored by the payout path's own statement, payout-answers.ts.)
 */
export async function completeIdempotencyKey(
  db: Queryable,
  scope: IdempotencyScope,
  owner: string,
  response: { status: number; body: string },
): Promise<boolean> {
  return coalescersFor(db).completions.submit({ scope, owner, status: response.status, body: response.body });
}

/**
 * Stores the response of the request holding `owner` inside the caller's transaction (a funding
 * answers in the transaction that posts it). False when it no longer holds the key. One key by its
 * primary key, its tenant a value rather than a column of unnest(…) as in KEY_COMPLETIONS_SQL: on a
 * cluster distributed by tenant_id this statement goes to the key's shard alone (docs/scaling.md).
 */
export async function completeIdempotencyKeyInTransaction(
  tx: Queryable,
  scope: IdempotencyScope,
  owner: string,
  response: { status: number; body: string },
): Promise<boolean> {
  const p = new Params();
  const result = await tx.query(
    `UPDATE idempotency_keys
        SET status = 'completed', owner = NULL, locked_until = NULL, response_status = ${p.add(response.status)}, response_body = ${p.add(response.body)}
      WHERE tenant_id = ${p.add(scope.tenantId)} AND mode = ${p.add(scope.mode)} AND key = ${p.add(scope.key)} AND owner = ${p.add(owner)} AND status = 'in_progress'`,
    p.values,
  );
  return result.rowCount === 1;
}

/** Frees the key held by `owner` (the request was rejected or failed): the next request runs. */
export async function releaseIdempotencyKey(db: Queryable, scope: IdempotencyScope, owner: string): Promise<boolean> {
  const p = new Params();
  const result = await db.query(
    `DELETE FROM idempotency_keys
      WHERE tenant_id = ${p.add(scope.tenantId)} AND mode = ${p.add(scope.mode)} AND key = ${p.add(scope.key)} AND owner = ${p.add(owner)} AND status = 'in_progress'`,
    p.values,
  );
  return result.rowCount === 1;
}

/** Whether any of these keys of one tenant and mode holds a row not yet expired: one probe per key, one round trip. */
export async function anyLiveIdempotencyKey(
  db: Queryable,
  partition: { tenantId: string; mode: Mode },
  keys: readonly string[],
  now: Date,
): Promise<boolean> {
  const p = new Params();
  const { rows } = await db.query<{ live: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM idempotency_keys
                     WHERE tenant_id = ${p.add(partition.tenantId)} AND mode = ${p.add(partition.mode)} AND key = ANY(${p.add(keys)}::text[]) AND expires_at > ${p.add(now)}) AS live`,
    p.values,
  );
  return rows[0]!.live;
}

/**
 * Deletes at most `limit` rows past their TTL, oldest first; returns how many. Rows another
 * purger holds are skipped, and a row taken over meanwhile (its expiry moved) is re-checked and
 * kept. Call it in a loop until it returns less than `limit`.
 */
export async function purgeExpiredIdempotencyKeys(db: Queryable, now: Date, limit: number): Promise<number> {
  assert(Number.isSafeInteger(limit) && limit >= 1, `purge limit must be a positive integer, got ${limit}`);
  const p = new Params();
  const at = p.add(now);
  const result = await db.query(
    `DELETE FROM idempotency_keys
      WHERE (tenant_id, mode, key) IN (
              SELECT tenant_id, mode, key FROM idempotency_keys
               WHERE expires_at <= ${at}
               ORDER BY expires_at
               LIMIT ${p.add(limit)}
               FOR UPDATE SKIP LOCKED)
        AND expires_at <= ${at}`,
    p.values,
  );
  return result.rowCount;
}
