// A start while PostgreSQL is down waits for it (DB_CONNECT_WAIT_S), logging each attempt, instead of
// exiting at the first refused connection; past the bound it exits naming the database, never its
// password. The first case needs a private PostgreSQL cluster it can stop and start; the bound needs
// no server at all.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ENGINE } from '../support/harness.ts';
import { PrivatePostgres, privatePostgresAvailable } from '../support/private-postgres.ts';
import { freePort, runToExit, SERVICE_ARGS } from '../support/process.ts';
import { until } from '../support/until.ts';

/** Bound of each wait of these tests: the log line, readiness once the server is back, the exit. */
const WAIT_MS = 30_000;
const POLL_MS = 100;
const PASSWORD = 'never-printed-pw';

const WAITS = { timeoutMs: WAIT_MS, intervalMs: POLL_MS };

const clusterSkip =
  ENGINE !== 'postgres'
    ? 'PostgreSQL only (DATABASE_URL): the embedded engine has no server to wait for'
    : (privatePostgresAvailable() ?? false);

describe('a start while PostgreSQL is stopped', { skip: clusterSkip }, () => {
  it('waits, logging each attempt, and becomes ready once the cluster starts', { timeout: 120_000 }, async () => {
    const server = await PrivatePostgres.start();
    try {
      await server.createDatabase('bds_wait');
      await server.halt();
      const port = await freePort();
      // Trust authentication ignores the password: it is there to show that it is never printed.
      const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${server.port}/bds_wait`;
      const child = spawn(process.execPath, SERVICE_ARGS, {
        env: {
          ...process.env,
          DATABASE_URL: url,
          DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-wait-')),
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'warn',
          DB_CONNECT_WAIT_S: '90',
        },
      });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      try {
        const waiting = () =>
          output
            .split('\n')
            .filter((line) => line.includes('"waiting for PostgreSQL"'))
            .map((line) => JSON.parse(line));
        await until('two "waiting for PostgreSQL" lines', () => (waiting().length >= 2 ? true : undefined), WAITS);
        assert.equal(child.exitCode, null, `the service exited:\n${output}`);
        const [first, second] = waiting();
        assert.equal(first.database, `127.0.0.1:${server.port}/bds_wait`);
        assert.deepEqual([first.attempt, second.attempt], [1, 2]);
        assert.ok(second.retry_in_ms > first.retry_in_ms, 'the wait doubles');
        assert.match(first.error, /ECONNREFUSED/);

        await server.resume();
        await until(
          'ready once the cluster runs',
          async () => {
            const answer = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
            return answer?.status === 200 ? true : undefined;
          },
          WAITS,
        );
        assert.equal(child.exitCode, null);
        assert.ok(!output.includes(PASSWORD), 'the password is never printed');
        const me = await fetch(`http://127.0.0.1:${port}/v1/tenant/me`);
        assert.equal(me.status, 401, 'the API serves');
      } finally {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        if (child.exitCode === null) child.kill('SIGTERM');
        await exited;
      }
      assert.equal(child.exitCode, 0, output);
    } finally {
      await server.stop();
    }
  });
});

describe('a start when PostgreSQL never answers', () => {
  it(
    'gives up after DB_CONNECT_WAIT_S with exit code 69 and a message naming the database, not its password',
    { timeout: 60_000 },
    async () => {
      const closed = await freePort();
      const started = Date.now();
      const { code, output } = await runToExit({
        DATABASE_URL: `postgres://bds:${PASSWORD}@127.0.0.1:${closed}/bds_nowhere`,
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-nowhere-')),
        PORT: '0',
        LOG_LEVEL: 'warn',
        DB_CONNECT_WAIT_S: '2',
      });
      const tookMs = Date.now() - started;
      assert.equal(code, 69, output);
      assert.match(
        output,
        new RegExp(
          `Failed to start: PostgreSQL at 127\\.0\\.0\\.1:${closed}/bds_nowhere did not answer within 2 s \\(DB_CONNECT_WAIT_S=2\\); last error: .*ECONNREFUSED`,
        ),
      );
      assert.ok(output.split('\n').filter((line) => line.includes('"waiting for PostgreSQL"')).length >= 2, output);
      assert.ok(!output.includes(PASSWORD), 'the password is never printed');
      assert.ok(tookMs >= 2_000, `it waited (${tookMs} ms)`);
    },
  );

  it(
    'does not wait for a database that does not exist: that will not change',
    { skip: ENGINE !== 'postgres' ? 'needs the PostgreSQL server of DATABASE_URL' : false, timeout: 60_000 },
    async () => {
      const url = new URL(process.env.DATABASE_URL!);
      url.pathname = '/bds_no_such_database';
      const started = Date.now();
      const { code, output } = await runToExit({
        DATABASE_URL: url.toString(),
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-nodb-')),
        PORT: '0',
        LOG_LEVEL: 'warn',
        DB_CONNECT_WAIT_S: '60',
      });
      assert.equal(code, 1, output);
      assert.match(output, /Failed to start: database "bds_no_such_database" does not exist/);
      assert.ok(Date.now() - started < 30_000, 'no waiting');
      assert.doesNotMatch(output, /waiting for PostgreSQL/);
    },
  );
});
