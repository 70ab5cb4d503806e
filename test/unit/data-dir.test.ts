// DATA_DIR holds the embedded database (webhook secrets, account numbers, national ids) and
// bootstrap.json: it is created for its owner only, and refused when other users can get into it.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { ensureDataDir } from '../../src/db/data-dir.ts';
import { openDatabase } from '../../src/db/open.ts';

const modeOf = (dir: string) => statSync(dir).mode & 0o777;

describe('DATA_DIR', { skip: process.platform === 'win32' ? 'no POSIX modes on Windows' : false }, () => {
  it('is created 0700 whatever the umask, its missing parents with the usual mode', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'bds-data-dir-'));
    const dataDir = path.join(root, 'srv', 'data');
    const umask = process.umask(0o002);
    try {
      assert.equal(ensureDataDir(dataDir), dataDir);
    } finally {
      process.umask(umask);
    }
    assert.equal(modeOf(dataDir), 0o700);
    assert.equal(modeOf(path.join(root, 'srv')), 0o775, 'a parent is not DATA_DIR: the umask decides');
    assert.equal(ensureDataDir(dataDir), dataDir, 'an existing 0700 directory is accepted');
  });

  for (const mode of [0o755, 0o750, 0o705, 0o711, 0o720]) {
    it(`refuses an existing directory of mode 0${mode.toString(8)}, naming DATA_DIR and the fix`, () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-data-dir-'));
      chmodSync(dataDir, mode);
      assert.throws(
        () => ensureDataDir(dataDir),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.variable, 'DATA_DIR');
          assert.match(error.message, new RegExp(`is open to other users \\(mode 0${mode.toString(8)}\\)`));
          assert.match(error.message, new RegExp(`chmod 700 ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
          return true;
        },
      );
      assert.equal(modeOf(dataDir), mode, "nothing is changed behind the operator's back");
    });
  }

  it('the embedded engine refuses it before writing anything into it (no lock, no database)', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-data-dir-'));
    chmodSync(dataDir, 0o755);
    await assert.rejects(openDatabase({ ...loadConfig({}), databaseUrl: undefined, dataDir }), ConfigError);
    assert.deepEqual(readdirSync(dataDir), []);
  });
});
