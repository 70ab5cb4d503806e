import type { Database } from '../db/database.ts';
import { listActiveKeyHashes } from '../db/repositories/api-keys.ts';

/** Hashes held at most: past it the index is partial (keys it misses are treated as unknown while an address is limited). */
export const ACTIVE_KEY_INDEX_MAX = 100_000;
/** The index is loaded again when it is older than this and asked: a key issued meanwhile is known from then on. */
export const ACTIVE_KEY_INDEX_MAX_AGE_MS = 5_000;

/**
 * The hashes of the keys that were active when it was last loaded, plus every key this process has
 * authenticated since: a superset of the active keys, up to ACTIVE_KEY_INDEX_MAX_AGE_MS late for keys
 * issued by another process. It is never an authority (a key it holds is still looked up, so a
 * revocation holds at once); it only lets a client address that is being limited for failed
 * authentications present a valid key, while each of its unknown keys costs no lookup at all.
 *
 * Loaded only on demand — while some address or key prefix is limited — at most once per max age,
 * one load shared by every request that needs it.
 */
export class ActiveKeyIndex {
  private hashes = new Set<string>();
  private loadedAtMs = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  /** Set once a load found more keys than the bound (reported once). */
  private partialReported = false;

  constructor(
    private readonly db: Database,
    private readonly nowMs: () => number,
    private readonly onPartial: (max: number) => void = () => undefined,
  ) {}

  async has(hash: string): Promise<boolean> {
    if (this.nowMs() - this.loadedAtMs >= ACTIVE_KEY_INDEX_MAX_AGE_MS || this.nowMs() < this.loadedAtMs) await this.load();
    return this.hashes.has(hash);
  }

  /** A key that just authenticated: known from now on without waiting for a load. */
  remember(hash: string): void {
    if (this.loadedAtMs !== Number.NEGATIVE_INFINITY && this.hashes.size < ACTIVE_KEY_INDEX_MAX) this.hashes.add(hash);
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const found = await listActiveKeyHashes(this.db, ACTIVE_KEY_INDEX_MAX + 1);
        if (found.length > ACTIVE_KEY_INDEX_MAX && !this.partialReported) {
          this.partialReported = true;
          this.onPartial(ACTIVE_KEY_INDEX_MAX);
        }
        this.hashes = new Set(found.slice(0, ACTIVE_KEY_INDEX_MAX));
        this.loadedAtMs = this.nowMs();
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }
}
