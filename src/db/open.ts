import path from 'node:path';
import type { Config } from '../config.ts';
import type { Database } from './database.ts';
import { PgliteDatabase } from './pglite.ts';
import { pgliteTemplate } from './pglite-template.ts';
import { PostgresDatabase } from './postgres.ts';

/** DATABASE_URL set → PostgreSQL through a pool; unset → embedded PGlite under DATA_DIR/pglite. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolSize' | 'dbConnectionMaxLifetimeS' | 'dbStatementTimeoutMs' | 'dbLockTimeoutMs'>,
): Promise<Database> {
  if (config.databaseUrl) {
    return new PostgresDatabase(config.databaseUrl, config.dbPoolSize, {
      maxLifetimeSeconds: config.dbConnectionMaxLifetimeS,
      statementTimeoutMs: config.dbStatementTimeoutMs,
      lockTimeoutMs: config.dbLockTimeoutMs,
    });
  }
  return PgliteDatabase.open(path.resolve(config.dataDir, 'pglite'), pgliteTemplate());
}
