// `npm run audit:verify -- [DIR]`: checks the chain of the audit archive files in DIR (default
// AUDIT_ARCHIVE_DIR as the service reads it): every line chained to the one before, none altered, no
// file missing. Prints the files, rows and last hash (compare it with the last archive's `last_hash`
// in audit_archives, or the latest `audit.archive` audit row); exits 1 where the chain breaks.
import { loadConfig } from '../src/config.ts';
import { verifyAuditArchives } from '../src/services/audit-archive.ts';

const dir = process.argv[2] ?? loadConfig().auditArchiveDir;
const result = await verifyAuditArchives(dir);
process.stdout.write(`${JSON.stringify({ dir, ...result })}\n`);
process.exit(result.problem === null ? 0 : 1);
