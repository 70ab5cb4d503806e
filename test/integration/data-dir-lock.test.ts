import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DATA_DIR_LOCK_FILE } from '../../src/db/data-dir-lock.ts';
import { ENGINE } from '../support/harness.ts';
import { freePort, MIGRATE_ARGS, runToExit, startService } from '../support/process.ts';

// The lock guards the embedded engine only; with DATABASE_URL set there is nothing to lock. These run
// in the embedded-engine suite (DATABASE_URL is cleared for the processes either way).
const skip = ENGINE === 'postgres' ? "the DATA_DIR lock is the embedded engine's: covered by the PGlite suite" : false;

describe('one process per embedded DATA_DIR', { skip }, () => {
  it('a second service or migration on the same DATA_DIR refuses to start, naming the first; SIGTERM releases the lock', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-lock-'));
    const env = { DATA_DIR: dataDir, DATABASE_URL: '', BOOTSTRAP: 'off' };
    const first = await startService(env);
    const pid = first.child.pid!;
    const lockFile = path.join(dataDir, DATA_DIR_LOCK_FILE);
    try {
      assert.equal(JSON.parse(readFileSync(lockFile, 'utf8')).pid, pid);

      const second = await runToExit({ ...env, PORT: String(await freePort()), HOST: '127.0.0.1' });
      assert.notEqual(second.code, 0, second.output);
      assert.match(
        second.output,
        new RegExp(
          `in use by another process: pid ${pid} \\(npm start, ROLE=all\\) on host \\S+, started \\d{4}-\\d\\d-\\d\\dT`,
        ),
        second.output,
      );
      assert.match(second.output, /set DATABASE_URL to run several processes on PostgreSQL/);

      const migration = await runToExit(env, MIGRATE_ARGS);
      assert.notEqual(migration.code, 0, migration.output);
      assert.match(migration.output, new RegExp(`pid ${pid} \\(npm start, ROLE=all\\)`), migration.output);

      // The first one was never disturbed.
      assert.equal((await fetch(`${first.baseUrl}/health/ready`)).status, 200);
      assert.equal(JSON.parse(readFileSync(lockFile, 'utf8')).pid, pid);
    } finally {
      assert.equal(await first.stop('SIGTERM'), 0, first.output());
    }
    assert.equal(existsSync(lockFile), false, 'a clean shutdown removes the lock');

    const restarted = await startService(env);
    try {
      assert.doesNotMatch(restarted.output(), /took over/);
    } finally {
      assert.equal(await restarted.stop('SIGTERM'), 0, restarted.output());
    }
    const migrated = await runToExit(env, MIGRATE_ARGS);
    assert.equal(migrated.code, 0, migrated.output);
    assert.match(migrated.output, /database is up to date/);
    assert.equal(existsSync(lockFile), false, 'the migration releases the lock too');
  });

  it('a lock left by a SIGKILLed process is taken over, and the log says whose it was', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-lock-'));
    const env = { DATA_DIR: dataDir, DATABASE_URL: '', BOOTSTRAP: 'off' };
    const killed = await startService(env);
    const killedPid = killed.child.pid!;
    await killed.stop('SIGKILL');
    const lockFile = path.join(dataDir, DATA_DIR_LOCK_FILE);
    assert.equal(JSON.parse(readFileSync(lockFile, 'utf8')).pid, killedPid, 'SIGKILL leaves the lock behind');

    const next = await startService(env);
    try {
      assert.match(
        next.output(),
        new RegExp(
          `took over the DATA_DIR lock of pid ${killedPid} \\(npm start, ROLE=all\\).*which is no longer running`,
        ),
      );
      assert.equal(JSON.parse(readFileSync(lockFile, 'utf8')).pid, next.child.pid);
    } finally {
      assert.equal(await next.stop('SIGTERM'), 0, next.output());
    }
  });

  it('a lock naming a pid that is not running is taken over by a migration too', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-lock-'));
    const gone = Number(
      spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout,
    );
    writeFileSync(
      path.join(dataDir, DATA_DIR_LOCK_FILE),
      JSON.stringify({
        pid: gone,
        host: hostname(),
        startedAt: '2026-01-01T00:00:00.000Z',
        purpose: 'npm start, ROLE=all',
      }),
    );
    const migration = await runToExit({ DATA_DIR: dataDir, DATABASE_URL: '' }, MIGRATE_ARGS);
    assert.equal(migration.code, 0, migration.output);
    assert.match(migration.output, new RegExp(`took over the DATA_DIR lock of pid ${gone} `));
    assert.equal(existsSync(path.join(dataDir, DATA_DIR_LOCK_FILE)), false);
  });
});
