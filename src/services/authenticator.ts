import { COALESCER_BOUNDS, Coalescer } from '../db/coalescer.ts';
import type { Database } from '../db/database.ts';
import { findActiveKeysByHashes } from '../db/repositories/api-keys.ts';
import { API_KEY_PATTERN, hashApiKey } from '../domain/api-keys.ts';
import type { AuthContext } from '../http/context.ts';

/** Longer input is refused without hashing it: no real key comes close. */
const KEY_LENGTH_MAX = 200;

/**
 * Resolves API keys against the database on every request, with no cache, so a revocation holds
 * from the next request on every process sharing the database.
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

  constructor(db: Database) {
    this.lookups = new Coalescer((hashes) => lookup(db, hashes), COALESCER_BOUNDS);
  }

  async authenticate(key: string): Promise<AuthContext | null> {
    // Malformed input never reaches the database.
    if (key.length > KEY_LENGTH_MAX || !API_KEY_PATTERN.test(key)) return null;
    return this.lookups.submit(hashApiKey(key));
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
        }
      : null;
  });
}
