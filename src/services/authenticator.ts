import { COALESCER_BOUNDS, Coalescer } from '../db/coalescer.ts';
import type { Database } from '../db/database.ts';
import { findActiveKeysByHashes } from '../db/repositories/api-keys.ts';
import { hashApiKey, isWellFormedKey } from '../domain/api-keys.ts';
import { ActiveKeyIndex } from './active-key-index.ts';
import type { AuthContext } from '../domain/partition.ts';

/**
 * Resolves API keys against the database on every request, with no cache of answers, so a
 * revocation holds from the next request on every process sharing the database. (Its index of
 * possibly valid keys only decides which keys of a limited client are worth looking up.)
 *
 * Lookups are coalesced: the keys of requests that arrive while a lookup statement runs are looked
 * up together in the next one (`key_hash = ANY($1)`), so under load many requests cost one round
 * trip. A request never joins a statement that had already started when it arrived — the Coalescer
 * only ever starts a batch with items queued before it starts — so every answer reflects what was
 * committed before the request came in (READ COMMITTED: each statement sees every commit that
 * preceded its start).
 */
export class Authenticator {
  private readonly lookups: Coalescer<string, AuthContext | null>;
  private readonly index: ActiveKeyIndex;

  constructor(db: Database, options: { nowMs?: () => number; onPartialIndex?: (max: number) => void } = {}) {
    this.lookups = new Coalescer((hashes) => lookup(db, hashes), COALESCER_BOUNDS);
    this.index = new ActiveKeyIndex(db, options.nowMs ?? Date.now, options.onPartialIndex);
  }

  async authenticate(key: string): Promise<AuthContext | null> {
    // Malformed input never reaches the database.
    if (!isWellFormedKey(key)) return null;
    const hash = hashApiKey(key);
    const auth = await this.lookups.submit(hash);
    if (auth) this.index.remember(hash);
    return auth;
  }

  /** A key this process just issued (by its hash): served at once to a client limited for failed authentications. */
  learn(hash: string): void {
    this.index.remember(hash);
  }

  /**
   * Whether `key` may be an active key, answered from memory (see ActiveKeyIndex): false means it is
   * certainly not worth a lookup. Asked only for a client that is being limited.
   */
  async mayBeActive(key: string): Promise<boolean> {
    return isWellFormedKey(key) && this.index.has(hashApiKey(key));
  }
}

async function lookup(db: Database, hashes: string[]): Promise<Array<AuthContext | null>> {
  // One client sending many concurrent requests puts its key in a batch many times: ask once.
  const found = await findActiveKeysByHashes(db, [...new Set(hashes)]);
  return hashes.map((hash) => {
    const row = found.get(hash);
    return row
      ? {
          apiKeyId: row.id,
          tenantId: row.tenant_id,
          tenantName: row.tenant_name,
          mode: row.mode,
          scopes: row.scopes,
          isPlatform: row.is_platform,
          keySource: row.source,
        }
      : null;
  });
}
