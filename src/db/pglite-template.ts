// A new embedded database starts from a template made at build time — an initialised, fully migrated
// data directory written by `npm run build` next to the bundle — instead of running initdb, which
// takes PGlite several seconds on a first start. The template exists in two forms:
// - a directory (`pglite-template/`): a first start on disk copies it natively into DATA_DIR and
//   opens it as a restart would. PGlite's own loadDataDir unpacks a tarball inside WebAssembly,
//   about a second and a half slower on a 2-core machine;
// - a gzipped tarball of the same directory, for in-memory databases (tests), which only PGlite's
//   loadDataDir can fill.
// Without the directory (running from src/), a new data directory is initialised as usual. Either way
// `migrate` then runs and finds the schema current (or applies what is newer than the template).
import { cpSync, existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Queryable } from './database.ts';
import { migrate } from './migrate.ts';
import { redateSeededRates } from './repositories/rates.ts';
import { PgliteDatabase } from './pglite.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const PGLITE_TEMPLATE_FILE = path.join(HERE, 'pglite-template.tar.gz');
export const PGLITE_TEMPLATE_DIR = path.join(HERE, 'pglite-template');

/** The template's tarball, when one was built (in-memory test databases load it), else undefined. */
export function pgliteTemplate(file = PGLITE_TEMPLATE_FILE): Blob | undefined {
  return existsSync(file) ? new Blob([readFileSync(file)]) : undefined;
}

/**
 * Makes `dataDir` a copy of the template directory when it holds no database yet: copied beside it,
 * then renamed into place, so that a process killed during the copy leaves no half database that
 * looks whole (the next start copies again). False when there is no template, or `dataDir` is not
 * empty (PgliteDatabase.open then decides, as without a template).
 */
export function seedFromTemplate(dataDir: string, template = PGLITE_TEMPLATE_DIR): boolean {
  if (!existsSync(path.join(template, 'PG_VERSION'))) return false;
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) return false;
  const copy = `${dataDir}.seeding`;
  rmSync(copy, { recursive: true, force: true });
  cpSync(template, copy, { recursive: true });
  // Written before the rename, removed once the copy is this database's own (finishSeeding): a
  // process killed in between leaves it, and the next start finishes the job.
  writeFileSync(seededMarker(dataDir), '');
  // rename(2) replaces an empty directory.
  renameSync(copy, dataDir);
  return true;
}

const seededMarker = (dataDir: string) => `${dataDir}.from-template`;

/**
 * What a copy of the template still needs once open, as if its migrations had run now: the default FX
 * rates the migrations seed are dated when the template was built, and a rate is stale after
 * RATE_MAX_AGE_SECONDS, so a first start a day after `npm ci` would refuse every conversion quote.
 * They are dated now, once, before anything reads them.
 */
export async function finishSeeding(db: Queryable, dataDir: string): Promise<void> {
  const marker = seededMarker(dataDir);
  if (!existsSync(marker)) return;
  await redateSeededRates(db);
  rmSync(marker, { force: true });
}

/**
 * Initialises a database in `dir` (emptied first), applies every migration, closes it, and writes the
 * same data directory as a gzipped tarball to `file`. Returns the tarball's size.
 */
export async function writePgliteTemplate(file = PGLITE_TEMPLATE_FILE, dir = PGLITE_TEMPLATE_DIR): Promise<number> {
  rmSync(dir, { recursive: true, force: true });
  const db = await PgliteDatabase.open(dir);
  try {
    await migrate(db);
    const bytes = Buffer.from(await (await db.dumpDataDir()).arrayBuffer());
    writeFileSync(file, bytes);
    return bytes.length;
  } finally {
    await db.close();
  }
}
