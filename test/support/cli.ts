// Running the operator CLI (`npx bolivar …`) as an operator runs it (bin/bolivar.mjs), for the CLI tests.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/bolivar.mjs');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI asynchronously (the test server answers from this same process). The environment is
 * only what is given, plus PATH: no key or URL leaks in from the shell that runs the tests.
 */
export function bolivar(args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** One line on stderr, prefixed `bolivar:`, and no stack trace. */
export function assertOneLine(run: Run, pattern: RegExp): void {
  assert.match(run.stderr, /^bolivar: [^\n]+\n$/, `one line on stderr, got ${JSON.stringify(run.stderr)}`);
  assert.match(run.stderr, pattern);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
}
