// The commands that need no running service: the database's migrations and the settings' list.
import { CONFIG_DOC, loadConfig } from '../../config.ts';
import { migrate } from '../../db/migrate.ts';
import { openDatabase } from '../../db/open.ts';
import type { Command } from '../command.ts';

export const LOCAL_COMMANDS: Command[] = [
  {
    name: 'migrate',
    summary: 'Apply pending migrations (DATABASE_URL, or the embedded database in DATA_DIR); needs no running service',
    flags: {},
    run: async () => {
      const db = await openDatabase(loadConfig(), { purpose: 'bolivar migrate' });
      try {
        return await migrate(db);
      } finally {
        await db.close();
      }
    },
  },
  {
    name: 'config',
    summary: 'List the environment variables the service reads, with their defaults; needs no running service',
    flags: {},
    run: async () =>
      Object.fromEntries(CONFIG_DOC.map(([name, fallback, meaning]) => [name, `${meaning} (default ${fallback})`])),
  },
];
