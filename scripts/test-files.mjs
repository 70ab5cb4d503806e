#!/usr/bin/env node
// Runs the test files it is given, in that order, two at a time (started by scripts/test.mjs, with
// tsx loaded, which the test processes inherit). `node --test` itself sorts its files by name; this
// keeps the order scripts/test.mjs chose. Besides the usual report on stdout, it appends each file's
// wall time as a JSON line {"file", "ms"} to the file named by --durations.
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

/** Test files running at once: the CI machine has two cores. */
const FILE_CONCURRENCY = 2;
/**
 * Bound of one test file as a whole (in Node 20 the runner's timeout, like --test-timeout, applies to
 * each file, not to each test in it; a test may set a shorter one of its own). The longest files take
 * 40 to 90 s on a busy CI machine: twice that before a file is cancelled.
 */
const FILE_TIMEOUT_MS = 240_000;

const [flag, durationsFile, ...files] = process.argv.slice(2);
if (flag !== '--durations' || !durationsFile)
  throw new Error('usage: test-files.mjs --durations <file.jsonl> <test files…>');

const stream = run({
  files: files.map((file) => path.resolve(file)),
  concurrency: FILE_CONCURRENCY,
  timeout: FILE_TIMEOUT_MS,
});
stream.on('test:fail', () => (process.exitCode = 1));
stream.on('test:complete', (data) => {
  // A file's own entry (named by its path), not one of its tests.
  if (data.file && data.name === data.file && data.details?.duration_ms !== undefined) {
    appendFileSync(
      durationsFile,
      `${JSON.stringify({ file: path.relative(process.cwd(), data.file), ms: Math.round(data.details.duration_ms) })}\n`,
    );
  }
});
// What `node --test` prints: spec on a terminal, TAP otherwise.
(process.stdout.isTTY ? stream.compose(new spec()) : stream.compose(tap)).pipe(process.stdout);
