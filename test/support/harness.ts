import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildApp, type AppDeps } from '../../src/app.ts';
import type { Services } from '../../src/services/index.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { readRailsFile } from '../../src/rails/rails-file.ts';
import type { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { PgliteDatabase } from '../../src/db/pglite.ts';
import { pgliteTemplate } from '../../src/db/pglite-template.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import type { Clock } from '../../src/domain/clock.ts';
import type { App } from '../../src/http/types.ts';
import { PLATFORM_TENANT_ID, syncPlatformKey } from '../../src/services/bootstrap.ts';
import type { AuditActor } from '../../src/domain/audit.ts';
import { TEST_METRICS_TOKEN } from './metrics.ts';

export const ENGINE: 'postgres' | 'pglite' = process.env.DATABASE_URL ? 'postgres' : 'pglite';

export interface TestDatabase {
  db: Database;
  url?: string;
  drop(): Promise<void>;
}

/**
 * The migrated PGlite data directory `npm run build` writes beside the bundle (`npm test` builds
 * first): a test database starts from it in about a second instead of running initdb (3 s or more).
 * Read once per test process; `migrate` then applies whatever is newer than it.
 */
const PGLITE_TEMPLATE = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../dist/pglite-template.tar.gz');
let pgliteTemplateBytes: Blob | undefined | null = null;
function testTemplate(): Blob | undefined {
  if (pgliteTemplateBytes === null) pgliteTemplateBytes = pgliteTemplate(PGLITE_TEMPLATE);
  return pgliteTemplateBytes;
}

/**
 * A fresh database: in-memory PGlite (from the migrated template, unless `empty`: no schema at all),
 * or a new, empty database on the DATABASE_URL server.
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const db = await PgliteDatabase.open(undefined, options.empty ? undefined : testTemplate());
    return { db, drop: () => db.close() };
  }
  const name = `bds_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = new PostgresDatabase(url.toString(), 20);
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      const cleanup = new pg.Client({ connectionString: baseUrl });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

export interface TestApp {
  app: App;
  services: Services;
  db: Database;
  config: Config;
  platformKey: string;
  close(): Promise<void>;
}

export async function startTestApp(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    database?: TestDatabase;
    deps?: Partial<AppDeps>;
    /** Runs before `app.ready()`: register test-only routes or hooks here. */
    beforeReady?: (app: App) => void | Promise<void>;
  } = {},
): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const platformKey = generateApiKey('platform');
  const env = {
    BOOTSTRAP: 'off',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_RPS: '0',
    METRICS_TOKEN: TEST_METRICS_TOKEN,
    ...options.env,
    PLATFORM_API_KEY: platformKey,
  };
  const config = loadConfig(env);
  await migrate(database.db, () => syncPlatformKey(database.db, platformKey));
  // As the start does (main.ts): the connectors of RAILS_FILE, when the test gives one.
  const connectorConfigs = readRailsFile(config.railsFile, env);
  const { app, services } = await buildApp({
    config,
    connectorConfigs,
    db: database.db,
    clock: options.clock,
    ...options.deps,
  });
  if (options.beforeReady) await options.beforeReady(app);
  await app.ready();
  return {
    app,
    services,
    db: database.db,
    config,
    platformKey,
    async close() {
      await app.close();
      if (!options.database) await database.drop();
    },
  };
}

/** The platform key as an audit actor, for a test that calls an audited service directly. */
export async function platformActor(t: TestApp): Promise<AuditActor> {
  const { rows } = await t.db.query<{ id: string }>(
    'SELECT id FROM api_keys WHERE is_platform AND revoked_at IS NULL ORDER BY created_at LIMIT 1',
  );
  if (!rows[0]) throw new Error('no active platform key');
  return { keyId: rows[0].id, tenantId: PLATFORM_TENANT_ID, requestId: null };
}

export interface InjectResult<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | number | undefined>;
  raw: string;
}

