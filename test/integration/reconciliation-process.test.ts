// Reconciliation across real processes (PostgreSQL): a run asked for on an API-only process is run by a
// worker process, the worker's schedule reconciles every tenant and mode on its own, and the standing
// shows in the metrics of every process.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import { startService } from '../support/process.ts';
import { until } from '../support/until.ts';

/** Bound of every wait for a worker to have done something. */
const WAIT_MS = 20_000;
const POLL_MS = 200;

const WAITS = { timeoutMs: WAIT_MS, intervalMs: POLL_MS };

describe(
  `reconciliation by a worker process on ${ENGINE}`,
  { skip: ENGINE !== 'postgres' && 'PostgreSQL only: an API process and a worker process share the database' },
  () => {
    it('runs what an API-only process queued, reconciles on its schedule, and every process shows the standing', async () => {
      const database = await createTestDatabase();
      const platformKey = generateApiKey('platform');
      const common = {
        LOG_LEVEL: 'warn',
        DATABASE_URL: database.url!,
        PLATFORM_API_KEY: platformKey,
        RECONCILE_INTERVAL_S: '1',
      };
      const api = await startService({
        ...common,
        ROLE: 'api',
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-recon-api-')),
      });
      const worker = await startService({
        ...common,
        ROLE: 'worker',
        BOOTSTRAP: 'off',
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-recon-worker-')),
      });
      try {
        const call = async (method: string, route: string, body?: unknown) => {
          const response = await fetch(`${api.baseUrl}${route}`, {
            method,
            headers: {
              'x-api-key': platformKey,
              ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          return { status: response.status, body: (await response.json()) as any };
        };
        // The first API process created the sandbox tenant (funded in test mode): the one tenant with books.
        const asked = await call('POST', '/v1/admin/reconciliation/runs', {});
        assert.equal(asked.status, 202, JSON.stringify(asked.body));
        const sandbox = asked.body.data[0];
        assert.deepEqual([asked.body.total, sandbox.mode], [1, 'test']);

        const done = await until(
          'the worker runs the queued run',
          async () => {
            const run = await call('GET', `/v1/admin/reconciliation/runs/${sandbox.id}`);
            return run.body.status === 'completed' ? run.body : undefined;
          },
          WAITS,
        );
        assert.deepEqual([done.clean, done.discrepancies], [true, []]);

        // RECONCILE_INTERVAL_S=1: the schedule queues the tenant again by itself.
        await until(
          'the schedule reconciles again',
          async () => {
            const runs = await call(
              'GET',
              `/v1/admin/reconciliation/runs?tenantId=${sandbox.tenantId}&status=completed`,
            );
            const scheduled = runs.body.data.filter(
              (r: { trigger: string; id: string }) => r.trigger === 'schedule' && r.id !== sandbox.id,
            );
            return scheduled.length > 0 ? true : undefined;
          },
          WAITS,
        );
        for (const process of [api, worker]) {
          const metrics = await (await fetch(`${process.baseUrl}/metrics`, { headers: metricsHeaders })).text();
          assert.equal(valueOf(metrics, 'bolivar_reconciliation_discrepancies'), 0, 'no check disagrees');
          assert.ok(valueOf(metrics, 'bolivar_reconciliation_last_clean_run_age_seconds')! < 60);
        }
        const workerMetrics = await (await fetch(`${worker.baseUrl}/metrics`, { headers: metricsHeaders })).text();
        assert.ok(
          valueOf(workerMetrics, 'bolivar_reconciliation_runs_total', { result: 'clean' })! >= 2,
          'the worker ran them',
        );
        assert.ok(
          valueOf(workerMetrics, 'bolivar_worker_passes_total', { worker: 'reconciliation', result: 'ok' })! >= 1,
        );
      } finally {
        assert.equal(await worker.stop('SIGTERM'), 0, worker.output());
        assert.equal(await api.stop('SIGTERM'), 0, api.output());
        await database.drop();
      }
    });
  },
);
