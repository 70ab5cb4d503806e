/** Rows deleted per statement, at most: one statement never holds its locks for long. */
const PURGE_BATCH_MAX = 1000;
/** Statements per pass, at most: a large backlog is worked off over several passes. */
const PURGE_STATEMENTS_PER_PASS_MAX = 10;

/**
 * One bounded pass of a purge: `deleteBatch(max)` deletes at most `max` rows and says how many it
 * deleted. True when the pass stopped at its bound (more rows are probably waiting).
 */
export async function purgeInBatches(deleteBatch: (max: number) => Promise<number>): Promise<boolean> {
  for (let i = 0; i < PURGE_STATEMENTS_PER_PASS_MAX; i += 1) {
    if ((await deleteBatch(PURGE_BATCH_MAX)) < PURGE_BATCH_MAX) return false;
  }
  return true;
}
