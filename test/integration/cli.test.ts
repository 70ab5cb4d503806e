// The operator CLI (`npx bolivar …`), spawned as an operator runs it (bin/bolivar.mjs) against a
// listening test server, and against a port where nothing listens.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { isLocalHost } from '../../src/cli/service.ts';
import { assertOneLine, bolivar, startCliTarget, type CliTarget } from '../support/cli.ts';
import { client, type TestApp } from '../support/harness.ts';

const UNKNOWN_UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

/** An HTTP server on `host` that records each request's headers and answers with `answer`. */
async function recordingServer(
  host: string,
  answer: (res: import('node:http').ServerResponse) => void,
): Promise<{ server: Server; url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createHttpServer((req, res) => {
    seen.push(req.headers);
    answer(res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, url: `http://${host}:${(server.address() as AddressInfo).port}`, seen };
}

/** A port nothing listens on: bound by the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('bolivar CLI', () => {
  let target: CliTarget;
  let t: TestApp;
  let env: Record<string, string>;
  let cwd: string;

  before(async () => {
    target = await startCliTarget();
    ({ t, env, cwd } = target);
  });
  after(async () => {
    await target.close();
  });

  describe('help', () => {
    it('--help lists every command, tenants list included, and exits 0', async () => {
      const run = await bolivar(['--help'], {}, cwd);
      assert.equal(run.code, 0, run.stderr);
      for (const name of [
        'tenants create',
        'tenants list',
        'tenants get',
        'keys issue',
        'keys revoke',
        'fund',
        'close',
        'rates set',
        'webhook set',
        'webhook rotate',
        'limits add',
        'limits list',
        'reconcile',
        'reconciliation list',
        'reconciliation show',
        'migrate',
        'config',
      ]) {
        assert.match(run.stdout, new RegExp(`^  ${name} `, 'm'), name);
      }
      assert.match(run.stdout, /BOLIVAR_URL/);
      assert.equal(run.stderr, '');
    });

    it("a command's --help prints its usage and flags, needs no service and no key", async () => {
      const run = await bolivar(['fund', '--help'], { BOLIVAR_URL: `http://127.0.0.1:${await closedPort()}` }, cwd);
      assert.equal(run.code, 0, run.stderr);
      assert.match(
        run.stdout,
        /^Usage: bolivar fund --tenant ID --mode test\|live --amount MINOR \[--asset ASSET\] \[--idempotency-key KEY\]$/m,
      );
      for (const flag of ['--tenant', '--mode', '--amount', '--asset', '--idempotency-key', '--help'])
        assert.match(run.stdout, new RegExp(`^  ${flag}\\b`, 'm'), flag);
      assert.doesNotMatch(run.stdout, /--per-tx/, 'only the flags of fund');
      assert.equal(run.stderr, '');

      const list = await bolivar(['tenants', 'list', '-h'], {}, cwd);
      assert.equal(list.code, 0);
      assert.match(list.stdout, /^Usage: bolivar tenants list \[--limit N\] \[--cursor CURSOR\] \[--all\]$/m);

      const group = await bolivar(['tenants', '--help'], {}, cwd);
      assert.equal(group.code, 0);
      assert.match(group.stdout, /tenants create/);
      assert.match(group.stdout, /tenants list/);
      assert.doesNotMatch(group.stdout, /limits add/);
    });

    it('usage mistakes are one line naming the fix, exit 2, and send nothing', async () => {
      const cases: Array<[string[], RegExp]> = [
        [['fund', '--tenant', UNKNOWN_UUID], /fund: --mode, --amount are required; see "bolivar fund --help"/],
        [
          ['fund', '--tenant', UNKNOWN_UUID, '--mode', 'test', '--amount', '5', '--amout', '6'],
          /Unknown option '--amout'.*bolivar fund --help/,
        ],
        [
          ['fund', '--tenant', UNKNOWN_UUID, '--mode', 'test', '--amount', '1.5'],
          /--amount must be a non-negative integer/,
        ],
        [['tenants'], /"tenants" needs a subcommand: tenants create, tenants list, tenants get/],
        [['tenant', 'list'], /unknown command "tenant list"; see "bolivar --help"/],
      ];
      for (const [args, pattern] of cases) {
        const run = await bolivar(args, env, cwd);
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
        assertOneLine(run, pattern);
        assert.equal(run.stdout, '');
      }
      assert.deepEqual(
        (await client(t.app, t.platformKey).get('/v1/admin/tenants')).body.data,
        [],
        'nothing was created',
      );
    });
  });

  describe('when the service cannot be reached', () => {
    it('says which URL was tried and how to set it, in one line; exit 1', async () => {
      const port = await closedPort();
      const url = `http://127.0.0.1:${port}`;
      const run = await bolivar(['tenants', 'list'], { BOLIVAR_URL: url, PLATFORM_API_KEY: t.platformKey }, cwd);
      assert.equal(run.code, 1);
      assertOneLine(
        run,
        new RegExp(
          `^bolivar: cannot reach the service at ${url.replace(/\./g, '\\.')} \\(BOLIVAR_URL\\): connection refused\\. .*set BOLIVAR_URL`,
        ),
      );
      assert.equal(run.stdout, '');
    });

    it('without BOLIVAR_URL it names the default it tried (http://localhost:$PORT)', async () => {
      const port = await closedPort();
      const run = await bolivar(
        ['fund', '--tenant', UNKNOWN_UUID, '--mode', 'test', '--amount', '1'],
        { PORT: String(port), PLATFORM_API_KEY: t.platformKey },
        cwd,
      );
      assert.equal(run.code, 1);
      assertOneLine(
        run,
        new RegExp(
          `cannot reach the service at http://localhost:${port} \\(the default; BOLIVAR_URL is not set\\): connection refused`,
        ),
      );
    });

    it('a BOLIVAR_URL that is not a URL is a usage mistake', async () => {
      const run = await bolivar(
        ['tenants', 'list'],
        { BOLIVAR_URL: 'localhost:3000', PLATFORM_API_KEY: t.platformKey },
        cwd,
      );
      assert.equal(run.code, 2);
      assertOneLine(run, /BOLIVAR_URL="localhost:3000" is not an http:\/\/ or https:\/\/ URL/);
    });
  });

  describe('the platform key goes to BOLIVAR_URL only', () => {
    const emptyList = (res: import('node:http').ServerResponse) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[],"has_more":false,"next_cursor":null}');

    it('a redirect is refused, not followed: the target never sees the key; exit 1 naming the target', async () => {
      const target = await recordingServer('127.0.0.1', emptyList);
      const moved = await recordingServer('127.0.0.1', (res) =>
        res.writeHead(302, { location: `${target.url}/v1/admin/tenants` }).end(),
      );
      try {
        for (const args of [
          ['tenants', 'list'],
          ['fund', '--tenant', UNKNOWN_UUID, '--mode', 'test', '--amount', '1'],
        ]) {
          const run = await bolivar(args, { BOLIVAR_URL: moved.url, PLATFORM_API_KEY: t.platformKey }, cwd);
          assert.equal(run.code, 1, run.stderr);
          assertOneLine(
            run,
            new RegExp(
              `answered with a redirect \\(HTTP 302 to ${target.url.replace(/\./g, '\\.')}/v1/admin/tenants\\), which the CLI does not follow`,
            ),
          );
          assert.equal(run.stdout, '');
        }
        assert.equal(moved.seen.length, 2);
        assert.deepEqual(target.seen, [], 'the redirect target received nothing');
      } finally {
        target.server.close();
        moved.server.close();
      }
    });

    it('says nothing on plain http to this machine', async () => {
      const run = await bolivar(['tenants', 'list'], env, cwd);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, '');
      const port = new URL(env.BOLIVAR_URL!).port;
      const named = await bolivar(['tenants', 'list'], { ...env, BOLIVAR_URL: `http://localhost:${port}` }, cwd);
      assert.equal(named.code, 0, named.stderr);
      assert.equal(named.stderr, '');
    });

    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
    it(
      'warns once on stderr on plain http to another host, and still runs',
      { skip: external === undefined ? 'this machine has no non-loopback IPv4 address' : false },
      async () => {
        const remote = await recordingServer(external!, emptyList);
        try {
          const run = await bolivar(
            ['tenants', 'list'],
            { BOLIVAR_URL: remote.url, PLATFORM_API_KEY: t.platformKey },
            cwd,
          );
          assert.equal(run.code, 0, run.stderr);
          assert.equal(
            run.stderr,
            `bolivar: warning: BOLIVAR_URL is plain http to ${new URL(remote.url).host}, not this machine: the platform key crosses the network unencrypted; use https://\n`,
          );
          assert.deepEqual(JSON.parse(run.stdout), { data: [], has_more: false, next_cursor: null });
        } finally {
          remote.server.close();
        }
      },
    );

    it('this machine is localhost, *.localhost and the loopback addresses, nothing else', () => {
      for (const host of [
        'localhost',
        'LOCALHOST',
        'api.localhost',
        'localhost.',
        '127.0.0.1',
        '127.8.9.10',
        '[::1]',
        '::1',
        '[::ffff:127.0.0.1]',
      ])
        assert.equal(isLocalHost(host), true, host);
      for (const host of [
        'example.com',
        'localhost.example.com',
        '10.0.0.5',
        '192.168.1.2',
        '0.0.0.0',
        '[::]',
        '[fe80::1]',
        '169.254.169.254',
        'mylocalhost',
      ])
        assert.equal(isLocalHost(host), false, host);
    });
  });
});
