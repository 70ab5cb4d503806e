import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DATA_DIR_LOCK_FILE, DataDirLockedError, lockDataDir } from '../../src/db/data-dir-lock.ts';

const dataDir = () => mkdtempSync(path.join(tmpdir(), 'bds-lock-'));

/** The pid of a process that has exited (pids are not reused this soon). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function writeLock(dir: string, holder: Record<string, unknown>): string {
  const file = path.join(dir, DATA_DIR_LOCK_FILE);
  writeFileSync(file, JSON.stringify(holder));
  return file;
}

describe('the DATA_DIR lock of the embedded engine', () => {
  it('is exclusive: a second taker is refused with the holder named, and a release frees it', async () => {
    const dir = dataDir();
    const first = await lockDataDir(dir, 'first');
    const saved = JSON.parse(readFileSync(first.path, 'utf8'));
    assert.equal(saved.pid, process.pid);
    assert.equal(saved.purpose, 'first');
    await assert.rejects(lockDataDir(dir, 'second'), (error: unknown) => {
      assert.ok(error instanceof DataDirLockedError);
      assert.match(
        error.message,
        new RegExp(`in use by another process: pid ${process.pid} \\(first\\) on host .*, started \\d{4}-`),
      );
      assert.match(error.message, /DATABASE_URL/);
      return true;
    });
    first.release();
    assert.equal(existsSync(first.path), false);
    const again = await lockDataDir(dir, 'again');
    assert.equal(again.tookOver, undefined);
    again.release();
  });

  it('takes over a lock whose process is gone, and says whose it was', async () => {
    const dir = dataDir();
    const pid = deadPid();
    writeLock(dir, {
      pid,
      host: hostname(),
      startedAt: '2026-01-01T00:00:00.000Z',
      purpose: 'npm start, ROLE=all',
      token: 'old',
    });
    const lock = await lockDataDir(dir, 'next');
    assert.equal(lock.tookOver?.pid, pid);
    assert.equal(JSON.parse(readFileSync(lock.path, 'utf8')).pid, process.pid);
    lock.release();
  });

  it('takes over a lock with its own pid from an earlier start (a restarted container), not its own', async () => {
    const dir = dataDir();
    writeLock(dir, {
      pid: process.pid,
      host: hostname(),
      startedAt: '2020-01-01T00:00:00.000Z',
      purpose: 'earlier',
      token: 'old',
    });
    const lock = await lockDataDir(dir, 'now');
    assert.equal(lock.tookOver?.purpose, 'earlier');
    lock.release();
  });

  it('never takes over a lock from another host, nor one that names no process', async () => {
    const foreign = dataDir();
    writeLock(foreign, {
      pid: deadPid(),
      host: `not-${hostname()}`,
      startedAt: '2026-01-01T00:00:00.000Z',
      purpose: 'elsewhere',
    });
    await assert.rejects(
      lockDataDir(foreign, 'here'),
      /on host not-.*cannot tell whether it still runs; if it does not, delete .*pglite\.lock/,
    );
    const garbled = dataDir();
    writeFileSync(path.join(garbled, DATA_DIR_LOCK_FILE), '');
    await assert.rejects(
      lockDataDir(garbled, 'here'),
      /names no process\. If no other process uses DATA_DIR, delete that file/,
    );
  });

  it('release leaves alone a lock that is no longer its own', async () => {
    const dir = dataDir();
    const lock = await lockDataDir(dir, 'mine');
    const file = writeLock(dir, {
      pid: process.pid,
      host: hostname(),
      startedAt: 'x',
      purpose: 'someone else',
      token: 'theirs',
    });
    lock.release();
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).token, 'theirs');
  });
});
