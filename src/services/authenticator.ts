import type { Database } from '../db/database.ts';
import { findActiveKeyByHash } from '../db/repositories/api-keys.ts';
import { API_KEY_PATTERN, hashApiKey } from '../domain/api-keys.ts';
import type { AuthContext } from '../http/context.ts';

const CACHE_TTL_MS = 1000;
const CACHE_ENTRIES_MAX = 10_000;

interface Entry {
  context: AuthContext | null;
  expiresAtMs: number;
}

/**
 * Resolves API keys with a short-lived in-process cache: the hot path costs no database round-trip,
 * a revocation on this node takes effect at once (`forget`), and on other nodes within 1 s.
 */
export class Authenticator {
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<AuthContext | null>>();

  constructor(
    private readonly db: Database,
    private readonly nowMs: () => number = Date.now,
  ) {}

  async authenticate(key: string): Promise<AuthContext | null> {
    if (!API_KEY_PATTERN.test(key) || key.length > 200) return null;
    const hash = hashApiKey(key);
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAtMs > this.nowMs()) return cached.context;
    // Concurrent first requests with one key share one lookup.
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.lookup(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  forget(hash: string): void {
    this.cache.delete(hash);
  }

  private async lookup(hash: string): Promise<AuthContext | null> {
    const row = await findActiveKeyByHash(this.db, hash);
    const context: AuthContext | null = row
      ? {
          apiKeyId: row.id,
          tenantId: row.tenant_id,
          tenantName: row.tenant_name,
          mode: row.mode,
          scopes: row.scopes,
          isPlatform: row.is_platform,
        }
      : null;
    if (this.cache.size >= CACHE_ENTRIES_MAX) this.cache.clear();
    this.cache.set(hash, { context, expiresAtMs: this.nowMs() + CACHE_TTL_MS });
    return context;
  }
}
