// A ROLE=worker process serves no API, but answers the health checks and /metrics on its PORT, like
// every role, and its startup line says what it listens on.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/open.ts';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import { freePort, startService } from '../support/process.ts';
import { STARTED_LINE } from '../support/service-cluster.ts';
import { until } from '../support/until.ts';

/** Bound of the wait for the worker loops' first passes to show in /metrics. */
const FIRST_PASSES_WAIT_MS = 15_000;
const POLL_MS = 100;

describe(`ROLE=worker as a process on ${ENGINE}`, () => {
  it('answers /health/live, /health/ready and /metrics (with its loops) on its PORT, and nothing of the API', async () => {
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const port = await freePort();
    const env = {
      ROLE: 'worker',
      LOG_LEVEL: 'info',
      BOOTSTRAP: 'off',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-worker-')),
      DATABASE_URL: database?.url ?? '',
      REAPER_INTERVAL_MS: '100',
    };
    const worker = await startService(env, port);
    try {
      const live = await fetch(`${worker.baseUrl}/health/live`);
      assert.equal(live.status, 200);
      assert.deepEqual(await live.json(), { status: 'ok' });
      const ready = await fetch(`${worker.baseUrl}/health/ready`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ok', database: ENGINE });

      // Its own metrics: the loops' passes, the backlog, the process.
      let metrics = '';
      await until(
        'a pass of every loop',
        async () => {
          const response = await fetch(`${worker.baseUrl}/metrics`, { headers: metricsHeaders });
          assert.equal(response.status, 200);
          assert.match(String(response.headers.get('content-type')), /^text\/plain/);
          metrics = await response.text();
          const passes = ['reaper', 'webhook-dispatcher', 'daily-close', 'idempotency-purge', 'report-fold'].map(
            (w) => valueOf(metrics, 'bolivar_worker_passes_total', { worker: w, result: 'ok' }) ?? 0,
          );
          return passes.every((n) => n >= 1);
        },
        { timeoutMs: FIRST_PASSES_WAIT_MS, intervalMs: POLL_MS, detail: () => metrics },
      );
      for (const w of ['reaper', 'webhook-dispatcher', 'daily-close', 'idempotency-purge', 'report-fold']) {
        assert.ok(
          (valueOf(metrics, 'bolivar_worker_passes_total', { worker: w, result: 'ok' }) ?? 0) >= 1,
          `${w} passes show:\n${metrics}`,
        );
      }
      assert.equal(valueOf(metrics, 'bolivar_outbox_events', { status: 'pending' }), 0);
      assert.equal(valueOf(metrics, 'bolivar_reaper_lag_seconds'), 0);
      assert.ok(valueOf(metrics, 'process_cpu_user_seconds_total')! > 0);
      assert.ok(valueOf(metrics, 'http_requests_total', { route: '/health/ready', status_code: '200' })! >= 1);

      // No API: not a route, not the document, not the docs.
      for (const url of ['/v1/tenant/me', '/v1/payouts', '/v1/openapi.json', '/docs']) {
        const response = await fetch(`${worker.baseUrl}${url}`);
        assert.equal(response.status, 404, url);
        await response.arrayBuffer();
      }

      const started = worker
        .output()
        .split('\n')
        .filter((line) => line.includes(STARTED_LINE))
        .map((line) => JSON.parse(line));
      assert.equal(started.length, 1, worker.output());
      assert.equal(started[0].role, 'worker');
      assert.equal(started[0].listening, `http://127.0.0.1:${port}`);
      assert.match(started[0].http, /no API/);
      assert.deepEqual([...started[0].workers].sort(), [
        'audit-archive',
        'daily-close',
        'idempotency-purge',
        'rail-inbox-purge',
        'rail-statement-pull',
        'reaper',
        'reconciliation',
        'report-fold',
        'webhook-dispatcher',
      ]);
    } finally {
      assert.equal(await worker.stop('SIGTERM'), 0, worker.output());
      await database?.drop();
    }
  });

  it('ROLE=api says it serves the API and runs no loop', async () => {
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const api = await startService({
      ROLE: 'api',
      LOG_LEVEL: 'info',
      BOOTSTRAP: 'off',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-api-')),
      DATABASE_URL: database?.url ?? '',
    });
    try {
      const started = JSON.parse(
        api
          .output()
          .split('\n')
          .find((line) => line.includes(STARTED_LINE))!,
      );
      assert.equal(started.role, 'api');
      assert.equal(started.listening, api.baseUrl);
      assert.match(started.http, /^API, /);
      assert.deepEqual(started.workers, []);
      const metrics = await (await fetch(`${api.baseUrl}/metrics`, { headers: metricsHeaders })).text();
      assert.equal(valueOf(metrics, 'bolivar_worker_passes_total'), undefined, 'no loop runs here');
    } finally {
      assert.equal(await api.stop('SIGTERM'), 0, api.output());
      await database?.drop();
    }
  });

  it('a worker started first on an empty database leaves the sandbox tenant to the first API process, which points it at its own port', async () => {
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-worker-first-'));
    const common = { LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '' };
    try {
      const worker = await startService({ ...common, ROLE: 'worker' });
      assert.equal(await worker.stop('SIGTERM'), 0, worker.output());
      assert.doesNotMatch(worker.output(), /First start/);
      assert.equal(existsSync(path.join(dataDir, 'bootstrap.json')), false, 'the worker wrote no bootstrap.json');

      const port = await freePort();
      const api = await startService({ ...common, ROLE: 'api' }, port);
      try {
        assert.match(api.output(), /First start/);
        const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
        assert.match(saved.curl, new RegExp(`http://localhost:${port}/v1/tenant/me`));
      } finally {
        assert.equal(await api.stop('SIGTERM'), 0, api.output());
      }
      const db = await openDatabase({ ...loadConfig({}), databaseUrl: database?.url, dataDir });
      try {
        const { rows } = await db.query<{ url: string }>('SELECT url FROM webhook_endpoints WHERE tenant_id = $1', [
          JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')).tenantId,
        ]);
        assert.deepEqual(
          rows,
          [{ url: `http://localhost:${port}/v1/sandbox/webhooks/sink` }],
          'the sandbox endpoint points at the API process, not the worker',
        );
      } finally {
        await db.close();
      }
    } finally {
      await database?.drop();
    }
  });
});
