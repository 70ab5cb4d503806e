// Writes the OpenAPI document generated from the route schemas to openapi.json.
// `--check` fails when the committed file differs from what the code generates (drift).
import { readFileSync, writeFileSync } from 'node:fs';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { PgliteDatabase } from '../src/db/pglite.ts';

const db = await PgliteDatabase.open(undefined);
const { app } = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), db });
await app.ready();
const document = JSON.stringify(app.swagger(), null, 2) + '\n';
await app.close();
await db.close();

const file = 'openapi.json';
if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(file, 'utf8');
  } catch {
    // missing counts as drift
  }
  if (committed !== document) {
    process.stderr.write('openapi.json is out of date: run `npm run openapi` and commit the result.\n');
    process.exit(1);
  }
  process.stdout.write('openapi.json matches the code\n');
} else {
  writeFileSync(file, document);
  process.stdout.write(`wrote ${file}\n`);
}
