import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.ts';

const DATA_DIR_ACCEPTS = 'a directory this process can create and write (it holds the embedded database and bootstrap.json)';

/**
 * Makes sure DATA_DIR is a writable directory, creating it and its missing parents, or throws a
 * ConfigError naming DATA_DIR and why. Parents are made one at a time: Node's recursive mkdir never
 * returns where a parent refuses new entries with ENOENT (procfs), so a typo would hang the start.
 * The walk up is bounded by the path's depth.
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
      mkdirSync(directory);
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
  return absolute;
}
