#!/usr/bin/env node
// `npm run sdk:generate`: the SDK's types, generated from the committed openapi.json into
// sdk/src/generated/ (committed, so the SDK builds without the generator). `--check` generates into
// a temporary folder and fails when the committed files differ: run by `npm run lint:openapi`, so a
// schema change that is not carried into the SDK's types does not go unnoticed.
import { createClient } from '@hey-api/openapi-ts';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGET = path.join(ROOT, 'sdk/src/generated');

async function generate(into) {
  await createClient({
    input: path.join(ROOT, 'openapi.json'),
    // Types only: the hand-written client in sdk/src does the requests. `.js` specifiers so that tsc
    // (NodeNext) emits imports plain node resolves.
    output: { path: into, importFileExtension: '.js' },
    plugins: ['@hey-api/typescript'],
    logs: { level: 'silent' },
  });
}

function filesOf(dir) {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((name) => [name, readFileSync(path.join(dir, name), 'utf8')]),
  );
}

if (process.argv.includes('--check')) {
  const scratch = mkdtempSync(path.join(tmpdir(), 'bolivar-sdk-types-'));
  try {
    await generate(scratch);
    const fresh = filesOf(scratch);
    const committed = filesOf(TARGET);
    const stale = [...new Set([...Object.keys(fresh), ...Object.keys(committed)])].filter(
      (name) => fresh[name] !== committed[name],
    );
    if (stale.length > 0) {
      process.stderr.write(`sdk/src/generated is stale (${stale.join(', ')}): run npm run sdk:generate\n`);
      process.exit(1);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
} else {
  rmSync(TARGET, { recursive: true, force: true });
  await generate(TARGET);
  process.stderr.write('wrote sdk/src/generated\n');
}
