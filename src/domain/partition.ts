// Who owns a row and who is calling. Every tenant-owned row, query and lock is scoped by a partition:
// one tenant in one mode (test and live never see each other's data).

export type Mode = 'test' | 'live';

export interface Partition {
  tenantId: string;
  mode: Mode;
}

/** Who is calling: resolved from `x-api-key` before anything else happens. */
export interface AuthContext {
  apiKeyId: string;
  tenantId: string;
  tenantName: string;
  mode: Mode;
  scopes: readonly string[];
  isPlatform: boolean;
  /**
   * How the key came to be: issued through the admin API, made by the first start (`bootstrap`: the
   * sandbox key and, without PLATFORM_API_KEY, a platform key saved in bootstrap.json), or taken from
   * PLATFORM_API_KEY (`env`).
   */
  keySource: 'admin' | 'bootstrap' | 'env';
}
