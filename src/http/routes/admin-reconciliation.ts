import type { DiscrepancyRow, RunRow } from '../../db/repositories/reconciliation-runs.ts';
import { RECONCILIATION_CHECKS } from '../../domain/reconciliation.ts';
import type { ReconciliationService } from '../../services/reconciliation.ts';
import { DISCREPANCIES_STORED_PER_CHECK_MAX } from '../../services/reconciliation-run.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import {
  ListRunsQuery,
  ReconciliationRunDetail,
  ReconciliationRunList,
  StartedRuns,
  StartRunsBody,
} from '../schemas/reconciliation.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';
import { auditActorOf } from '../context.ts';

/** Runs listed in the answer to a request that queued more. */
const STARTED_SHOWN_MAX = 100;

function runView(row: RunRow) {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    mode: row.mode,
    trigger: row.trigger,
    status: row.status,
    scope: row.scope,
    sinceRunId: row.since_run_id,
    clean: row.status === 'completed' ? row.discrepancy_count === 0n : null,
    requestedAt: row.requested_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
    discrepancyCount: Number(row.discrepancy_count),
    checks: RECONCILIATION_CHECKS.map((check) => ({
      check,
      ...(row.checks[check] ?? { verdict: 'not_run' as const, discrepancies: 0, stored: 0 }),
    })),
    examined: { payments: 0, ledgerTransactions: 0, accounts: 0, limitCounters: 0, ...row.examined },
    error: row.error,
  };
}

function discrepancyView(row: DiscrepancyRow) {
  return {
    check: row.check_name,
    subjectType: row.subject_type,
    subjectId: row.subject_id,
    facet: row.facet,
    paymentId: row.payment_id,
    expected: row.expected,
    found: row.found,
    detail: row.detail,
  };
}

const READS = 'Reconciliation proves the books from the database; it never changes them (see the operations guide).';

/** Reconciliation runs (platform key): start them, list them, read one with its evidence. */
export async function adminReconciliationRoutes(app: App, reconciliation: ReconciliationService): Promise<void> {
  app.addHook('onClose', () => reconciliation.stop());
  adminStartReconciliationRoute(app, reconciliation);
  adminListReconciliationRunsRoute(app, reconciliation);
  adminGetReconciliationRunRoute(app, reconciliation);
}

function adminStartReconciliationRoute(app: App, reconciliation: ReconciliationService): void {
  app.post(
    '/v1/admin/reconciliation/runs',
    {
      config: { ...ADMIN, modeReadOnly: true },
      schema: {
        tags: ['Admin'],
        operationId: 'adminStartReconciliation',
        summary: 'Reconcile now',
        description: `Queues a reconciliation run for one tenant (\`tenantId\`; one \`mode\` or both), or for every tenant and mode
with books (\`{}\`, or only \`mode\`), and answers **202** at once with the runs: follow one with
\`GET /v1/admin/reconciliation/runs/{id}\` until it is \`completed\`, \`failed\` or \`abandoned\`. A worker-role process
runs it (this one, unless it runs with ROLE=api). A tenant and mode that already has a run waiting or under way gets
no second one: that run is answered (a waiting incremental run asked for again as \`full\` becomes full). A run
proves the whole history unless \`scope\` is \`incremental\`. ${READS}`,
        body: StartRunsBody,
        response: {
          202: Answer('The runs, queued (or already waiting or under way)', StartedRuns),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminStartReconciliation(request, reply) {
      const runs = await reconciliation.request(
        { tenantId: request.body.tenantId, mode: request.body.mode, scope: request.body.scope },
        auditActorOf(request),
      );
      return reply.code(202).send({ data: runs.slice(0, STARTED_SHOWN_MAX).map(runView), total: runs.length });
    },
  );
}

function adminListReconciliationRunsRoute(app: App, reconciliation: ReconciliationService): void {
  app.get(
    '/v1/admin/reconciliation/runs',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListReconciliationRuns',
        summary: 'List reconciliation runs',
        description:
          'Runs of every tenant (or of `tenantId`, `mode`, `status`), newest request first (`requestedAt`, then `id`, descending). Pass `next_cursor` as `cursor` for the next page; the cursor is opaque and stable while runs are being queued.',
        querystring: ListRunsQuery,
        response: { 200: Answer('One page of runs, newest first', ReconciliationRunList), ...errorResponses() },
      },
    },
    async function adminListReconciliationRuns(request) {
      const q = request.query;
      const page = await reconciliation.list({
        limit: q.limit ?? 25,
        cursor: q.cursor,
        tenantId: q.tenantId,
        mode: q.mode,
        status: q.status,
      });
      return { data: page.rows.map(runView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}

function adminGetReconciliationRunRoute(app: App, reconciliation: ReconciliationService): void {
  app.get(
    '/v1/admin/reconciliation/runs/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminGetReconciliationRun',
        summary: 'Read a reconciliation run and its discrepancies',
        description: `The run, every check's verdict, and the discrepancies it stored with their evidence (the first ${DISCREPANCIES_STORED_PER_CHECK_MAX} of each check;
\`checks[].discrepancies\` counts them all). ${READS}`,
        params: IdParam,
        response: {
          200: Answer('The run and its evidence', ReconciliationRunDetail),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminGetReconciliationRun(request) {
      const { run, discrepancies } = await reconciliation.get(request.params.id);
      return { ...runView(run), discrepancies: discrepancies.map(discrepancyView) };
    },
  );
}
