// The audit trail's retention (AUDIT_RETENTION_DAYS): rows older than that are written to an archive
// file and then removed, by the one path the database allows (migration 038). Each archive is a JSON
// lines file, one row per line with `prev` (the hash of the line before, across files: the chain
// starts at 64 zeros) and `hash` = SHA-256 of `prev`, a newline and the row's canonical JSON; so a
// line removed, altered or reordered, or a file missing, breaks the chain where it happened
// (verifyAuditArchives). A file is written and fsync'd before the transaction that records it and
// removes its rows commits: a crash in between leaves a file the next run writes again, never rows
// removed without their file.
import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  auditRowsDue,
  lastAuditArchive,
  lockAuditArchiving,
  recordAuditArchive,
  type ArchivedAuditRow,
} from '../db/repositories/audit-archives.ts';
import { SERVICE_ACTOR } from '../domain/audit.ts';
import { canonicalJson } from '../domain/canonical-json.ts';
import type { Clock } from '../domain/clock.ts';
import { assert } from '../domain/assert.ts';

/** Rows in one archive file at most (a few MB): one run writes one file; a backlog takes several runs. */
export const AUDIT_ARCHIVE_ROWS_MAX = 10_000;
const GENESIS_HASH = '0'.repeat(64);
const FILE_PATTERN = /^audit-(\d{6})\.jsonl$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The hash of one archived row, chained to the line before. */
function chainHash(prev: string, row: ArchivedAuditRow): string {
  return sha256(`${prev}\n${canonicalJson(row)}`);
}

/** @internal Exported for its tests, not used elsewhere. */
export const archiveFileName = (seq: number) => `audit-${String(seq).padStart(6, '0')}.jsonl`;

/** Writes `content` to `file` so that it is on disk when this returns: a temporary file, fsync'd, renamed, the directory fsync'd. */
async function writeDurably(file: string, content: string): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = `${file}.partial`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, file);
  const directory = await open(dir, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

export interface AuditArchiveSettings {
  /** Rows older than this many days are archived; 0: kept for ever. */
  retentionDays: number;
  dir: string;
}

export class AuditArchiver {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly settings: AuditArchiveSettings,
  ) {}

  /**
   * One archive file of the oldest rows due (at most AUDIT_ARCHIVE_ROWS_MAX), written and its rows
   * removed; one process at a time. Answers how many rows it archived (0: none due).
   */
  async archiveOnce(): Promise<number> {
    if (this.settings.retentionDays === 0) return 0;
    const now = this.clock.now();
    const cutoff = new Date(now.getTime() - this.settings.retentionDays * 86_400_000);
    return this.db.transaction(async (tx) => {
      await lockAuditArchiving(tx);
      const last = await lastAuditArchive(tx);
      const rows = await auditRowsDue(
        tx,
        cutoff,
        last && { createdAt: last.through_created_at, id: last.through_id },
        AUDIT_ARCHIVE_ROWS_MAX,
      );
      if (rows.length === 0) return 0;
      const seq = (last?.seq ?? 0) + 1;
      const prevHash = last?.last_hash ?? GENESIS_HASH;
      let prev = prevHash;
      const lines = rows.map((row) => {
        const hash = chainHash(prev, row);
        const line = JSON.stringify({ ...row, prev, hash });
        prev = hash;
        return line;
      });
      const content = `${lines.join('\n')}\n`;
      const file = archiveFileName(seq);
      await writeDurably(path.join(this.settings.dir, file), content);
      const through = rows[rows.length - 1]!;
      const archive = {
        seq,
        through_created_at: through.created_at,
        through_id: through.id,
        row_count: rows.length,
        file,
        prev_hash: prevHash,
        last_hash: prev,
        file_sha256: sha256(content),
      };
      const removed = await recordAuditArchive(
        tx,
        archive,
        rows.map((row) => row.id),
        now,
      );
      assert(removed === rows.length, `archive ${seq} holds ${rows.length} rows but ${removed} were removed`);
      await recordAudit(tx, {
        actor: SERVICE_ACTOR,
        action: 'audit.archive',
        target: { type: 'audit_archive', id: String(seq) },
        before: null,
        after: {
          file,
          rows: rows.length,
          throughCreatedAt: through.created_at,
          lastHash: prev,
          fileSha256: archive.file_sha256,
        },
      });
      return rows.length;
    });
  }
}

/** @internal Exported for its tests, not used elsewhere. */
export interface ArchiveVerification {
  files: number;
  rows: number;
  /** The chain's last hash (what the last audit_archives row says when nothing is missing). */
  lastHash: string;
  /** Where the chain breaks, or null when it holds from the first file to the last. */
  problem: string | null;
}

/**
 * Walks every archive file of `dir` in order and checks the chain, line by line.
 * @internal Exported for its tests, not used elsewhere.
 */
export async function verifyAuditArchives(dir: string): Promise<ArchiveVerification> {
  const names = (await readdir(dir)).filter((name) => FILE_PATTERN.test(name)).sort();
  let prev = GENESIS_HASH;
  let rows = 0;
  const broken = (problem: string): ArchiveVerification => ({ files: names.length, rows, lastHash: prev, problem });
  for (const [i, name] of names.entries()) {
    if (Number(FILE_PATTERN.exec(name)![1]) !== i + 1)
      return broken(`${name}: archive ${archiveFileName(i + 1)} is missing`);
    const lines = (await readFile(path.join(dir, name), 'utf8')).split('\n').filter((line) => line !== '');
    for (const [n, text] of lines.entries()) {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return broken(`${name}:${n + 1}: not a JSON line`);
      }
      const { prev: linePrev, hash, ...row } = parsed;
      if (linePrev !== prev)
        return broken(
          `${name}:${n + 1}: the line before it is not the one it was chained to (a line removed or reordered)`,
        );
      if (hash !== chainHash(prev, row as unknown as ArchivedAuditRow))
        return broken(`${name}:${n + 1}: the row is not what was archived (altered)`);
      prev = hash as string;
      rows += 1;
    }
  }
  return { files: names.length, rows, lastHash: prev, problem: null };
}
