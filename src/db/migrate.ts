import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.ts';
import { Params } from './repositories/sql-params.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
// Any constant works; it only has to be the same in every process of this service.
const MIGRATION_LOCK_KEY = 727_001;

/** @internal Exported for its tests, not used elsewhere. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** @internal Exported for its tests, not used elsewhere. */
export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: readFileSync(path.join(dir, file), 'utf8'),
    }));
}

/**
 * Applies pending migrations, each in its own transaction, under a session advisory lock so that
 * two processes starting at once apply each migration exactly once (the second waits, then finds
 * nothing to do). `afterLock` runs under the same lock: first-start work such as the bootstrap.
 */
export async function migrate(db: Database, afterLock?: () => Promise<unknown>): Promise<{ applied: string[] }> {
  const migrations = loadMigrations();
  return db.withConnection(async (conn) => {
    const lock = new Params();
    await conn.query(`SELECT pg_advisory_lock(${lock.add(MIGRATION_LOCK_KEY)})`, lock.values);
    // A migration may rewrite a large table: the service's statement and lock bounds do not apply.
    await conn.exec('SET statement_timeout = 0; SET lock_timeout = 0');
    try {
      await conn.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await conn.query<{ version: number }>('SELECT version FROM schema_migrations');
      const done = new Set(rows.map((row) => row.version));
      const applied: string[] = [];
      for (const migration of migrations) {
        if (done.has(migration.version)) continue;
        await conn.exec('BEGIN');
        try {
          await conn.exec(migration.sql);
          const p = new Params();
          await conn.query(
            `INSERT INTO schema_migrations (version, name) VALUES (${p.add(migration.version)}, ${p.add(migration.name)})`,
            p.values,
          );
          await conn.exec('COMMIT');
        } catch (error) {
          await conn.exec('ROLLBACK');
          throw new Error(`migration ${migration.version}_${migration.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        applied.push(`${String(migration.version).padStart(3, '0')}_${migration.name}`);
      }
      if (afterLock) await afterLock();
      return { applied };
    } finally {
      await conn.exec('RESET statement_timeout; RESET lock_timeout');
      const unlock = new Params();
      await conn.query(`SELECT pg_advisory_unlock(${unlock.add(MIGRATION_LOCK_KEY)})`, unlock.values);
    }
  });
}
