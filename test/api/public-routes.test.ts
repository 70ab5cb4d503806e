// What needs no key is still not free: /metrics is served only with METRICS_TOKEN (or on the internal
// METRICS_PORT, see test/integration/metrics-port.test.ts), the public routes have a per-address
// limit, and /health/ready asks the database at most once a second.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { READINESS_CACHE_MS, Readiness } from '../../src/http/readiness.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  createTestDatabase,
  getFrom,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts';
import { metricsHeaders, TEST_METRICS_TOKEN } from '../support/metrics.ts';

const get = (t: TestApp, url: string, headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') =>
  getFrom(t.app, remoteAddress, url, headers);

describe('/metrics is not public', () => {
  let withToken: TestApp;
  let withoutToken: TestApp;
  before(async () => {
    withToken = await startTestApp();
    withoutToken = await startTestApp({ env: { METRICS_TOKEN: '' } });
  });
  after(async () => {
    await withToken.close();
    await withoutToken.close();
  });

  it('without METRICS_TOKEN the API port answers 404 in the envelope, saying how to turn it on', async () => {
    for (const headers of [{}, metricsHeaders]) {
      const answer = await get(withoutToken, '/metrics', headers);
      assertEnvelope(assert, answer, 404, 'route_not_found');
      assert.match(
        answer.body.error.message,
        /set METRICS_TOKEN .*Authorization: Bearer <METRICS_TOKEN>.*or set METRICS_PORT/,
      );
      assert.doesNotMatch(answer.raw, /bolivar_|http_requests_total/);
    }
  });

  it('with METRICS_TOKEN it needs `Authorization: Bearer <token>`: else 401 metrics_token_invalid with WWW-Authenticate', async () => {
    const refused: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong-token-0123456789' },
      { authorization: `Bearer ${TEST_METRICS_TOKEN}x` },
      { authorization: `Basic ${Buffer.from(`x:${TEST_METRICS_TOKEN}`).toString('base64')}` },
      { authorization: TEST_METRICS_TOKEN },
      { 'x-api-key': TEST_METRICS_TOKEN },
      { authorization: 'Bearer ' },
    ];
    for (const headers of refused) {
      const answer = await get(withToken, '/metrics', headers);
      assertEnvelope(assert, answer, 401, 'metrics_token_invalid');
      assert.equal(answer.headers['www-authenticate'], 'Bearer realm="metrics"', JSON.stringify(headers));
      assert.doesNotMatch(answer.raw, /bolivar_|http_requests_total/);
    }
    for (const authorization of [`Bearer ${TEST_METRICS_TOKEN}`, `bearer ${TEST_METRICS_TOKEN}`]) {
      const answer = await get(withToken, '/metrics', { authorization });
      assert.equal(answer.status, 200, answer.raw);
      assert.match(String(answer.headers['content-type']), /^text\/plain/);
      assert.match(answer.raw, /^# HELP /m);
    }
  });

  it('a ROLE=worker process answers the same on its port', async () => {
    const database: TestDatabase = await createTestDatabase();
    try {
      for (const [env, status] of [
        [{}, 404],
        [{ METRICS_TOKEN: TEST_METRICS_TOKEN }, 200],
      ] as const) {
        const { app } = await buildApp({
          config: loadConfig({ LOG_LEVEL: 'silent', ...env }),
          db: database.db,
          surface: 'operations',
        });
        await app.ready();
        const answer = await app.inject({ method: 'GET', url: '/metrics', headers: metricsHeaders });
        assert.equal(answer.statusCode, status, answer.body);
        await app.close();
      }
    } finally {
      await database.drop();
    }
  });
});

describe('routes that need no key are limited per client address (PUBLIC_RATE_LIMIT_RPS)', () => {
  const MAX = 5;
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { PUBLIC_RATE_LIMIT_RPS: String(MAX) } });
  });
  after(async () => {
    await t.close();
  });

  it(`at most ${MAX} a second from one address, over all of them together; 429 in the envelope with Retry-After`, async () => {
    const { key } = await createTenant(t);
    const from = '198.51.100.7';
    const urls = ['/health/live', '/health/ready', '/v1/openapi.json', '/docs/', '/metrics'];
    const started = performance.now();
    const answers = [];
    for (let i = 0; i < 3 * MAX; i += 1) answers.push(await get(t, urls[i % urls.length]!, metricsHeaders, from));
    const elapsedMs = performance.now() - started;
    const limited = answers.filter((a) => a.status === 429);
    // All within one window (the usual case), exactly MAX pass; were the machine to stall past it, at
    // least one more window's worth would.
    if (elapsedMs < 1000) assert.equal(answers.length - limited.length, MAX, answers.map((a) => a.status).join(','));
    assert.ok(limited.length >= MAX, answers.map((a) => a.status).join(','));
    for (const answer of limited) {
      assertEnvelope(assert, answer, 429, 'rate_limited');
      assert.equal(answer.body.error.type, 'rate_limit_error');
      assert.deepEqual(answer.body.error.meta, { limit_per_second: MAX });
      assert.ok(Number(answer.headers['retry-after']) >= 1, 'Retry-After in seconds');
      assert.equal(answer.headers['x-ratelimit-limit'], undefined, 'no per-key budget headers on a public route');
    }
    // Another address has its own budget; a keyed call from the limited one is not a public one.
    assert.equal((await get(t, '/health/live', {}, '198.51.100.8')).status, 200);
    assert.equal((await get(t, '/v1/tenant/me', { 'x-api-key': key }, from)).status, 200);
    const sink = await t.app.inject({
      method: 'POST',
      url: '/v1/sandbox/webhooks/sink',
      remoteAddress: from,
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    if (performance.now() - started < 1000) assert.equal(sink.statusCode, 429, 'the sandbox sink shares the budget');
  });

  it('PUBLIC_RATE_LIMIT_RPS=0 turns it off', async () => {
    const open = await startTestApp({ env: { PUBLIC_RATE_LIMIT_RPS: '0' } });
    try {
      for (let i = 0; i < 3 * MAX; i += 1)
        assert.equal((await get(open, '/health/live', {}, '198.51.100.9')).status, 200);
    } finally {
      await open.close();
    }
  });
});

