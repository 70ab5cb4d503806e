import { Type } from '@sinclair/typebox';
import { CHECK_SUMMARIES, RECONCILIATION_CHECKS } from '../../domain/reconciliation.ts';
import { DISCREPANCIES_STORED_PER_CHECK_MAX } from '../../services/reconciliation-run.ts';
import { Component, DateTime, ModeSchema, Nullable, PageQuery, StringEnum, Uuid } from './common.ts';

const RUN_STATUSES = ['queued', 'running', 'completed', 'failed', 'abandoned'] as const;
const RUN_SCOPES = ['full', 'incremental'] as const;

/** A tenant id the request names: a UUID, so at most 36 characters. */
const TenantIdInput = (description: string) => ({ ...Uuid(description), maxLength: 36 });

export const StartRunsBody = Type.Object({
  tenantId: Type.Optional(TenantIdInput('Reconcile this tenant only (omit: every tenant and mode with books)')),
  mode: Type.Optional(StringEnum(['test', 'live'] as const, { description: 'Reconcile this mode only (omit: both)' })),
  scope: Type.Optional(
    StringEnum(RUN_SCOPES, {
      description:
        '`full` (the default): prove the whole history. `incremental`: prove what was written since the last completed run, as the schedule does (a tenant and mode with no completed run yet, or whose last full proof is older than RECONCILE_FULL_INTERVAL_S, is proven whole)',
    }),
  ),
});

const CheckResult = Type.Object({
  check: StringEnum(RECONCILIATION_CHECKS, {
    description: `What the check proves:\n${RECONCILIATION_CHECKS.map((c) => `- \`${c}\`: ${CHECK_SUMMARIES[c]}`).join('\n')}`,
  }),
  verdict: StringEnum(['pass', 'fail', 'not_run'] as const, {
    description: '`not_run`: the run ended (failed or abandoned) before this check',
  }),
  discrepancies: Type.Integer({ minimum: 0, description: 'Discrepancies this check found' }),
  stored: Type.Integer({
    minimum: 0,
    description: `How many of them the run stored with their evidence (the first ${DISCREPANCIES_STORED_PER_CHECK_MAX} of each check)`,
  }),
});

const runFields = {
  id: Uuid(),
  tenantId: Uuid(),
  mode: ModeSchema,
  trigger: StringEnum(['schedule', 'operator'] as const, {
    description: 'Queued by the schedule (RECONCILE_INTERVAL_S) or by an operator',
  }),
  status: StringEnum(RUN_STATUSES, {
    description:
      '`queued` (waiting for a worker), `running`, then `completed` (every check ran; see `clean`), `failed` (a check could not run: `error`) or `abandoned` (the process running it stopped)',
  }),
  scope: StringEnum(RUN_SCOPES, {
    description:
      'While queued, what was asked for; once ended, what the run did: `full` proved the whole history, `incremental` what was written since the run named by `sinceRunId`',
  }),
  sinceRunId: Nullable(Uuid('An incremental run: the completed run whose checkpoint it started from')),
  clean: Nullable(Type.Boolean({ description: 'Completed with no discrepancy; null until completed' })),
  requestedAt: DateTime(),
  startedAt: Nullable(DateTime()),
  finishedAt: Nullable(DateTime()),
  discrepancyCount: Type.Integer({ minimum: 0, description: 'Every discrepancy found, stored or not' }),
  checks: Type.Array(CheckResult, { description: 'Every check, in the order they are listed here' }),
  examined: Type.Object(
    {
      payments: Type.Integer({
        minimum: 0,
        description: 'Payments proven one by one (an incremental run: those written since its checkpoint)',
      }),
      ledgerTransactions: Type.Integer({
        minimum: 0,
        description: 'Ledger transactions proven one by one (an incremental run: those written since its checkpoint)',
      }),
      accounts: Type.Integer({ minimum: 0, description: 'Account rows (slots)' }),
      limitCounters: Type.Integer({ minimum: 0 }),
    },
    { description: 'What the run read' },
  ),
  error: Nullable(Type.String({ description: 'Why a run failed or was abandoned' })),
};

const ReconciliationRun = Component('ReconciliationRun', Type.Object(runFields));

const ReconciliationDiscrepancy = Component(
  'ReconciliationDiscrepancy',
  Type.Object({
    check: StringEnum(RECONCILIATION_CHECKS),
    subjectType: StringEnum(['ledger_transaction', 'account', 'payment', 'limit_counter', 'daily_close'] as const),
    subjectId: Type.String({
      description:
        'The transaction, payment or counter (`day|kind|subject|method`), the account (`BS/in_flight`), or the close (`asset:first day`)',
    }),
    facet: Type.String({
      description:
        'What of the subject disagrees: an account (`BS/in_flight`), an event type, `entries`, `usage`, `balance`…',
    }),
    paymentId: Nullable(Uuid()),
    expected: Type.String({ description: 'The figure the other records imply' }),
    found: Type.String({ description: 'The figure stored' }),
    detail: Type.Object(
      {},
      { additionalProperties: true, description: 'The evidence: ids and the figures behind the two above' },
    ),
  }),
);

export const ReconciliationRunDetail = Component(
  'ReconciliationRunDetail',
  Type.Object({
    ...runFields,
    discrepancies: Type.Array(ReconciliationDiscrepancy, {
      description: 'The stored discrepancies, in the order found',
    }),
  }),
);

export const StartedRuns = Component(
  'StartedRuns',
  Type.Object({
    data: Type.Array(ReconciliationRun, {
      description:
        'The run of each tenant and mode asked for: queued now, or the one already waiting or under way (at most 100 listed)',
    }),
    total: Type.Integer({
      minimum: 0,
      description: 'How many tenants and modes have a run queued or under way after this request',
    }),
  }),
);

export const ReconciliationRunList = Component(
  'ReconciliationRunList',
  Type.Object({
    data: Type.Array(ReconciliationRun),
    has_more: Type.Boolean(),
    next_cursor: Nullable(
      Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
    ),
  }),
);

export const ListRunsQuery = Type.Object({
  ...PageQuery,
  tenantId: Type.Optional(TenantIdInput('Only this tenant’s runs')),
  mode: Type.Optional(StringEnum(['test', 'live'] as const, { description: 'Only runs of this mode' })),
  status: Type.Optional(StringEnum(RUN_STATUSES, { description: 'Only runs in this status' })),
});
