// Running the operator CLI (`npx bolivar …`) as an operator runs it (bin/bolivar.mjs), for the CLI tests.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestApp, type TestApp } from './harness.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
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
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** One line on stderr, prefixed `bolivar:`, and no stack trace. */
export function assertOneLine(run: Run, pattern: RegExp): void {
  assert.match(run.stderr, /^bolivar: [^\n]+\n$/, `one line on stderr, got ${JSON.stringify(run.stderr)}`);
  assert.match(run.stderr, pattern);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
}

/** A test service listening on a free port, the CLI's environment for it, and an empty working folder. */
export interface CliTarget {
  t: TestApp;
  env: Record<string, string>;
  /** Empty, so that no data/bootstrap.json of the repository is read. */
  cwd: string;
  close(): Promise<void>;
}

export async function startCliTarget(): Promise<CliTarget> {
  const cwd = mkdtempSync(path.join(tmpdir(), 'bolivar-cli-'));
  const t = await startTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as { port: number };
  return {
    t,
    env: { BOLIVAR_URL: `http://127.0.0.1:${port}`, PLATFORM_API_KEY: t.platformKey },
    cwd,
    async close() {
      await t.close();
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}
