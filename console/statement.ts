// Whose statement the payments screen lists, and the paths that go with it: the signed-in tenant's
// own (GET /v1/payments, screen /payments), or, for the platform key, one tenant's in one mode
// (GET /v1/admin/tenants/{id}/payments?mode=…, screen /tenants/{id}/payments?mode=…). One screen
// serves both; only these paths differ. Pure functions, no DOM.
import { apiPath, type ApiPath } from './paths.ts';

/** One tenant's statement in a mode, read with the platform key. `undefined` stands for the signed-in tenant's own. */
export interface TenantStatement {
  tenantId: string;
  mode: 'test' | 'live';
}

/** The tenant statement a screen address names: its tenant from the path, its mode from `?mode=` (test unless live). */
export function tenantStatementOf(tenantId: string, search: string): TenantStatement {
  return { tenantId, mode: new URLSearchParams(search).get('mode') === 'live' ? 'live' : 'test' };
}

/** The screen of a statement with `params` (filters): `/payments?…`, or `/tenants/{id}/payments?mode=…&…`. */
export function statementScreenPath(of: TenantStatement | undefined, params: URLSearchParams): string {
  const query = of ? new URLSearchParams([['mode', of.mode], ...params]) : params;
  const search = query.toString();
  const path = of ? `/tenants/${encodeURIComponent(of.tenantId)}/payments` : '/payments';
  return search === '' ? path : `${path}?${search}`;
}

/** The API call of a statement: its path, and the query parameters it needs besides the filters. */
export function statementApi(of: TenantStatement | undefined): { path: ApiPath; query: Record<string, string> } {
  return of
    ? { path: apiPath`/v1/admin/tenants/${of.tenantId}/payments`, query: { mode: of.mode } }
    : { path: apiPath`/v1/payments`, query: {} };
}

/** The screen of one payment of the statement: the tenant's payment screen, or the platform's view of it. */
export function paymentScreenPath(of: TenantStatement | undefined, id: string): string {
  return of ? `/tenants/${encodeURIComponent(of.tenantId)}/payments/${encodeURIComponent(id)}` : `/payments/${id}`;
}
