import {
  isTransientDatabaseError,
  pgErrorCode,
  type Database,
  type Queryable,
  type QueryOptions,
  type QueryResult,
  type TransactionHandle,
  type TransactionOptions,
} from './database.ts';
import { PostgresDatabase, type PostgresOptions } from './postgres.ts';
import { ReplicaLag, type ReplicaRefusal } from './replica-lag.ts';

/**
 * Why a read meant for the replica went to the primary: the replica was refused before the query
 * (ReplicaRefusal: too far behind, unreachable at the last sample, not a standby), or the query failed
 * on it for want of the replica (lost or refused connection, server shutting down, a statement
 * cancelled by a conflict with recovery, no free connection) and was run once on the primary.
 */
export type FallbackReason = ReplicaRefusal | 'query_failed';

export interface ReplicaObserver {
  fallback(reason: FallbackReason): void;
  /** Each server's part of each lag sample: `error` when it failed. */
  sampled?(server: 'primary' | 'replica', error?: unknown): void;
}

/**
 * The statement ran past DB_STATEMENT_TIMEOUT_MS: it would most likely do so on the primary too, and
 * running it again there would double the load at the worst moment. It fails as it would without a
 * replica (503, retryable).
 */
const STATEMENT_TIMED_OUT = '57014';
/** A conflict with recovery cancelled the statement: the replica itself is fine, the primary runs it. */
const RECOVERY_CONFLICT = '40001';

/**
 * A replica's connections wait this long for a free connection or a TCP connect: a replica that went
 * away between two samples costs a request this much at most before the primary answers it.
 */
const REPLICA_CONNECT_TIMEOUT_MS = 1_000;

export interface ReadReplicaSettings {
  /** DATABASE_READ_URL. */
  url: string;
  /** READ_REPLICA_MAX_LAG_MS. */
  maxLagMs: number;
  poolSize: number;
  maxLifetimeSeconds: number;
  statementTimeoutMs: number;
  /** DATABASE_POOLER: a replica behind its own PgBouncer is pooled the same way as the primary. */
  pooler: PostgresOptions['pooler'];
}

/**
 * The read handle of the routes that may be served by a streaming replica (docs/read-replica.md).
 * Only a statement run on its own (`query`) goes to the replica, when it is near enough
 * (READ_REPLICA_MAX_LAG_MS); everything else — a transaction, a dedicated connection, a script, the
 * relaxed handle — is the primary's, so a service handed this by mistake still writes where it must.
 * A query the replica fails for want of it is run once on the primary: the replica never fails a
 * request. The primary itself is not closed by close(): its owner closes it.
 */
export class ReplicaReads implements Database {
  readonly engine = 'postgres' as const;
  readonly relaxed: Queryable;

  constructor(
    private readonly primary: Database,
    private readonly replica: Database,
    private readonly lag: ReplicaLag,
    private readonly observer: ReplicaObserver,
  ) {
    this.relaxed = primary.relaxed;
  }

  async query<Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>> {
    const refusal = this.lag.refusal();
    if (refusal !== undefined) {
      this.observer.fallback(refusal);
      return this.primary.query<Row>(sql, params, options);
    }
    try {
      return await this.replica.query<Row>(sql, params, options);
    } catch (error) {
      // Anything else (a bug in the SQL, a constraint) would fail the same way on the primary.
      const code = pgErrorCode(error);
      if (!isTransientDatabaseError(error) || code === STATEMENT_TIMED_OUT) throw error;
      if (code !== RECOVERY_CONFLICT) this.lag.failed();
      this.observer.fallback('query_failed');
      return this.primary.query<Row>(sql, params, options);
    }
  }

  exec(sql: string): Promise<void> {
    return this.primary.exec(sql);
  }

  transaction<T>(work: (tx: TransactionHandle) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.primary.transaction(work, options);
  }

  withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T> {
    return this.primary.withConnection(work);
  }

  /** The replica's lag now (ms; see ReplicaLag.lagMs) and whether the last sample reached it. */
  replicaState(): { lagMs: number | undefined; up: boolean } {
    return { lagMs: this.lag.lagMs(), up: this.lag.up() };
  }

  /** Stops the sampling and closes the replica's connections. */
  async close(): Promise<void> {
    this.lag.stop();
    await this.replica.close();
  }
}

/** The replica's pool and its lag sampler, started; reads through it fall back to `primary`. */
export function openReadReplica(
  primary: Database,
  settings: ReadReplicaSettings,
  observer: ReplicaObserver,
): ReplicaReads {
  const replica = new PostgresDatabase(settings.url, settings.poolSize, {
    maxLifetimeSeconds: settings.maxLifetimeSeconds,
    statementTimeoutMs: settings.statementTimeoutMs,
    connectTimeoutMs: REPLICA_CONNECT_TIMEOUT_MS,
    pooler: settings.pooler,
  });
  const lag = new ReplicaLag(primary, replica, {
    maxLagMs: settings.maxLagMs,
    onSample: observer.sampled?.bind(observer),
  });
  lag.start();
  return new ReplicaReads(primary, replica, lag, observer);
}
