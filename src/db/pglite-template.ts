// A new embedded database starts from a template made at build time — an initialised, fully migrated
// data directory, dumped by `npm run build` next to the bundle — instead of running initdb, which
// takes PGlite several seconds on a first start. Without the template (running from src/), a new
// data directory is initialised as usual. Either way `migrate` then runs and finds the schema current
// (or applies what is newer than the template).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate } from './migrate.ts';
import { PgliteDatabase } from './pglite.ts';

export const PGLITE_TEMPLATE_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pglite-template.tar.gz');

/** The template's bytes when one was built, else undefined. */
export function pgliteTemplate(file = PGLITE_TEMPLATE_FILE): Blob | undefined {
  return existsSync(file) ? new Blob([readFileSync(file)]) : undefined;
}

/** Initialises a database in memory, applies every migration, and writes its data directory. */
export async function writePgliteTemplate(file = PGLITE_TEMPLATE_FILE): Promise<number> {
  const db = await PgliteDatabase.open(undefined);
  try {
    await migrate(db);
    const bytes = Buffer.from(await (await db.dumpDataDir()).arrayBuffer());
    writeFileSync(file, bytes);
    return bytes.length;
  } finally {
    await db.close();
  }
}
