// The audit trail's retention: rows older than AUDIT_RETENTION_DAYS (the default, 400) are archived to
// JSON-lines files chained by hash and then removed, by the one path the database allows; any other
// removal is still refused; and a line altered, removed or a file lost is found by the verification.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { ManualClock } from '../support/clock.ts';
import {
  AUDIT_ARCHIVE_ROWS_MAX,
  AuditArchiver,
  archiveFileName,
  verifyAuditArchives,
} from '../../src/services/audit-archive.ts';
import { createTenant, ENGINE, startTestApp, type TestApp } from '../support/harness.ts';

const DAY_MS = 86_400_000;

describe(`the audit trail's retention on ${ENGINE}`, () => {
  let t: TestApp;
  let dir: string;
  const clock = new ManualClock();
  const retentionDays = loadConfig({}).auditRetentionDays;
  before(async () => {
    t = await startTestApp();
    dir = mkdtempSync(path.join(tmpdir(), 'bds-audit-archive-'));
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const archiver = () => new AuditArchiver(t.db, clock, { retentionDays, dir });
  const auditCount = async () =>
    Number(
      (await t.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM audit_log WHERE action <> 'audit.archive'`))
        .rows[0]!.n,
    );

  it(`keeps rows younger than ${retentionDays} days; archives and removes older ones, chained; an audited path, the only one`, async () => {
    for (let i = 0; i < 3; i += 1) await createTenant(t);
    const rows = await auditCount();
    assert.ok(rows >= 6, `tenants and keys were audited: ${rows} rows`);
    assert.equal(await archiver().archiveOnce(), 0, 'nothing is old enough yet');

    clock.set(new Date(Date.now() + (retentionDays + 1) * DAY_MS));
    assert.equal(await archiver().archiveOnce(), rows);
    assert.equal(await auditCount(), 0, 'the archived rows are gone from the table');
    const archived = (
      await t.db.query<{ action: string; after: { rows: number; file: string; lastHash: string } }>(
        `SELECT action, after FROM audit_log WHERE action = 'audit.archive'`,
      )
    ).rows;
    assert.equal(archived.length, 1, 'the archiving is itself audited');
    assert.deepEqual([archived[0]!.after.rows, archived[0]!.after.file], [rows, archiveFileName(1)]);
    const verified = await verifyAuditArchives(dir);
    assert.deepEqual({ ...verified, lastHash: undefined }, { files: 1, rows, lastHash: undefined, problem: null });
    assert.equal(verified.lastHash, archived[0]!.after.lastHash, "the files' chain ends where the database says");
    const line = JSON.parse(readFileSync(path.join(dir, archiveFileName(1)), 'utf8').split('\n')[0]!);
    assert.match(line.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'the exact time, microseconds kept');
    assert.match(line.hash, /^[0-9a-f]{64}$/);

    // The next archive continues the chain (the audit.archive row is old by then too).
    await createTenant(t);
    clock.set(new Date(clock.now().getTime() + (retentionDays + 1) * DAY_MS));
    assert.ok((await archiver().archiveOnce()) >= 2);
    assert.deepEqual((await verifyAuditArchives(dir)).problem, null);
    assert.equal((await verifyAuditArchives(dir)).files, 2);

    // Ordinary SQL still cannot remove or change a row, nor the archives' own record.
    await createTenant(t);
    await assert.rejects(t.db.query('DELETE FROM audit_log'), /audit_log is append-only: DELETE refused/);
    await assert.rejects(t.db.query(`UPDATE audit_log SET action = 'tenant.create'`), /append-only/);
    await assert.rejects(t.db.query('DELETE FROM audit_archives'), /audit_archives is append-only/);
    await assert.rejects(t.db.query('UPDATE audit_archives SET row_count = 1'), /audit_archives is append-only/);
  });

  it('a line altered, a line removed, a file missing: the verification says where', async () => {
    const file = path.join(dir, archiveFileName(1));
    const original = readFileSync(file, 'utf8');
    const lines = original.split('\n').filter((l) => l !== '');
    try {
      writeFileSync(
        file,
        `${[lines[0]!.replace('"tenant.create"', '"tenant.update"'), ...lines.slice(1)].join('\n')}\n`,
      );
      const altered = await verifyAuditArchives(dir);
      assert.ok(
        altered.problem?.startsWith(`${archiveFileName(1)}:1:`) && /altered|not the one/.test(altered.problem),
        String(altered.problem),
      );
      writeFileSync(file, `${[lines[0]!, ...lines.slice(2)].join('\n')}\n`);
      assert.match(
        String((await verifyAuditArchives(dir)).problem),
        new RegExp(`${archiveFileName(1)}:2: .*removed or reordered`),
      );
      rmSync(file);
      assert.match(String((await verifyAuditArchives(dir)).problem), /audit-000001\.jsonl is missing/);
    } finally {
      writeFileSync(file, original);
    }
    assert.equal((await verifyAuditArchives(dir)).problem, null);
  });

  it(`one run archives at most ${AUDIT_ARCHIVE_ROWS_MAX} rows; AUDIT_RETENTION_DAYS=0 keeps every row`, async () => {
    assert.equal(await new AuditArchiver(t.db, clock, { retentionDays: 0, dir }).archiveOnce(), 0);
    assert.equal(loadConfig({ AUDIT_RETENTION_DAYS: '0' }).auditRetentionDays, 0);
    assert.equal(loadConfig({ DATA_DIR: '/srv/b' }).auditArchiveDir, '/srv/b/audit-archive');
  });
});
