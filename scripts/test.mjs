#!/usr/bin/env node
// `npm test`: every test file under test/, on the embedded engine, or on PostgreSQL when
// DATABASE_URL is set (each test file then gets a fresh database of its own on that server).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return find(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

// Process tests start the service as `npm start` does, from the bundle: build it first (a no-op
// when dist/ is current).
const built = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);

const filters = process.argv.slice(2);
const files = find('test').filter((file) => filters.length === 0 || filters.some((f) => file.includes(f))).sort();
const engine = process.env.DATABASE_URL ? 'postgres' : 'pglite';
process.stdout.write(`running ${files.length} test files on ${engine}\n`);
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files],
  { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' } },
);
process.exit(result.status ?? 1);
