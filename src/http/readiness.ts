import type { Database } from '../db/database.ts';
import { ping } from '../db/ping.ts';

/**
 * How long one answer of the database probe is reused: /health/ready costs at most one query per this, per process.
 * @internal Exported for its tests, not used elsewhere.
 */
export const READINESS_CACHE_MS = 1000;
/** The longest the probe waits for the database. */
const READINESS_TIMEOUT_MS = 2000;

/**
 * The readiness probe's question to the database, asked at most once per READINESS_CACHE_MS and
 * never twice at once: a flood of /health/ready (it needs no key) costs no more queries than one
 * prober. A failure is cached like a success, so a database that is down is not asked harder.
 */
export class Readiness {
  private last: { ready: boolean; atMs: number } | undefined;
  private probing: Promise<boolean> | undefined;

  constructor(
    private readonly db: Pick<Database, 'query'>,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  async ready(): Promise<boolean> {
    const now = this.nowMs();
    const last = this.last;
    if (last && now >= last.atMs && now - last.atMs < READINESS_CACHE_MS) return last.ready;
    this.probing ??= this.probe().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async probe(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    let ready: boolean;
    try {
      await Promise.race([
        ping(this.db),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS);
          timer.unref();
        }),
      ]);
      ready = true;
    } catch {
      ready = false;
    } finally {
      clearTimeout(timer);
    }
    this.last = { ready, atMs: this.nowMs() };
    return ready;
  }
}
