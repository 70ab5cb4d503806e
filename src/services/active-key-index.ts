import type { Database } from '../db/database.ts';
import { listActiveKeyHashes } from '../db/repositories/api-keys.ts';

/**
 * Hashes held at most: past it the index is partial (keys it misses are treated as unknown while an address is limited).
 * @internal Exported for its tests, not used elsewhere.
 */
export const ACTIVE_KEY_INDEX_MAX = 100_000;
/**
 * The index is loaded again when it is older than this and asked: a key issued meanwhile is known from then on.
 * @internal Exported for its tests, not used elsewhere.
 */
export const ACTIVE_KEY_INDEX_MAX_AGE_MS = 5_000;
/**
 * A key the index does not hold loads it again when it is older than this: a key another process
 * issued a moment ago is served within a second of a flood, at the cost of at most one load a second.
 * @internal Exported for its tests, not used elsewhere.
 */
export const ACTIVE_KEY_INDEX_MISS_RELOAD_MS = 1_000;

/**
 * The hashes of the keys that were active when it was last loaded, plus every key this process has
 * issued or authenticated since: a superset of the active keys. A key this process issues is known at
 * once; one another process issued is known at the first miss after ACTIVE_KEY_INDEX_MISS_RELOAD_MS.
 * It is never an authority (a key it holds is still looked up, so a revocation holds at once); it only
 * lets a client address that is being limited for failed authentications present a valid key, while
 * each of its unknown keys costs no lookup at all.
 *
 * Loaded only on demand — while some address or key prefix is limited — when it is older than the max
 * age, or than the miss reload on a miss: one load shared by every request that needs it.
 */
export class ActiveKeyIndex {
  private hashes = new Set<string>();
  /** Keys this process issued or authenticated, by when: kept across loads until a load surely holds them. */
  private readonly learned = new Map<string, number>();
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
    const age = this.nowMs() - this.loadedAtMs;
    if (age >= ACTIVE_KEY_INDEX_MAX_AGE_MS || age < 0) await this.load();
    if (this.holds(hash)) return true;
    // Perhaps a key another process issued since the last load.
    if (this.nowMs() - this.loadedAtMs >= ACTIVE_KEY_INDEX_MISS_RELOAD_MS) await this.load();
    return this.holds(hash);
  }

  /** A key this process just issued or authenticated: known from now on, whatever a load finds. */
  remember(hash: string): void {
    if (this.learned.size < ACTIVE_KEY_INDEX_MAX) this.learned.set(hash, this.nowMs());
  }

  private holds(hash: string): boolean {
    return this.hashes.has(hash) || this.learned.has(hash);
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const startedMs = this.nowMs();
        const found = await listActiveKeyHashes(this.db, ACTIVE_KEY_INDEX_MAX + 1);
        if (found.length > ACTIVE_KEY_INDEX_MAX && !this.partialReported) {
          this.partialReported = true;
          this.onPartial(ACTIVE_KEY_INDEX_MAX);
        }
        this.hashes = new Set(found.slice(0, ACTIVE_KEY_INDEX_MAX));
        this.loadedAtMs = this.nowMs();
        // Learned by the time this load began: it read the key if the key was committed and active (a
        // key still being issued then is found by the next miss's load, a second later at most).
        for (const [hash, atMs] of this.learned) if (atMs <= startedMs) this.learned.delete(hash);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }
}
