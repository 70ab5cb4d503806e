import { ConfigError, loadConfig } from '../config.ts';
import { migrate } from '../db/migrate.ts';
import { DataDirLockedError, describeHolder } from '../db/data-dir-lock.ts';
import { openDatabase } from '../db/open.ts';

try {
  const config = loadConfig();
  const db = await openDatabase(config, {
    purpose: 'npm run migrate',
    onStaleLock: (previous) =>
      process.stderr.write(`took over the DATA_DIR lock of ${describeHolder(previous)}, which is no longer running\n`),
  });
  const { applied } = await migrate(db);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  await db.close();
} catch (error) {
  const message =
    error instanceof ConfigError || error instanceof DataDirLockedError
      ? error.message
      : `migration failed: ${(error as Error).message}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
