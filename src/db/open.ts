import path from 'node:path';
import type { Config } from '../config.ts';
import type { Database } from './database.ts';
import { ensureDataDir } from './data-dir.ts';
import { lockDataDir, type LockHolder } from './data-dir-lock.ts';
import { PgliteDatabase } from './pglite.ts';
import { finishSeeding, seedFromTemplate } from './pglite-template.ts';
import { PostgresDatabase } from './postgres.ts';

export interface OpenOptions {
  /** What this process is, written into DATA_DIR's lock for another process's refusal message. */
  purpose?: string;
  /** The embedded engine found the lock of a process that is gone and took it over. */
  onStaleLock?: (previous: LockHolder, lockPath: string) => void;
}

/**
 * DATABASE_URL set → PostgreSQL through a pool; unset → embedded PGlite under DATA_DIR/pglite, after
 * taking DATA_DIR's lock (one process at a time; DataDirLockedError names the holder). The lock is
 * released when the database is closed, or when the process exits.
 */
export async function openDatabase(
  config: Pick<
    Config,
    'databaseUrl' | 'dataDir' | 'dbPoolSize' | 'dbConnectionMaxLifetimeS' | 'dbStatementTimeoutMs' | 'dbLockTimeoutMs'
  > &
    Pick<Config, 'databasePooler' | 'databaseDirectUrl'>,
  options: OpenOptions = {},
): Promise<Database> {
  if (config.databaseUrl) {
    return new PostgresDatabase(config.databaseUrl, config.dbPoolSize, {
      maxLifetimeSeconds: config.dbConnectionMaxLifetimeS,
      statementTimeoutMs: config.dbStatementTimeoutMs,
      lockTimeoutMs: config.dbLockTimeoutMs,
      pooler: config.databasePooler,
      directUrl: config.databaseDirectUrl,
    });
  }
  ensureDataDir(config.dataDir);
  const lock = await lockDataDir(config.dataDir, options.purpose ?? path.basename(process.argv[1] ?? 'node'));
  if (lock.tookOver) options.onStaleLock?.(lock.tookOver, lock.path);
  try {
    const dir = path.resolve(config.dataDir, 'pglite');
    // A first start copies the built template (npm run build writes it beside the bundle); without
    // one (running from src/), PGlite runs initdb.
    seedFromTemplate(dir);
    const db = await PgliteDatabase.open(dir);
    db.afterClose(() => lock.release());
    try {
      await finishSeeding(db, dir);
    } catch (error) {
      await db.close();
      throw error;
    }
    return db;
  } catch (error) {
    lock.release();
    throw error;
  }
}
