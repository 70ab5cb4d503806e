import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('DATABASE_POOLER and DATABASE_DIRECT_URL', () => {
  const DATABASE_URL = 'postgres://bds@pgbouncer:6432/bds';
  const DATABASE_DIRECT_URL = 'postgres://bds@db:5432/bds';

  it('default to PostgreSQL itself, with no direct URL', () => {
    const config = loadConfig({ DATABASE_URL });
    assert.equal(config.databasePooler, 'none');
    assert.equal(config.databaseDirectUrl, undefined);
  });

  it('take a transaction pooler with the direct URL its migrations need', () => {
    const config = loadConfig({ DATABASE_URL, DATABASE_POOLER: 'Transaction', DATABASE_DIRECT_URL });
    assert.equal(config.databasePooler, 'transaction');
    assert.equal(config.databaseDirectUrl, DATABASE_DIRECT_URL);
  });

  it('refuse a transaction pooler without a direct URL, and any other pooler, naming the variable', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL, DATABASE_POOLER: 'transaction' }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'DATABASE_DIRECT_URL',
    );
    assert.throws(
      () => loadConfig({ DATABASE_URL, DATABASE_POOLER: 'session', DATABASE_DIRECT_URL }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'DATABASE_POOLER',
    );
    assert.throws(
      () => loadConfig({ DATABASE_URL, DATABASE_POOLER: 'transaction', DATABASE_DIRECT_URL: 'mysql://db/bds' }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'DATABASE_DIRECT_URL',
    );
  });

  it('mean nothing to the embedded engine', () => {
    assert.equal(loadConfig({ DATABASE_POOLER: 'transaction' }).databasePooler, 'transaction');
  });
});
