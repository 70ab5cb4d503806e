import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { PgliteDatabase } from '../../src/db/pglite.ts';
import { finishSeeding, seedFromTemplate } from '../../src/db/pglite-template.ts';
import { ENGINE } from '../support/harness.ts';

// The template directory `npm run build` writes beside the bundle (`npm test` builds first).
const BUILT_TEMPLATE = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../dist/pglite-template');
const skip = ENGINE === 'postgres' ? "the template is the embedded engine's: covered by the PGlite suite" : false;

function freshDataDir(): string {
  return path.join(mkdtempSync(path.join(tmpdir(), 'bds-template-')), 'pglite');
}

async function openAndMigrate(dir: string): Promise<string[]> {
  const db = await PgliteDatabase.open(dir);
  try {
    const { applied } = await migrate(db);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments');
    assert.equal(rows[0]!.n, 0);
    return applied;
  } finally {
    await db.close();
  }
}

describe('a first embedded start from the built template', { skip }, () => {
  it('copies a migrated database into an empty data directory, which opens with nothing left to migrate', async () => {
    assert.ok(existsSync(path.join(BUILT_TEMPLATE, 'PG_VERSION')), 'npm run build writes the template directory');
    const dir = freshDataDir();
    mkdirSync(dir); // the empty directory a previous, interrupted open may have made
    assert.equal(seedFromTemplate(dir, BUILT_TEMPLATE), true);
    assert.equal(
      readFileSync(path.join(dir, 'PG_VERSION'), 'utf8'),
      readFileSync(path.join(BUILT_TEMPLATE, 'PG_VERSION'), 'utf8'),
    );
    assert.deepEqual(await openAndMigrate(dir), []);
    // The template itself is never opened: a second first start copies the same bytes.
    const again = freshDataDir();
    assert.equal(seedFromTemplate(again, BUILT_TEMPLATE), true);
    assert.deepEqual(await openAndMigrate(again), []);
  });

  it('a copy left by a process killed mid-way is discarded and made again', async () => {
    const dir = freshDataDir();
    const leftover = `${dir}.seeding`;
    mkdirSync(path.join(leftover, 'base'), { recursive: true });
    writeFileSync(path.join(leftover, 'base', 'half-written'), 'x');
    assert.equal(existsSync(dir), false, "the interrupted copy never took the data directory's name");
    assert.equal(seedFromTemplate(dir, BUILT_TEMPLATE), true);
    assert.equal(existsSync(leftover), false);
    assert.equal(existsSync(path.join(dir, 'base', 'half-written')), false);
    assert.deepEqual(await openAndMigrate(dir), []);
  });

  it("dates the copy's default FX rates when it becomes the database, also after a kill between copy and open", async () => {
    const dir = freshDataDir();
    assert.equal(seedFromTemplate(dir, BUILT_TEMPLATE), true);
    const rates = async (db: PgliteDatabase) =>
      (await db.query<{ updated_at: Date }>('SELECT updated_at FROM fx_rates')).rows.map((r) => r.updated_at.getTime());
    // Killed after the rename, before the rates were dated: the copy still carries the build's time.
    const first = await PgliteDatabase.open(dir);
    const built = await rates(first);
    await first.close();
    const before = Date.now();
    assert.ok(
      built.every((at) => at < before),
      'the template was built earlier',
    );
    // The next start finishes the job, once.
    const db = await PgliteDatabase.open(dir);
    try {
      await finishSeeding(db, dir);
      const dated = await rates(db);
      assert.equal(dated.length, 3);
      assert.ok(
        dated.every((at) => at >= before - 1_000),
        `dated now: ${dated.map((at) => new Date(at).toISOString())}`,
      );
      await db.exec(`UPDATE fx_rates SET updated_at = '2020-01-01T00:00:00Z'`);
      await finishSeeding(db, dir);
      assert.ok(
        (await rates(db)).every((at) => at === Date.parse('2020-01-01T00:00:00Z')),
        'only once: a rate set later keeps its date',
      );
    } finally {
      await db.close();
    }
  });

  it('leaves a data directory that holds anything alone, and does nothing without a template', async () => {
    const dir = freshDataDir();
    assert.equal(seedFromTemplate(dir, BUILT_TEMPLATE), true);
    const db = await PgliteDatabase.open(dir);
    await db.exec(`CREATE TABLE kept (note text); INSERT INTO kept VALUES ('still here')`);
    await db.close();
    assert.equal(seedFromTemplate(dir, BUILT_TEMPLATE), false);
    const reopened = await PgliteDatabase.open(dir);
    try {
      assert.deepEqual((await reopened.query<{ note: string }>('SELECT note FROM kept')).rows, [
        { note: 'still here' },
      ]);
    } finally {
      await reopened.close();
    }

    const other = freshDataDir();
    assert.equal(seedFromTemplate(other, path.join(path.dirname(other), 'no-template')), false);
    assert.equal(existsSync(other), false);
  });
});
