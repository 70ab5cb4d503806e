import type { Queryable } from './database.ts';

// How far behind the primary a streaming replica is, in time, measured without asking anything per
// request: a background loop samples both servers every LAG_SAMPLE interval, and a request only reads
// the last verdict.
//
// Why not `now() - pg_last_xact_replay_timestamp()` on the replica: that is the age of the last
// transaction replayed, which grows without bound while the primary is idle (nothing to replay), so an
// idle, perfectly current replica would look minutes behind. Instead each sample reads the primary's
// WAL position flushed to disk (pg_current_wal_flush_lsn: what the replica can be sent; every commit
// that has returned is at or below it) and remembers when it read it, then reads how far the replica
// has replayed (pg_last_wal_replay_lsn). Everything committed on the primary before a sample's time is
// visible on the replica once its replay position reaches that sample's position. So the replica is at most
// `now - t` behind, where t is the time of the newest sample whose position it has replayed: an idle
// primary's position does not move, the newest sample is always replayed, and the lag stays under one
// interval. The verdict is computed at each request from that t, so it grows by itself while no newer
// sample is replayed, or while the sampler cannot reach a server. Where it errs, it errs towards the
// primary: a flush that ends inside a WAL record the idle primary has not finished writing leaves the
// replica short of that position until the next write, and the reads go to the primary meanwhile.
// (A commit made with synchronous_commit off may be flushed, and so sampled, up to the WAL writer's
// delay after it returned: never money, see Database.relaxed.)

/** One sample of the primary: its WAL write position (bytes) at a time (ms). */
interface PrimarySample {
  atMs: number;
  lsn: bigint;
}

/** The longest pause between two samples; shorter when the bound is small (a quarter of it). */
const LAG_SAMPLE_INTERVAL_MAX_MS = 1_000;
const LAG_SAMPLE_INTERVAL_MIN_MS = 25;
/**
 * Samples of the primary kept newer than the newest the replica has replayed (older ones are dropped
 * as soon as it has): the history of a replica falling behind. Past it the oldest is dropped; the
 * replica then needs to replay a newer one to be seen as caught up, which only errs towards the primary.
 */
const PRIMARY_SAMPLES_MAX = 1_024;

/** Why reads are not sent to the replica now (the metric's `reason`), or undefined when they may be. */
export type ReplicaRefusal = 'lag' | 'unreachable' | 'not_standby';

const PRIMARY_LSN_SQL = `SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::int8 AS lsn`;
const REPLICA_REPLAY_SQL = `SELECT pg_is_in_recovery() AS standby, pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::int8 AS replayed`;

export interface ReplicaLagOptions {
  /** READ_REPLICA_MAX_LAG_MS: past it, reads go to the primary. */
  maxLagMs: number;
  nowMs?: () => number;
  /** Each server's part of each sample: `error` when it failed. */
  onSample?: (server: 'primary' | 'replica', error?: unknown) => void;
}

/** The sampler of one replica's lag behind one primary, and the verdict requests read. */
export class ReplicaLag {
  private readonly samples: PrimarySample[] = [];
  /** Time of the newest primary sample the replica has replayed; undefined: none yet. */
  private replayedAtMs: number | undefined;
  private reachable = false;
  private standby = true;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly nowMs: () => number;
  readonly intervalMs: number;

  constructor(
    private readonly primary: Queryable,
    private readonly replica: Queryable,
    private readonly options: ReplicaLagOptions,
  ) {
    this.nowMs = options.nowMs ?? (() => Date.now());
    this.intervalMs = Math.max(
      LAG_SAMPLE_INTERVAL_MIN_MS,
      Math.min(LAG_SAMPLE_INTERVAL_MAX_MS, Math.floor(options.maxLagMs / 4)),
    );
  }

  /** Samples now, then every intervalMs until stop(); one sample at a time. */
  start(): void {
    const loop = async () => {
      await this.sample();
      if (!this.stopped) {
        this.timer = setTimeout(loop, this.intervalMs);
        this.timer.unref();
      }
    };
    void loop();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One sample of both servers. Never throws: a failure marks the replica unreachable (or leaves the lag growing, for the primary). */
  async sample(): Promise<void> {
    const atMs = this.nowMs();
    try {
      const { rows } = await this.primary.query<{ lsn: bigint }>(PRIMARY_LSN_SQL);
      this.remember({ atMs, lsn: rows[0]!.lsn });
      this.options.onSample?.('primary');
    } catch (error) {
      // Without the primary's position the lag cannot be refreshed: the verdict ages until it can.
      this.options.onSample?.('primary', error);
      return;
    }
    try {
      const { rows } = await this.replica.query<{ standby: boolean; replayed: bigint | null }>(REPLICA_REPLAY_SQL);
      const { standby, replayed } = rows[0]!;
      this.reachable = true;
      // A server out of recovery (a promoted replica, or DATABASE_READ_URL naming a primary) follows
      // no primary of ours: its data may diverge, so it serves nothing.
      this.standby = standby && replayed !== null;
      if (this.standby) this.replayed(replayed!);
      this.options.onSample?.('replica');
    } catch (error) {
      this.reachable = false;
      this.options.onSample?.('replica', error);
    }
  }

  /** A query on the replica failed for want of it: it serves nothing until a sample reaches it again. */
  failed(): void {
    this.reachable = false;
  }

  /**
   * How far behind the replica may be now (ms): an upper bound once it has replayed a sample; before
   * that, a lower bound (the age of the oldest sample it lacks); undefined before any sample.
   */
  lagMs(): number | undefined {
    const since = this.replayedAtMs ?? this.samples[0]?.atMs;
    return since === undefined ? undefined : Math.max(0, this.nowMs() - since);
  }

  /** Why the replica must not serve a read now, or undefined when it may. */
  refusal(): ReplicaRefusal | undefined {
    if (!this.reachable) return 'unreachable';
    if (!this.standby) return 'not_standby';
    if (this.replayedAtMs === undefined) return 'lag';
    return this.nowMs() - this.replayedAtMs > this.options.maxLagMs ? 'lag' : undefined;
  }

  /** Whether the last sample reached a replica in recovery. */
  up(): boolean {
    return this.reachable && this.standby;
  }

  private remember(sample: PrimarySample): void {
    if (this.samples.length >= PRIMARY_SAMPLES_MAX) {
      // The oldest is dropped; the time of the newest replayed one is kept (replayedAtMs), so the lag
      // stays an upper bound.
      this.samples.shift();
    }
    this.samples.push(sample);
  }

  /** The replica has replayed up to `replayed`: the newest sample at or below it dates what it has. */
  private replayed(replayed: bigint): void {
    let newest = -1;
    for (let i = 0; i < this.samples.length; i += 1) if (this.samples[i]!.lsn <= replayed) newest = i;
    // Nothing sampled is replayed yet: the lag is not known (lagMs gives a lower bound meanwhile).
    if (newest < 0) return;
    this.replayedAtMs = this.samples[newest]!.atMs;
    // The older samples can never be the newest replayed again: replay only moves forward.
    this.samples.splice(0, newest);
  }
}
