#!/usr/bin/env node
// `npm test`: every test file under test/, on the embedded engine, or on PostgreSQL when
// DATABASE_URL is set (each test file then gets a fresh database of its own on that server).
//
// Two files run at a time; the suite lasts as long as the busier of the two workers. The files that
// take longest start first, the many short ones last, where they fill in while the other worker ends
// its last long file: started last in name order, a long file (process tests come after most others)
// leaves one worker idle for most of its run. How long a file takes is what it took on the last run
// here on this engine (.tmp/test-durations-<engine>.json), else a guess by its folder.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return find(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

/** A file never timed here: roughly what files of its folder take (a browser, processes, many requests, one module). */
const GUESS_MS_BY_FOLDER = {
  browser: 60_000,
  process: 60_000,
  fuzz: 60_000,
  integration: 20_000,
  api: 10_000,
  unit: 2_000,
};
const GUESS_MS_OTHERWISE = 20_000;
/** The slowest files named after the run, for whoever wonders where the time went. */
const SLOWEST_SHOWN = 15;

// Process tests start the service as `npm start` does, from the bundle: build it first (a no-op
// when dist/ is current).
const built = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);

const filters = process.argv.slice(2);
const engine = process.env.DATABASE_URL ? 'postgres' : 'pglite';
const record = path.join('.tmp', `test-durations-${engine}.json`);
const known = existsSync(record) ? JSON.parse(readFileSync(record, 'utf8')) : {};
const expectedMs = (file) => known[file] ?? GUESS_MS_BY_FOLDER[file.split(path.sep)[1]] ?? GUESS_MS_OTHERWISE;
const selected = find('test').filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
// A whole run on PostgreSQL leaves out the unit test files that never name a database (no test
// harness, no engine, no DATABASE_URL): they prove the same on either engine, and the embedded-engine
// run (CI's first) ran them. Named in a filter, they run.
const NAMES_A_DATABASE = /DATABASE_URL|ENGINE|harness|process\.ts|private-postgres|service-cluster|pglite|postgres/i;
const engineFree = (file) =>
  file.startsWith(path.join('test', 'unit') + path.sep) && !NAMES_A_DATABASE.test(readFileSync(file, 'utf8'));
const leftOut = engine === 'postgres' && filters.length === 0 ? selected.filter(engineFree) : [];
const files = selected
  .filter((file) => !leftOut.includes(file))
  .sort((a, b) => expectedMs(b) - expectedMs(a) || a.localeCompare(b));
process.stdout.write(
  `running ${files.length} test files on ${engine}${leftOut.length ? ` (not the ${leftOut.length} unit test files that open no database: they ran on the embedded engine)` : ''}\n`,
);

mkdirSync('.tmp', { recursive: true });
const durations = path.join('.tmp', `test-durations-${engine}-${process.pid}.jsonl`);
rmSync(durations, { force: true });
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', 'scripts/test-files.mjs', '--durations', durations, ...files],
  {
    stdio: 'inherit',
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
);

const measured = existsSync(durations)
  ? readFileSync(durations, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
  : [];
rmSync(durations, { force: true });
if (measured.length > 0) {
  const all = find('test');
  const kept = Object.fromEntries(Object.entries(known).filter(([file]) => all.includes(file)));
  writeFileSync(
    record,
    `${JSON.stringify({ ...kept, ...Object.fromEntries(measured.map(({ file, ms }) => [file, ms])) }, null, 2)}\n`,
  );
  const slowest = measured.sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_SHOWN);
  process.stdout.write(
    `\nslowest test files on ${engine} (seconds):\n${slowest.map(({ file, ms }) => `${(ms / 1000).toFixed(1).padStart(7)}  ${file}`).join('\n')}\n`,
  );
}
process.exit(result.status ?? 1);
