import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.dataDir, './data');
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.quoteTtlSeconds, 60);
    assert.equal(config.sandboxSettleDelayMs, 3000);
    assert.equal(config.sandboxReverseDelayMs, 10000);
    assert.equal(config.webhookBackoffScale, 1);
    assert.equal(config.webhookTimeoutMs, 5000);
    assert.equal(config.idempotencyTtlHours, 24);
    assert.equal(config.role, 'all');
    assert.equal(config.bootstrap, true);
    assert.equal(config.authFailureLimit, 300);
    assert.equal(config.authFailurePrefixLimit, 3000);
    assert.equal(config.authFailureWindowS, 60);
    assert.equal(config.reconcileIntervalS, 300);
    assert.equal(config.railStatementPullAtMinutes, 6 * 60, 'the statement pull from 06:00 Caracas time');
  });

  it('RAIL_STATEMENT_PULL_AT is a time of day or off', () => {
    assert.equal(loadConfig({ RAIL_STATEMENT_PULL_AT: '00:00' }).railStatementPullAtMinutes, 0);
    assert.equal(loadConfig({ RAIL_STATEMENT_PULL_AT: '23:59' }).railStatementPullAtMinutes, 23 * 60 + 59);
    assert.equal(loadConfig({ RAIL_STATEMENT_PULL_AT: 'OFF' }).railStatementPullAtMinutes, null);
  });

  it('reads every knob', () => {
    const config = loadConfig({
      PORT: '8080',
      DATABASE_URL: 'postgres://u:p@db:5432/bds',
      ROLE: 'worker',
      WEBHOOK_BACKOFF_SCALE: '0.001',
      BOOTSTRAP: 'off',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_RPS: '50',
      QUOTE_TTL_SECONDS: '5',
      AUTH_FAILURE_LIMIT: '0',
      AUTH_FAILURE_WINDOW_S: '300',
      TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,loopback, fd00::/8',
      RECONCILE_INTERVAL_S: '0',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.role, 'worker');
    assert.equal(config.webhookBackoffScale, 0.001);
    assert.equal(config.bootstrap, false);
    assert.equal(config.rateLimitRps, 50);
    assert.equal(config.quoteTtlSeconds, 5);
    assert.equal(config.authFailureLimit, 0);
    assert.equal(config.authFailureWindowS, 300);
    assert.equal(config.reconcileIntervalS, 0, '0: reconciliation only on demand');
    assert.deepEqual(config.trustProxy, ['10.0.0.0/8', '192.168.1.7', 'loopback', 'fd00::/8']);
    assert.equal(loadConfig({}).trustProxy, false, 'off by default: the connection peer is the client');
    assert.equal(loadConfig({ TRUST_PROXY: 'off' }).trustProxy, false);
  });

  const bad: Array<[string, string, RegExp]> = [
    ['PORT', 'abc', /PORT accepts an integer from 0 to 65535/],
    ['PORT', '70000', /PORT/],
    ['ROLE', 'everything', /ROLE accepts one of all, api, worker/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL accepts one of/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL accepts a URL starting with postgres:\/\/ or postgresql:\/\//],
    ['QUOTE_TTL_SECONDS', '0', /QUOTE_TTL_SECONDS/],
    ['WEBHOOK_BACKOFF_SCALE', '-1', /WEBHOOK_BACKOFF_SCALE accepts a decimal number/],
    ['BOOTSTRAP', 'maybe', /BOOTSTRAP accepts on or off/],
    ['PLATFORM_API_KEY', 'short', /PLATFORM_API_KEY accepts bsk_platform_/],
    ['IDEMPOTENCY_TTL_HOURS', '1.5', /IDEMPOTENCY_TTL_HOURS accepts an integer/],
    ['AUTH_FAILURE_LIMIT', '-1', /AUTH_FAILURE_LIMIT accepts an integer from 0 to 100000/],
    ['AUTH_FAILURE_LIMIT', '200000', /AUTH_FAILURE_LIMIT/],
    ['AUTH_FAILURE_WINDOW_S', '0', /AUTH_FAILURE_WINDOW_S accepts an integer from 1 to 86400/],
    ['TRUST_PROXY', '1', /TRUST_PROXY accepts off, or a comma-separated list/],
    ['TRUST_PROXY', 'on', /TRUST_PROXY/],
    ['TRUST_PROXY', '10.0.0.0/33', /TRUST_PROXY/],
    ['TRUST_PROXY', '10.0.0.1,,10.0.0.2', /TRUST_PROXY/],
    ['TRUST_PROXY', 'proxy.internal', /TRUST_PROXY/],
    ['RECONCILE_INTERVAL_S', '-1', /RECONCILE_INTERVAL_S accepts an integer from 0 to 604800/],
    ['RECONCILE_INTERVAL_S', '5m', /RECONCILE_INTERVAL_S accepts an integer/],
    ['RECONCILE_INTERVAL_S', '604801', /RECONCILE_INTERVAL_S/],
    ['RAIL_STATEMENT_PULL_AT', '24:00', /RAIL_STATEMENT_PULL_AT accepts a time of day HH:MM/],
    ['RAIL_STATEMENT_PULL_AT', '6:00', /RAIL_STATEMENT_PULL_AT/],
    ['RAIL_STATEMENT_PULL_AT', '06:60', /RAIL_STATEMENT_PULL_AT/],
  ];
  for (const [name, value, message] of bad) {
    it(`rejects ${name}=${value} naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.variable, name);
          assert.match(error.message, message);
          return true;
        },
      );
    });
  }

  it('DATABASE_READ_URL needs DATABASE_URL: the embedded engine has no replica', () => {
    assert.equal(loadConfig({}).databaseReadUrl, undefined);
    assert.equal(loadConfig({}).readReplicaMaxLagMs, 5_000);
    const config = loadConfig({
      DATABASE_URL: 'postgres://db/bds',
      DATABASE_READ_URL: 'postgres://replica/bds',
      READ_REPLICA_MAX_LAG_MS: '2000',
    });
    assert.equal(config.databaseReadUrl, 'postgres://replica/bds');
    assert.equal(config.readReplicaMaxLagMs, 2_000);
    assert.throws(
      () => loadConfig({ DATABASE_READ_URL: 'postgres://u:hunter2@replica/bds' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.variable === 'DATABASE_READ_URL' &&
        /embedded engine/.test(error.message) &&
        !error.message.includes('hunter2'),
    );
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://db/bds', READ_REPLICA_MAX_LAG_MS: '10' }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'READ_REPLICA_MAX_LAG_MS',
    );
  });

  it('never echoes a database password or platform key in the message', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://user:hunter2@db/x' }),
      (error: Error) => !error.message.includes('hunter2'),
    );
    assert.throws(
      () => loadConfig({ PLATFORM_API_KEY: 'bsk_platform_secret' }),
      (error: Error) => !error.message.includes('secret'),
    );
  });

  it('HOST takes an IP address or a DNS name, and refuses anything else naming the variable', () => {
    for (const host of ['0.0.0.0', '127.0.0.1', '::', '::1', 'localhost', 'api-1.internal', 'svc.example.com.']) {
      assert.equal(loadConfig({ HOST: host }).host, host);
    }
    assert.equal(loadConfig({}).host, '0.0.0.0');
    for (const host of [
      'not_a_host',
      'http://localhost',
      'localhost:3000',
      '-bad.example',
      'a..b',
      '[::1]',
      `${'a'.repeat(64)}.com`,
    ]) {
      assert.throws(
        () => loadConfig({ HOST: host }),
        (error: unknown) => error instanceof ConfigError && error.variable === 'HOST',
        host,
      );
    }
  });
});
