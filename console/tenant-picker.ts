// The platform's tenant picker on the overview: every tenant, page by page, up to a bound. Past it
// the overview asks for a tenant's id instead of listing more.
import { apiPath, type Api, type Page } from './api.ts';

/**
 * Tenants per page of the picker's list, and the pages it reads at most (2,000 tenants).
 * @internal Exported for its tests, not used elsewhere.
 */
export const TENANT_PAGE = 100;
/** @internal Exported for its tests, not used elsewhere. */
export const TENANT_PAGES_MAX = 20;

export interface PickerTenants {
  tenants: { id: string; name: string }[];
  /** True when tenants remain past the bound: they are picked by id. */
  more: boolean;
}

export async function tenantsForPicker(api: Pick<Api, 'get'>): Promise<PickerTenants> {
  const tenants: { id: string; name: string }[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < TENANT_PAGES_MAX; page += 1) {
    const next: Page<{ id: string; name: string }> = await api.get(apiPath`/v1/admin/tenants`, {
      limit: String(TENANT_PAGE),
      ...(cursor ? { cursor } : {}),
    });
    tenants.push(...next.data);
    if (!next.has_more || !next.next_cursor) return { tenants, more: false };
    cursor = next.next_cursor;
  }
  return { tenants, more: true };
}
