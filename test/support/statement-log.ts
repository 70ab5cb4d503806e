// Every statement a test's service sends, recorded at the service's own database layer: the SQL text,
// its parameters, and the transaction it ran in. The tenant-scope check (tenant-scope.ts) reads it.
// A capture here, not PostgreSQL's log_statement: that is a server-wide setting, and PGlite has no log.
import type {
  Database,
  QueryOptions,
  Queryable,
  TransactionHandle,
  TransactionOptions,
} from '../../src/db/database.ts';

export interface LoggedStatement {
  sql: string;
  params: readonly unknown[];
  /** The transaction it ran in (its number in this log), or null for a statement on its own. */
  transaction: number | null;
}

export interface StatementLog {
  /** The database to give the service: the same database, every statement recorded. */
  readonly db: Database;
  readonly statements: LoggedStatement[];
}

/** Wraps `db`: everything the service sends through it lands in `statements`, in order. */
export function statementLog(db: Database): StatementLog {
  const statements: LoggedStatement[] = [];
  let transactions = 0;
  const record = (sql: string, params: readonly unknown[] | undefined, transaction: number | null) => {
    statements.push({ sql, params: params ?? [], transaction });
  };
  const logged = (inner: Queryable, transaction: number | null): Queryable => ({
    query<Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) {
      record(sql, params, transaction);
      return inner.query<Row>(sql, params, options);
    },
    exec(sql: string) {
      record(sql, undefined, transaction);
      return inner.exec(sql);
    },
  });
  const wrapped: Database = {
    engine: db.engine,
    relaxed: logged(db.relaxed, null),
    ...logged(db, null),
    transaction<T>(work: (tx: TransactionHandle) => Promise<T>, options?: TransactionOptions): Promise<T> {
      return db.transaction((tx) => {
        transactions += 1;
        const id = transactions;
        const handle: TransactionHandle = {
          ...logged(tx, id),
          queryAndCommit<Row>(sql: string, params?: readonly unknown[]) {
            record(sql, params, id);
            return tx.queryAndCommit<Row>(sql, params);
          },
        };
        return work(handle);
      }, options);
    },
    withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T> {
      return db.withConnection((conn) => work(logged(conn, null)));
    },
    ...(db.poolStats ? { poolStats: () => db.poolStats!() } : {}),
    close: () => db.close(),
  };
  return { db: wrapped, statements };
}
