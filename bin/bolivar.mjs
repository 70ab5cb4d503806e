#!/usr/bin/env node
// `npx bolivar …`: the operator CLI. It runs src/cli/main.ts through tsx (no build step).
// tsx is resolved from this package, not from the working folder, so the CLI runs from any folder.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const result = spawnSync(
  process.execPath,
  ['--import', import.meta.resolve('tsx'), path.join(root, 'src/cli/main.ts'), ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    cwd: process.cwd(),
  },
);
process.exit(result.status ?? 1);