describe('/health/ready asks the database at most once a second', () => {
  it('answers many probes from one query, caches a failure too, and asks again once the answer is a second old', async () => {
    let now = 0;
    let queries = 0;
    let up = true;
    const readiness = new Readiness(
      {
        async query() {
          queries += 1;
          await new Promise((resolve) => setImmediate(resolve));
          if (!up) throw new Error('connection refused');
          return { rows: [], rowCount: 1 };
        },
      } as never,
      () => now,
    );
    assert.deepEqual(await Promise.all(Array.from({ length: 50 }, () => readiness.ready())), Array(50).fill(true));
    assert.equal(queries, 1, 'concurrent probes share one query');
    up = false;
    now += READINESS_CACHE_MS - 1;
    assert.equal(await readiness.ready(), true, 'the cached answer');
    assert.equal(queries, 1);
    now += 1;
    assert.equal(await readiness.ready(), false);
    assert.equal(await readiness.ready(), false, 'a failure is cached too');
    assert.equal(queries, 2);
    up = true;
    now += READINESS_CACHE_MS;
    assert.equal(await readiness.ready(), true);
    assert.equal(queries, 3);
  });

  it('through the route: a burst of probes costs one query', async () => {
    const t = await startTestApp({ env: { PUBLIC_RATE_LIMIT_RPS: '0' } });
    try {
      let probes = 0;
      const query = t.db.query.bind(t.db);
      t.db.query = ((sql: string, params?: readonly unknown[]) => {
        if (sql === 'SELECT 1') probes += 1;
        return query(sql, params);
      }) as typeof t.db.query;
      const started = performance.now();
      const answers = await Promise.all(Array.from({ length: 40 }, () => client(t.app).get('/health/ready')));
      assert.ok(answers.every((a) => a.status === 200 && a.body.status === 'ok'));
      if (performance.now() - started < READINESS_CACHE_MS) assert.equal(probes, 1);
      assert.ok(probes >= 1);
    } finally {
      await t.close();
    }
  });
});
