// METRICS_PORT: a second listener, for an internal network, that serves /metrics only; the API port
// then does not serve it (without METRICS_TOKEN). The service runs as `npm start` runs it.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { metricsHeaders, TEST_METRICS_TOKEN, valueOf } from '../support/metrics.ts';
import { freePort, startService } from '../support/process.ts';

describe(`METRICS_PORT on ${ENGINE}`, () => {
  it('serves /metrics on the internal port only, and nothing else there', async () => {
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const [port, metricsPort] = [await freePort(), await freePort()];
    const service = await startService(
      {
        LOG_LEVEL: 'info',
        BOOTSTRAP: 'off',
        METRICS_TOKEN: '',
        METRICS_PORT: String(metricsPort),
        METRICS_HOST: '127.0.0.1',
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-metrics-port-')),
        DATABASE_URL: database?.url ?? '',
      },
      port,
    );
    try {
      const onApi = await fetch(`${service.baseUrl}/metrics`);
      assert.equal(onApi.status, 404);
      const refusal = (await onApi.json()) as { error: { code: string; message: string; request_id: string } };
      assert.equal(refusal.error.code, 'route_not_found');
      assert.match(refusal.error.message, /METRICS_PORT/);

      assert.equal((await fetch(`${service.baseUrl}/health/ready`)).status, 200);
      const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      assert.equal(scraped.status, 200);
      const text = await scraped.text();
      assert.ok(
        (valueOf(text, 'http_requests_total', { route: '/health/ready', status_code: '200' }) ?? 0) >= 1,
        "the API port's requests, counted in the shared registry",
      );
      assert.ok(valueOf(text, 'bolivar_worker_passes_total') !== undefined, 'the business metrics too');

      for (const url of ['/health/live', '/v1/tenant/me', '/docs']) {
        const other = await fetch(`http://127.0.0.1:${metricsPort}${url}`);
        assert.equal(other.status, 404, url);
        const body = (await other.json()) as { error: { code: string; message: string; request_id: string } };
        assert.equal(body.error.code, 'route_not_found');
        assert.match(body.error.message, /This port serves GET \/metrics only/);
        assert.equal(other.headers.get('x-request-id'), body.error.request_id);
      }

      const started = JSON.parse(
        service
          .output()
          .split('\n')
          .find((line) => line.includes('bolivar disbursement service started'))!,
      );
      assert.equal(started.metrics, `http://127.0.0.1:${metricsPort}/metrics`);
    } finally {
      assert.equal(await service.stop('SIGTERM'), 0, service.output());
      await database?.drop();
    }
  });

  it('with METRICS_TOKEN too, both ports serve it, each only to the bearer of the token', async () => {
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const [port, metricsPort] = [await freePort(), await freePort()];
    const service = await startService(
      {
        LOG_LEVEL: 'info',
        BOOTSTRAP: 'off',
        METRICS_TOKEN: TEST_METRICS_TOKEN,
        METRICS_PORT: String(metricsPort),
        METRICS_HOST: '127.0.0.1',
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-metrics-port-')),
        DATABASE_URL: database?.url ?? '',
      },
      port,
    );
    try {
      for (const base of [service.baseUrl, `http://127.0.0.1:${metricsPort}`]) {
        const anonymous = await fetch(`${base}/metrics`);
        assert.equal(anonymous.status, 401, base);
        assert.equal(((await anonymous.json()) as { error: { code: string } }).error.code, 'metrics_token_invalid');
        const scraped = await fetch(`${base}/metrics`, { headers: metricsHeaders });
        assert.equal(scraped.status, 200, base);
        await scraped.arrayBuffer();
      }
      const started = JSON.parse(
        service
          .output()
          .split('\n')
          .find((line) => line.includes('bolivar disbursement service started'))!,
      );
      assert.equal(
        started.metrics,
        `http://127.0.0.1:${metricsPort}/metrics and ${service.baseUrl}/metrics (Authorization: Bearer METRICS_TOKEN)`,
      );
    } finally {
      assert.equal(await service.stop('SIGTERM'), 0, service.output());
      await database?.drop();
    }
  });

  it('refuses METRICS_PORT equal to PORT, naming it', async () => {
    const { loadConfig, ConfigError } = await import('../../src/config.ts');
    assert.throws(
      () => loadConfig({ PORT: '8080', METRICS_PORT: '8080' }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'METRICS_PORT',
    );
    assert.throws(
      () => loadConfig({ METRICS_PORT: '3000' }),
      (error: unknown) => error instanceof ConfigError && /a port other than PORT/.test(error.message),
    );
    assert.equal(loadConfig({ PORT: '0', METRICS_PORT: '0' }).metricsPort, 0, '0 is any free port');
    assert.throws(
      () => loadConfig({ METRICS_TOKEN: 'short' }),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === 'METRICS_TOKEN' && !error.message.includes('short'),
    );
  });
});
