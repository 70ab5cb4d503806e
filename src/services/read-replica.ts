// The read replica (DATABASE_READ_URL) as a process sees it: the read handle the list routes use, and
// its metrics. Without a replica the read handle is the primary itself.
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { openReadReplica, type FallbackReason, type ReplicaObserver, type ReplicaReads } from '../db/read-replica.ts';

const FALLBACK_REASONS: readonly FallbackReason[] = ['lag', 'unreachable', 'not_standby', 'query_failed'];

/** The read handle, and how to close it (nothing to close without a replica). */
export interface Reads {
  db: Database;
  close(): Promise<void>;
}

/**
 * The replica's read handle when DATABASE_READ_URL is set and this process serves the API (a worker
 * serves no list), else the primary. config.ts refuses DATABASE_READ_URL without DATABASE_URL.
 */
export function readsOf(config: Config, db: Database, registry: Registry, log?: FastifyBaseLogger): Reads {
  if (config.databaseReadUrl === undefined || config.role === 'worker' || db.engine !== 'postgres')
    return { db, close: async () => undefined };
  const observer = new ReplicaMetrics(registry, log);
  const reads = openReadReplica(
    db,
    {
      url: config.databaseReadUrl,
      maxLagMs: config.readReplicaMaxLagMs,
      poolSize: config.dbPoolSize,
      maxLifetimeSeconds: config.dbConnectionMaxLifetimeS,
      statementTimeoutMs: config.dbStatementTimeoutMs,
      pooler: config.databasePooler,
    },
    observer,
  );
  observer.watch(reads);
  return { db: reads, close: () => reads.close() };
}

/** bolivar_read_replica_*: where the reads meant for the replica went, and how far behind it is. */
class ReplicaMetrics implements ReplicaObserver {
  private readonly fallbacks: Counter<'reason'>;
  private replica: Pick<ReplicaReads, 'replicaState'> | undefined;
  /** The servers whose last sample failed: a replica that stays down is logged once, and once when it is back. */
  private readonly failing = new Set<'primary' | 'replica'>();

  constructor(
    registry: Registry,
    private readonly log?: FastifyBaseLogger,
  ) {
    const registers = [registry];
    this.fallbacks = new Counter({
      name: 'bolivar_read_replica_fallbacks_total',
      help: 'Reads meant for the read replica (DATABASE_READ_URL) that the primary served, by reason: lag (past READ_REPLICA_MAX_LAG_MS, or not yet measured), unreachable (the last lag sample could not reach it), not_standby (it is not in recovery), query_failed (the query failed on it for want of it and ran once on the primary)',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of FALLBACK_REASONS) this.fallbacks.inc({ reason }, 0);
    const state = () => this.replica?.replicaState();
    new Gauge({
      name: 'bolivar_read_replica_lag_seconds',
      help: 'How far behind the primary the read replica may be (an upper bound, measured in the background by WAL position); past READ_REPLICA_MAX_LAG_MS its reads go to the primary',
      registers,
      collect() {
        const lagMs = state()?.lagMs;
        if (lagMs !== undefined) this.set(lagMs / 1000);
      },
    });
    new Gauge({
      name: 'bolivar_read_replica_up',
      help: 'Whether the last lag sample reached the read replica and found it in recovery (1) or not (0)',
      registers,
      collect() {
        this.set(state()?.up ? 1 : 0);
      },
    });
  }

  watch(replica: Pick<ReplicaReads, 'replicaState'>): void {
    this.replica = replica;
  }

  fallback(reason: FallbackReason): void {
    this.fallbacks.inc({ reason });
  }

  sampled(server: 'primary' | 'replica', error?: unknown): void {
    if (error === undefined) {
      if (this.failing.delete(server)) this.log?.info({ server }, 'read replica: the lag sample reaches it again');
      return;
    }
    if (this.failing.has(server)) return;
    this.failing.add(server);
    this.log?.warn(
      { server, err: error },
      'read replica: a lag sample failed; list reads go to the primary until one succeeds',
    );
  }
}
