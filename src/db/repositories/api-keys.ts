import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  mode: Mode;
  scopes: string[];
  prefix: string;
  last4: string;
  is_platform: boolean;
  source: 'admin' | 'bootstrap' | 'env';
  created_at: Date;
  revoked_at: Date | null;
}

/** What authentication needs about a key: joined with the tenant so one query answers. */
export interface ApiKeyIdentity {
  id: string;
  tenant_id: string;
  tenant_name: string;
  mode: Mode;
  scopes: string[];
  is_platform: boolean;
  source: ApiKeyRow['source'];
}

const COLUMNS = 'id, tenant_id, mode, scopes, prefix, last4, is_platform, source, created_at, revoked_at';

export async function insertApiKey(
  db: Queryable,
  key: {
    id: string;
    tenantId: string;
    mode: Mode;
    scopes: string[];
    hash: string;
    prefix: string;
    last4: string;
    isPlatform: boolean;
    source: ApiKeyRow['source'];
  },
): Promise<ApiKeyRow> {
  const p = new Params();
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, tenant_id, mode, scopes, key_hash, prefix, last4, is_platform, source)
     VALUES (${p.add(key.id)}, ${p.add(key.tenantId)}, ${p.add(key.mode)}, ${p.add(key.scopes)}, ${p.add(key.hash)}, ${p.add(key.prefix)},
       ${p.add(key.last4)}, ${p.add(key.isPlatform)}, ${p.add(key.source)}) RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0]!;
}

/**
 * The active keys among `hashes`, by hash, in one statement: what the authenticator's coalesced
 * lookups run. Unknown and revoked hashes are simply absent from the result.
 */
export async function findActiveKeysByHashes(
  db: Queryable,
  hashes: readonly string[],
): Promise<Map<string, ApiKeyIdentity>> {
  const p = new Params();
  const { rows } = await db.query<ApiKeyIdentity & { key_hash: string }>(
    `SELECT k.key_hash, k.id, k.tenant_id, t.name AS tenant_name, k.mode, k.scopes, k.is_platform, k.source
       FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.key_hash = ANY(${p.add(hashes)}::text[]) AND k.revoked_at IS NULL`,
    p.values,
  );
  return new Map(rows.map(({ key_hash, ...identity }) => [key_hash, identity]));
}

export async function listTenantKeys(db: Queryable, tenantId: string): Promise<ApiKeyRow[]> {
  const p = new Params();
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = ${p.add(tenantId)} ORDER BY created_at, id`,
    p.values,
  );
  return rows;
}

/** One key, locked until the transaction ends (a revocation reads what it changes). */
export async function lockApiKey(tx: Queryable, id: string): Promise<ApiKeyRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE id = ${p.add(id)} FOR UPDATE`,
    p.values,
  );
  return rows[0];
}

export async function revokeApiKey(db: Queryable, id: string): Promise<{ id: string; revoked_at: Date } | undefined> {
  const p = new Params();
  const { rows } = await db.query<{ id: string; revoked_at: Date }>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${p.add(id)} RETURNING id, revoked_at`,
    p.values,
  );
  return rows[0];
}

/** Makes a revoked key valid again (PLATFORM_API_KEY set back to a key it named before). */
export async function reinstateApiKey(tx: Queryable, id: string): Promise<void> {
  const p = new Params();
  await tx.query(`UPDATE api_keys SET revoked_at = NULL WHERE id = ${p.add(id)}`, p.values);
}

export async function revokeEnvKeysExcept(db: Queryable, hash: string): Promise<void> {
  const p = new Params();
  await db.query(
    `UPDATE api_keys SET revoked_at = now() WHERE source = 'env' AND revoked_at IS NULL AND key_hash <> ${p.add(hash)}`,
    p.values,
  );
}

/** Revokes the platform keys the first start made (PLATFORM_API_KEY replaces them); answers how many were active. */
export async function revokeBootstrapPlatformKeys(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE api_keys SET revoked_at = now() WHERE source = 'bootstrap' AND is_platform AND revoked_at IS NULL`,
  );
  return rowCount;
}

export async function findKeyByHash(
  db: Queryable,
  hash: string,
): Promise<{ id: string; revoked_at: Date | null } | undefined> {
  const p = new Params();
  const { rows } = await db.query<{ id: string; revoked_at: Date | null }>(
    `SELECT id, revoked_at FROM api_keys WHERE key_hash = ${p.add(hash)}`,
    p.values,
  );
  return rows[0];
}

/** Up to `max` hashes of the keys not revoked (the authenticator's index of possibly valid keys). */
export async function listActiveKeyHashes(db: Queryable, max: number): Promise<string[]> {
  const p = new Params();
  const { rows } = await db.query<{ key_hash: string }>(
    `SELECT key_hash FROM api_keys WHERE revoked_at IS NULL LIMIT ${p.add(max)}`,
    p.values,
  );
  return rows.map((row) => row.key_hash);
}
