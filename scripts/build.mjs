#!/usr/bin/env node
// `npm run build` (and `prestart`): bundles the service into dist/ as plain JavaScript, so that
// `npm start` runs compiled code instead of compiling TypeScript at every start. One bundle per
// entry point (dependencies stay in node_modules), plus the files the code reads at run time, copied
// where the bundled code looks for them (next to the bundle, as next to their module in src/).
//
// It also compiles the SDK (sdk/src, TypeScript) to sdk/dist (ESM .js and .d.ts) with tsc, so that
// `@bolivar/sdk`, linked into node_modules by the npm workspace, imports in plain node.
//
// Skipped when dist/ is newer than every source file, so a restart costs a directory walk, not a
// build. `--force` builds anyway.
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'dist');
const STAMP = path.join(OUT, '.built');
const SDK = path.join(ROOT, 'sdk');
const SDK_OUT = path.join(SDK, 'dist');
// A development dependency: an install without them (--omit=dev) builds the service, not the SDK.
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const ENTRY_POINTS = { main: 'src/main.ts', migrate: 'src/cli/migrate.ts', 'pglite-template': 'src/db/pglite-template.ts' };
/** Read at run time relative to the module that reads them (see src/db/migrate.ts, src/rails/catalogue.ts). */
const ASSETS = [
  ['src/db/migrations', 'migrations'],
  ['src/rails/data', 'data'],
];

function newestMtimeMs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtimeMs(full) : statSync(full).mtimeMs);
  }
  return newest;
}

function upToDate() {
  if (!existsSync(STAMP)) return false;
  if (existsSync(TSC) && !existsSync(path.join(SDK_OUT, 'index.js'))) return false;
  const inputs = Math.max(
    newestMtimeMs(path.join(ROOT, 'src')),
    newestMtimeMs(path.join(SDK, 'src')),
    statSync(path.join(SDK, 'tsconfig.json')).mtimeMs,
    statSync(path.join(SDK, 'package.json')).mtimeMs,
    statSync(path.join(ROOT, 'package-lock.json')).mtimeMs,
    statSync(fileURLToPath(import.meta.url)).mtimeMs,
  );
  return statSync(STAMP).mtimeMs >= inputs;
}

function buildSdk() {
  rmSync(SDK_OUT, { recursive: true, force: true });
  if (!existsSync(TSC)) {
    process.stderr.write('typescript is not installed: sdk/dist not built\n');
    return;
  }
  const tsc = spawnSync(process.execPath, [TSC, '-p', path.join(SDK, 'tsconfig.json')], { cwd: ROOT, stdio: 'inherit' });
  if (tsc.status !== 0) throw new Error(`tsc -p sdk/tsconfig.json failed (exit ${tsc.status})`);
}

if (!process.argv.includes('--force') && upToDate()) process.exit(0);

const startedMs = performance.now();
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRY_POINTS,
  outdir: OUT,
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
});
buildSdk();
for (const [from, to] of ASSETS) cpSync(path.join(ROOT, from), path.join(OUT, to), { recursive: true });
// The embedded engine's template: initdb and every migration, once, here rather than at a first start.
const { writePgliteTemplate } = await import(pathToFileURL(path.join(OUT, 'pglite-template.js')).href);
await writePgliteTemplate(path.join(OUT, 'pglite-template.tar.gz'));
writeFileSync(STAMP, `${new Date().toISOString()}\n`);
process.stderr.write(`built dist/ in ${Math.round(performance.now() - startedMs)} ms\n`);
