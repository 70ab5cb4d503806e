// The commit's transaction: run again (bounded) when PostgreSQL aborts it as a deadlock or
// serialization victim, or when it read something its locks then showed stale. A deadlock is a bug in
// the lock order (README.md in this folder); this retry is the safety net.
import { isRetryableConflict, type Database, type TransactionHandle, type TransactionOptions } from '../database.ts';
/**
 * A commit read something before or outside its locks that turned out stale under them (an inline
 * beneficiary or a ledger account created meanwhile by another transaction, limit rules changed): the
 * transaction rolls back and runs again, reading anew.
 */
export class StaleCommitRead extends Error {
  constructor(what: string) {
    super(`stale read in a commit: ${what}`);
    this.name = 'StaleCommitRead';
  }
}

/** Attempts of one transaction that PostgreSQL aborted as a deadlock or serialization victim. */
const TRANSACTION_ATTEMPTS_MAX = 4;
/** Upper bound of the random pause before attempt n+1 is n times this. */
const RETRY_JITTER_MS = 20;

/**
 * Runs `work` in one transaction; if PostgreSQL aborts it as a deadlock or serialization victim (or
 * it read something stale, StaleCommitRead), runs it again (at most TRANSACTION_ATTEMPTS_MAX times, after a random pause). `work` must be safe to run
 * again: everything it did was rolled back.
 */
export async function inTransaction<T>(
  db: Database,
  work: (tx: TransactionHandle) => Promise<T>,
  options?: TransactionOptions,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.transaction(work, options);
    } catch (error) {
      const retryable = isRetryableConflict(error) || error instanceof StaleCommitRead;
      if (!retryable || attempt >= TRANSACTION_ATTEMPTS_MAX) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * RETRY_JITTER_MS * attempt));
    }
  }
}
