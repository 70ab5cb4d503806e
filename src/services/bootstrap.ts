import { randomUUID } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';
import type { Database, Queryable } from '../db/database.ts';
import { ensureDataDir } from '../db/data-dir.ts';
import {
  findKeyByHash,
  insertApiKey,
  reinstateApiKey,
  revokeBootstrapPlatformKeys,
  revokeEnvKeysExcept,
} from '../db/repositories/api-keys.ts';
import { isBootstrapped, recordBootstrap } from '../db/repositories/app-state.ts';
import { ensurePlatformTenant, hasCustomerTenant, insertTenant } from '../db/repositories/tenants.ts';
import {
  CUSTOMER_SCOPES,
  PLATFORM_SCOPE,
  generateApiKey,
  hashApiKey,
  keyLast4,
  keyPrefix,
} from '../domain/api-keys.ts';
import { TENANT_DEFAULTS } from './tenants.ts';

/** @internal Exported for its tests, not used elsewhere. */
export const PLATFORM_TENANT_ID = '00000000-0000-4000-8000-000000000000';

/** Extra first-start work of later features (sandbox funding, webhook endpoint), run in the same transaction. */
export type BootstrapStep = (tx: Queryable, sandbox: { tenantId: string; baseUrl: string }) => Promise<void>;

export interface BootstrapResult {
  tenantId: string;
  apiKey: string;
  platformApiKey?: string;
  curl: string;
  file: string;
}

async function insertPlatformKey(tx: Queryable, key: string, source: 'env' | 'bootstrap'): Promise<void> {
  await insertApiKey(tx, {
    id: randomUUID(),
    tenantId: PLATFORM_TENANT_ID,
    mode: 'live',
    scopes: [PLATFORM_SCOPE],
    hash: hashApiKey(key),
    prefix: keyPrefix(key),
    last4: keyLast4(key),
    isPlatform: true,
    source,
  });
}

/**
 * `PLATFORM_API_KEY` is accepted as given: stored hashed; a replaced one stops working. Once it is
 * set, the platform key the first start made (saved in bootstrap.json) is revoked: the operator has
 * chosen the key that administers this service, and a key lying in a file must not outlive that
 * choice. Answers how many bootstrap platform keys this revoked (for one log line).
 */
export async function syncPlatformKey(
  db: Database,
  key: string | undefined,
): Promise<{ revokedBootstrapKeys: number }> {
  if (!key) return { revokedBootstrapKeys: 0 };
  const hash = hashApiKey(key);
  return db.transaction(async (tx) => {
    await ensurePlatformTenant(tx, PLATFORM_TENANT_ID);
    await revokeEnvKeysExcept(tx, hash);
    const existing = await findKeyByHash(tx, hash);
    if (!existing) await insertPlatformKey(tx, key, 'env');
    else if (existing.revoked_at) await reinstateApiKey(tx, existing.id);
    return { revokedBootstrapKeys: await revokeBootstrapPlatformKeys(tx) };
  });
}

function baseUrlOf(config: Pick<Config, 'publicBaseUrl' | 'port'>): string {
  return (config.publicBaseUrl ?? `http://localhost:${config.port}`).replace(/\/$/, '');
}

/** This service's origin, where its sandbox sink is: test-mode webhooks may reach it wherever it is. */
export function ownOriginOf(config: Pick<Config, 'publicBaseUrl' | 'port'>): string {
  return new URL(baseUrlOf(config)).origin;
}

/**
 * First start on an empty database: a sandbox tenant with a test key holding all eight scopes.
 * Runs under the migration lock, so two processes starting at once bootstrap once.
 */
export async function bootstrapIfEmpty(
  db: Database,
  config: Pick<Config, 'dataDir' | 'platformApiKey' | 'publicBaseUrl' | 'port'>,
  steps: BootstrapStep[] = [],
): Promise<BootstrapResult | undefined> {
  const baseUrl = baseUrlOf(config);
  const result = await db.transaction(async (tx) => {
    if (await isBootstrapped(tx)) return undefined;
    if (await hasCustomerTenant(tx)) return undefined;
    // Where the keys will be saved, checked before anything commits: keys shown once must not be lost.
    ensureDataDir(config.dataDir);

    const tenant = await insertTenant(tx, randomUUID(), { ...TENANT_DEFAULTS, name: 'Sandbox' });
    const apiKey = generateApiKey('test');
    await insertApiKey(tx, {
      id: randomUUID(),
      tenantId: tenant.id,
      mode: 'test',
      scopes: [...CUSTOMER_SCOPES],
      hash: hashApiKey(apiKey),
      prefix: keyPrefix(apiKey),
      last4: keyLast4(apiKey),
      isPlatform: false,
      source: 'bootstrap',
    });
    let platformApiKey: string | undefined;
    if (!config.platformApiKey) {
      // Without PLATFORM_API_KEY a newcomer would have no way into the admin API. This key is never
      // printed (stdout is often a log store) and administers test mode only (plugins/live-mode-guard.ts).
      await ensurePlatformTenant(tx, PLATFORM_TENANT_ID);
      platformApiKey = generateApiKey('platform');
      await insertPlatformKey(tx, platformApiKey, 'bootstrap');
    }
    for (const step of steps) await step(tx, { tenantId: tenant.id, baseUrl });
    await recordBootstrap(tx, { tenantId: tenant.id, at: new Date() });
    return { tenantId: tenant.id, apiKey, platformApiKey };
  });
  if (!result) return undefined;

  const curl = `curl -s ${baseUrl}/v1/tenant/me -H 'x-api-key: ${result.apiKey}'`;
  const file = path.resolve(config.dataDir, 'bootstrap.json');
  const content = {
    tenantId: result.tenantId,
    mode: 'test',
    apiKey: result.apiKey,
    ...(result.platformApiKey ? { platformApiKey: result.platformApiKey } : {}),
    curl,
    createdAt: new Date().toISOString(),
  };
  writeFileSync(file, JSON.stringify(content, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return { ...result, curl, file };
}

/**
 * The first-start banner. The sandbox test key is shown (it moves sandbox money only); the platform
 * key never is: the banner says where it is saved.
 */
export function printBootstrap(
  result: BootstrapResult,
  write: (text: string) => void = (t) => process.stdout.write(t),
): void {
  const lines = [
    '',
    '  First start: created a sandbox tenant (test mode). This key is shown once.',
    `  tenant:        ${result.tenantId}`,
    `  test API key:  ${result.apiKey}`,
    ...(result.platformApiKey
      ? [
          `  platform key:  saved in the file below, never printed (admin API, test mode only: set PLATFORM_API_KEY for live mode)`,
        ]
      : []),
    `  saved to:      ${result.file} (mode 0600)`,
    '',
    '  Try it:',
    `  ${result.curl}`,
    '',
  ];
  write(lines.join('\n') + '\n');
}
