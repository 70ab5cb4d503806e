// The overview's state in the address: the range (read by report.ts's rangeFromQuery) and, for the
// platform key, the tenant and mode it looks at, so that Back from a statement keeps them.
import { BASE } from '../router.ts';
import type { ReportRange } from '../report.ts';

/** What the platform key looks at: one tenant (or every tenant, '') in a mode. */
export interface Scope {
  tenantId: string;
  mode: 'test' | 'live';
}

/** The range (and the platform's scope) in the address, so that Back from the statement keeps them. */
export function remember(range: ReportRange, scope: Scope | undefined): void {
  const params = new URLSearchParams({ from: range.from, to: range.to, granularity: range.granularity });
  if (scope) {
    params.set('mode', scope.mode);
    if (scope.tenantId) params.set('tenantId', scope.tenantId);
  }
  history.replaceState(null, '', `${BASE}/overview?${params.toString()}`);
}

export function scopeFromQuery(search: string): Scope {
  const params = new URLSearchParams(search);
  return { tenantId: params.get('tenantId') ?? '', mode: params.get('mode') === 'live' ? 'live' : 'test' };
}
