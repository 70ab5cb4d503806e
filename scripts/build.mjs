#!/usr/bin/env node
// `npm run build` (and `prestart`): bundles the service into dist/ as plain JavaScript, so that
// `npm start` runs compiled code instead of compiling TypeScript at every start. One bundle per
// entry point (dependencies stay in node_modules), plus the files the code reads at run time, copied
// where the bundled code looks for them (next to the bundle, as next to their module in src/).
//
// The operator console (console/, a Preact single-page app) is bundled for the browser into
// dist/console: its script and stylesheet named by their content hash, and the page that loads them.
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
const ENTRY_POINTS = {
  main: 'src/main.ts',
  migrate: 'src/cli/migrate.ts',
  'pglite-template': 'src/db/pglite-template.ts',
};
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
    newestMtimeMs(path.join(ROOT, 'console')),
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
  const tsc = spawnSync(process.execPath, [TSC, '-p', path.join(SDK, 'tsconfig.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error(`tsc -p sdk/tsconfig.json failed (exit ${tsc.status})`);
}

/** The console's page: it loads only the hashed files below, from this origin (the CSP allows no more). */
function consolePage(script, stylesheet) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Bolivar operator console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/${stylesheet}">
<script type="module" src="/console/${script}"></script>
</head>
<body>
<div id="app"><noscript>The operator console needs JavaScript.</noscript></div>
</body>
</html>
`;
}

async function buildConsole() {
  const out = path.join(OUT, 'console');
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: 'console/main.tsx' },
    outdir: path.join(out, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: 'linked',
    metafile: true,
    legalComments: 'linked',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((file) =>
    path.relative(out, path.resolve(ROOT, file)).split(path.sep).join('/'),
  );
  const script = outputs.find((file) => file.endsWith('.js'));
  const stylesheet = outputs.find((file) => file.endsWith('.css'));
  if (!script || !stylesheet) throw new Error(`console build wrote no script or stylesheet: ${outputs.join(', ')}`);
  writeFileSync(path.join(out, 'index.html'), consolePage(script, stylesheet));
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
await buildConsole();
buildSdk();
for (const [from, to] of ASSETS) cpSync(path.join(ROOT, from), path.join(OUT, to), { recursive: true });
// The embedded engine's template: initdb and every migration, once, here rather than at a first start.
const { writePgliteTemplate } = await import(pathToFileURL(path.join(OUT, 'pglite-template.js')).href);
await writePgliteTemplate(path.join(OUT, 'pglite-template.tar.gz'), path.join(OUT, 'pglite-template'));
writeFileSync(STAMP, `${new Date().toISOString()}\n`);
process.stderr.write(`built dist/ in ${Math.round(performance.now() - startedMs)} ms\n`);
