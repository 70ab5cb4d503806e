// The node flags of `npm start`, read from package.json: the bench starts the service exactly as users
// do (the flags change its speed: source maps, the young generation's size).
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const SERVICE_ENTRY = 'dist/main.js';

export function startFlags(root: string): string[] {
  const start =
    (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
      .start ?? '';
  // `exec` only makes npm's shell give way to node, so signals reach the service.
  const words = start
    .trim()
    .replace(/^exec\s+/, '')
    .split(/\s+/);
  if (words[0] !== 'node' || words.at(-1) !== SERVICE_ENTRY)
    throw new Error(`bench: npm start is not "[exec] node … ${SERVICE_ENTRY}": ${start}`);
  return words.slice(1, -1);
}
