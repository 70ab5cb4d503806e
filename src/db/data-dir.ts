import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.ts';

const DATA_DIR_ACCEPTS =
  'a directory this process can create and write, closed to other users (it holds the embedded database with its secrets, and bootstrap.json)';

/** DATA_DIR's own mode: its owner only. The embedded database holds webhook secrets, account numbers and national ids. */
const DATA_DIR_MODE = 0o700;
/** Any permission for the group or other users: refused. */
const OPEN_TO_OTHERS = 0o077;

/**
 * Makes sure DATA_DIR is a writable directory closed to other users, creating it (mode 0700) and its
 * missing parents, or throws a ConfigError naming DATA_DIR and why. Parents are made one at a time:
 * Node's recursive mkdir never returns where a parent refuses new entries with ENOENT (procfs), so a
 * typo would hang the start. The walk up is bounded by the path's depth.
 */
export function ensureDataDir(dataDir: string): string {
  const absolute = path.resolve(dataDir);
  const missing: string[] = [];
  let existing = absolute;
  while (!existsSync(existing)) {
    missing.unshift(existing);
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  const refuse = (why: string): never => {
    throw new ConfigError('DATA_DIR', DATA_DIR_ACCEPTS, dataDir, why);
  };
  if (!statSync(existing).isDirectory()) refuse(`${existing} exists and is not a directory.`);
  for (const directory of missing) {
    try {
      mkdirSync(directory, directory === absolute ? { mode: DATA_DIR_MODE } : undefined);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(directory).isDirectory()) continue; // made by another process meanwhile
      refuse(`Creating ${directory} failed: ${(error as Error).message}.`);
    }
  }
  try {
    accessSync(absolute, constants.W_OK | constants.X_OK);
  } catch (error) {
    refuse(`${absolute} is not writable: ${(error as Error).message}.`);
  }
  // Windows has no such mode bits: its ACLs are the operator's to set.
  const mode = statSync(absolute).mode & 0o777;
  if (process.platform !== 'win32' && (mode & OPEN_TO_OTHERS) !== 0) {
    refuse(
      `${absolute} is open to other users (mode ${mode.toString(8).padStart(4, '0')}). Close it with \`chmod 700 ${absolute}\` (its owner only) and start again.`,
    );
  }
  return absolute;
}
