import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { freePort, runToExit, startService } from '../support/process.ts';
import { until } from '../support/until.ts';

/** How long the service may take to close its port once npm, its parent, has exited. */
const ORPHAN_EXIT_BOUND_MS = 10_000;
/** How long a start refused for its configuration may take: a refusal, never a hang. */
const REFUSAL_BOUND_MS = 20_000;

describe(`the service as a process (npm start) on ${ENGINE}`, () => {
  it('starts on an empty database, prints a working key and curl, and stops cleanly on SIGTERM', async () => {
    // A DATA_DIR that does not exist yet: the service creates it, closed to other users.
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'bds-start-')), 'data');
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const port = await freePort();
    const env: Record<string, string> = { DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '' };
    const service = await startService(env, port);
    try {
      assert.ok(service.readyMs < 20_000, `ready in ${service.readyMs} ms`);
      assert.equal(statSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR is created 0700');
      const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
      assert.match(service.output(), new RegExp(saved.apiKey));
      const curl = saved.curl.replace('http://localhost:', 'http://127.0.0.1:').replace(':3000/', `:${port}/`);
      assert.match(service.output(), /curl -s http:\/\/localhost:\d+\/v1\/tenant\/me -H 'x-api-key: bsk_test_/);
      const me = JSON.parse(execSync(curl, { encoding: 'utf8' }));
      assert.equal(me.name, 'Sandbox');
      assert.equal(me.mode, 'test');
      assert.doesNotMatch(
        service
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .join('\n'),
        new RegExp(saved.apiKey),
        'the key never reaches the JSON logs',
      );

      // The operator CLI drives the admin API of the running service with the saved platform key.
      const cli = (args: string) =>
        JSON.parse(
          execSync(`node bin/bolivar.mjs ${args}`, {
            encoding: 'utf8',
            env: { ...process.env, DATA_DIR: dataDir, BOLIVAR_URL: service.baseUrl },
          }),
        );
      const tenant = cli('tenants create --name "CLI Remesas" --fee-bps 80');
      assert.equal(tenant.name, 'CLI Remesas');
      assert.equal(tenant.feeBps, 80);
      // The saved platform key is never printed, and administers test mode only.
      assert.ok(!service.output().includes(saved.platformApiKey), 'the platform key is not in the output');
      assert.throws(
        () =>
          execSync(`node bin/bolivar.mjs keys issue --tenant ${tenant.id} --mode live`, {
            encoding: 'utf8',
            stdio: 'pipe',
            env: { ...process.env, DATA_DIR: dataDir, BOLIVAR_URL: service.baseUrl },
          }),
        (error: { stderr?: string }) => /403 bootstrap_key_test_only: .*set PLATFORM_API_KEY/.test(error.stderr ?? ''),
      );
      const key = cli(`keys issue --tenant ${tenant.id} --mode test --scopes payments:read,treasury:read`);
      assert.match(key.key, /^bsk_test_/);
      const funded = cli(`fund --tenant ${tenant.id} --mode test --amount 5000000`);
      assert.equal(funded.prefundingBalance, '5000000');
      assert.deepEqual(cli(`keys revoke --key-id ${key.id}`), { id: key.id, revoked: true });
    } finally {
      const code = await service.stop('SIGTERM');
      assert.equal(code, 0, service.output());
    }

    // A second start on the same database does not bootstrap again.
    const again = await startService(env, port);
    try {
      assert.doesNotMatch(again.output(), /First start/);
    } finally {
      await again.stop();
      await database?.drop();
    }
  });

  it('stops when its supervisor sends SIGTERM to npm itself, leaving no orphan serving the port', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-npm-start-'));
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const port = await freePort();
    const service = await startService(
      { DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '' },
      port,
      30_000,
      'npm start',
    );
    try {
      assert.equal((await fetch(`${service.baseUrl}/health/live`)).status, 200);
      const code = await service.stop('SIGTERM');
      assert.equal(code, 0, service.output());
      // npm has exited; the service it started must be gone too, not still answering on the port.
      await until(
        `nothing answering on port ${port} after npm exited`,
        async () =>
          !(await fetch(`${service.baseUrl}/health/live`).then(
            () => true,
            () => false,
          )),
        {
          timeoutMs: ORPHAN_EXIT_BOUND_MS,
          intervalMs: 100,
        },
      );
    } finally {
      // Whatever npm left behind, so a failure here cannot keep the test run waiting.
      try {
        process.kill(-service.child.pid!, 'SIGKILL');
      } catch {
        // the group is already gone
      }
      await database?.drop();
    }
  });

  it('refuses to start on a bad configuration value, naming the variable', async () => {
    const result = await runToExit({ PORT: 'abc' });
    assert.equal(result.code, 78);
    assert.match(result.output, /PORT accepts an integer/);
  });

  it('refuses a HOST it cannot listen on and a DATA_DIR it cannot use, naming the variable, without hanging', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'bds-not-a-dir-')), 'file');
    writeFileSync(file, 'not a directory');
    const embedded = { DATABASE_URL: '', PORT: '0' };
    const readable = mkdtempSync(path.join(tmpdir(), 'bds-readable-'));
    chmodSync(readable, 0o755);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ HOST: 'not_a_host' }, /Invalid configuration: HOST="not_a_host"; HOST accepts an IP address/],
      [{ HOST: 'nowhere.invalid' }, /Invalid configuration: HOST="nowhere.invalid".*Listening failed: getaddrinfo/],
      [{ DATA_DIR: file }, /Invalid configuration: DATA_DIR=".*"; .*exists and is not a directory/],
      [{ DATA_DIR: path.join(file, 'below') }, /Invalid configuration: DATA_DIR=.*exists and is not a directory/],
      // procfs answers mkdir with ENOENT, on which Node's recursive mkdir loops for ever.
      [
        { DATA_DIR: '/proc/bds-no-such-dir' },
        /Invalid configuration: DATA_DIR="\/proc\/bds-no-such-dir".*Creating \/proc\/bds-no-such-dir failed: ENOENT/,
      ],
      // It holds the embedded database and bootstrap.json: closed to other users, or refused.
      [{ DATA_DIR: readable }, /Invalid configuration: DATA_DIR=".*".*is open to other users \(mode 0755\).*chmod 700/],
    ];
    for (const [env, message] of cases) {
      const result = await runToExit(
        { DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-cfg-')), ...embedded, ...env },
        undefined,
        REFUSAL_BOUND_MS,
      );
      assert.equal(result.code, 78, `${JSON.stringify(env)}: ${result.output}`);
      assert.match(result.output, message);
    }
  });
});
