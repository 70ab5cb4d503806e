import type { FastifyBaseLogger } from 'fastify';
import { AUDIT_ARCHIVE_ROWS_MAX, type AuditArchiver } from '../services/audit-archive.ts';

/** How often the worker looks for audit rows past their retention (a day's rows are due once a day). */
export const AUDIT_ARCHIVE_POLL_MS = 10 * 60_000;

/** The audit trail's retention: one archive file per pass, at once again while a backlog remains. */
export class AuditArchiveWorker {
  constructor(
    private readonly archiver: AuditArchiver,
    private readonly log: FastifyBaseLogger,
  ) {}

  async runOnce(): Promise<boolean> {
    const archived = await this.archiver.archiveOnce();
    if (archived > 0) this.log.info({ rows: archived }, 'audit rows past their retention archived and removed');
    return archived === AUDIT_ARCHIVE_ROWS_MAX;
  }
}
