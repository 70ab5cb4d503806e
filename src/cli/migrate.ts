import { ConfigError, loadConfig } from '../config.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';

try {
  const config = loadConfig();
  const db = await openDatabase(config);
  const { applied } = await migrate(db);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  await db.close();
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `migration failed: ${(error as Error).message}`}\n`);
  process.exit(1);
}
