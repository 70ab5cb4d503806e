import type { AnomalyRow } from '../../db/repositories/anomalies.ts';
import type { AnomalyService } from '../../services/anomalies.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { Anomaly, AnomalyList, AnomalyListQuery, ResolveAnomalyBody } from '../schemas/anomalies.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';
import { auditActorOf } from '../context.ts';
import { assert } from '../../domain/assert.ts';

const iso = (date: Date | null) => (date ? date.toISOString() : null);

function anomalyView(row: AnomalyRow) {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    tenantId: row.tenant_id,
    mode: row.mode,
    paymentId: row.payment_id,
    ours: row.ours,
    theirs: row.theirs,
    raw: row.raw,
    reportedAt: row.reported_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    resolvedBy: row.resolved_by,
    resolutionNote: row.resolution_note,
    resolvedAt: iso(row.resolved_at),
  };
}

/** The operator's queue of anomalies (platform key; outside the public contract). */
export async function adminAnomalyRoutes(app: App, anomalies: AnomalyService): Promise<void> {
  adminListAnomaliesRoute(app, anomalies);
  adminGetAnomalyRoute(app, anomalies);
  adminResolveAnomalyRoute(app, anomalies);
}

function adminListAnomaliesRoute(app: App, anomalies: AnomalyService): void {
  app.get(
    '/v1/admin/anomalies',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListAnomalies',
        summary: 'List anomalies',
        description:
          "Every tenant's anomalies and those of no tenant (a reference we have no payment for), newest first (`createdAt`, then `id`, descending). Live ones by default (and those of no mode): `mode=test` shows what test programs made the sandbox say, `mode=all` both. Filter by `status` (`open`: the ones waiting for an operator), `kind` and `tenantId`. Pass `next_cursor` as `cursor` for the next page; the cursor is stable while anomalies are being recorded.",
        querystring: AnomalyListQuery,
        response: { 200: AnomalyList, ...errorResponses(400) },
      },
    },
    async function adminListAnomalies(request) {
      const { status, kind, mode = 'live', tenantId, limit, cursor } = request.query;
      const filter = { status, kind, tenantId, ...(mode !== 'all' && { mode }) };
      const page = await anomalies.list(filter, { limit: limit ?? 25, cursor });
      return { data: page.rows.map(anomalyView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}

function adminGetAnomalyRoute(app: App, anomalies: AnomalyService): void {
  app.get(
    '/v1/admin/anomalies/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminGetAnomaly',
        summary: 'Read an anomaly',
        description:
          'One anomaly with its evidence: what we had (`ours`), what the rail said (`theirs`) and the report as it came (`raw`).',
        params: IdParam,
        response: { 200: Answer('The anomaly', Anomaly), ...errorResponses('resource_not_found') },
      },
    },
    async function adminGetAnomaly(request) {
      return anomalyView(await anomalies.get(request.params.id));
    },
  );
}

function adminResolveAnomalyRoute(app: App, anomalies: AnomalyService): void {
  app.post(
    '/v1/admin/anomalies/:id/resolve',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminResolveAnomaly',
        summary: 'Resolve an anomaly with a note',
        description:
          'Marks an open anomaly resolved, with your note and the id of the key that called (`resolvedBy`). It changes nothing else: no payment, no ledger entry (a correction, if one is due, is a separate action). 409 `anomaly_already_resolved` when it was resolved before.',
        params: IdParam,
        body: ResolveAnomalyBody,
        response: {
          200: Answer('The anomaly, resolved', Anomaly),
          ...errorResponses('resource_not_found', 'anomaly_already_resolved'),
        },
      },
    },
    async function adminResolveAnomaly(request) {
      assert(request.auth, 'route reached without authentication');
      return anomalyView(await anomalies.resolve(request.params.id, request.body.note, auditActorOf(request)));
    },
  );
}