export function client(app: App, apiKey?: string) {
  async function call<T = any>(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<InjectResult<T>> {
    const response = await app.inject({
      method,
      url,
      headers: {
        ...(apiKey ? { 'x-api-key': apiKey } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    let parsed: unknown = undefined;
    try {
      parsed = response.body ? JSON.parse(response.body) : undefined;
    } catch {
      parsed = response.body;
    }
    return { status: response.statusCode, body: parsed as T, headers: response.headers, raw: response.body };
  }
  return {
    get: <T = any>(url: string, headers?: Record<string, string>) => call<T>('GET', url, undefined, headers),
    post: <T = any>(url: string, body?: unknown, headers?: Record<string, string>) =>
      call<T>('POST', url, body, headers),
    patch: <T = any>(url: string, body?: unknown, headers?: Record<string, string>) =>
      call<T>('PATCH', url, body, headers),
    put: <T = any>(url: string, body?: unknown, headers?: Record<string, string>) => call<T>('PUT', url, body, headers),
    delete: <T = any>(url: string, headers?: Record<string, string>) => call<T>('DELETE', url, undefined, headers),
  };
}

export type Client = ReturnType<typeof client>;

/** A GET from a given client address (the per-address limits' key), its body parsed when it is JSON. */
export async function getFrom(
  app: App,
  remoteAddress: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<InjectResult> {
  const response = await app.inject({ method: 'GET', url, headers, remoteAddress });
  let body: any;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = response.body;
  }
  return { status: response.statusCode, body, headers: response.headers, raw: response.body };
}

/** A tenant with a key of the given mode and scopes, created through the admin API. */
export async function createTenant(
  t: TestApp,
  options: { name?: string; mode?: 'test' | 'live'; scopes?: string[]; tenant?: Record<string, unknown> } = {},
): Promise<{ tenantId: string; key: string; keyId: string; api: Client }> {
  const admin = client(t.app, t.platformKey);
  const tenant = await admin.post('/v1/admin/tenants', { name: options.name ?? 'Acme Remesas', ...options.tenant });
  if (tenant.status !== 201) throw new Error(`tenant creation failed: ${tenant.raw}`);
  const issued = await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, {
    mode: options.mode ?? 'test',
    ...(options.scopes ? { scopes: options.scopes } : {}),
  });
  if (issued.status !== 201) throw new Error(`key creation failed: ${issued.raw}`);
  return { tenantId: tenant.body.id, key: issued.body.key, keyId: issued.body.id, api: client(t.app, issued.body.key) };
}

export function assertEnvelope(
  assert: typeof import('node:assert/strict'),
  response: InjectResult,
  status: number,
  code: string,
): void {
  assert.equal(response.status, status, `expected ${status} ${code}, got ${response.status}: ${response.raw}`);
  assert.equal(response.body?.error?.code, code, response.raw);
  assert.equal(typeof response.body.error.message, 'string');
  assert.equal(typeof response.body.error.type, 'string');
  assert.equal(response.body.error.request_id, response.headers['x-request-id']);
}

export interface Instances {
  database: TestDatabase;
  /** Every instance, each with its own pool on the same database (as several processes would). */
  apps: TestApp[];
  /**
   * Closes every instance and drops the database; answers how many deadlocks PostgreSQL detected on
   * it (read once every connection is gone, so its statistics are flushed).
   */
  close(): Promise<number>;
}

/** `count` app instances on one fresh PostgreSQL database (DATABASE_URL must be set). */
export async function startInstances(
  count: number,
  options: Omit<Parameters<typeof startTestApp>[0] & object, 'database'> = {},
): Promise<Instances> {
  const database = await createTestDatabase();
  if (!database.url) throw new Error('startInstances needs a PostgreSQL server (DATABASE_URL)');
  const pools: PostgresDatabase[] = [];
  const apps = [await startTestApp({ ...options, database })];
  for (let i = 1; i < count; i += 1) {
    const pool = new PostgresDatabase(database.url, 20);
    pools.push(pool);
    apps.push(await startTestApp({ ...options, database: { db: pool, drop: async () => undefined } }));
  }
  return {
    database,
    apps,
    async close() {
      for (const app of apps) await app.app.close();
      for (const pool of pools) await pool.close();
      await database.db.close();
      const check = new pg.Client({ connectionString: database.url });
      await check.connect();
      const { rows } = await check.query<{ n: number }>(
        `SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`,
      );
      await check.end();
      await database.drop();
      return rows[0]!.n;
    },
  };
}

/**
 * Walks a cursor-paginated list to its end (`path` without limit/cursor), checking the page shape
 * and each item's keys on every page; `between` runs after each page (to insert meanwhile).
 */
export async function walkPages(
  api: Client,
  path: string,
  limit: number,
  itemKeys: string[],
  between?: () => Promise<void>,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  const joiner = path.includes('?') ? '&' : '?';
  do {
    const response: InjectResult = await api.get(`${path}${joiner}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(response.status, 200, response.raw);
    assert.deepEqual(Object.keys(response.body), ['data', 'has_more', 'next_cursor']);
    assert.ok(response.body.data.length <= limit);
    for (const item of response.body.data) assert.deepEqual(Object.keys(item), itemKeys);
    ids.push(...response.body.data.map((row: { id: string }) => row.id));
    assert.equal(response.body.has_more, response.body.next_cursor !== null);
    cursor = response.body.next_cursor;
    pages += 1;
    if (between) await between();
  } while (cursor);
  return { ids, pages };
}
