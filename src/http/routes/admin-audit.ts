import { Type } from '@sinclair/typebox';
import type { Database } from '../../db/database.ts';
import { listAudit, type AuditRow } from '../../db/repositories/audit.ts';
import { pageOf, positionAfter } from '../../domain/page-cursor.ts';
import { Component, errorResponses, ModeSchema, Nullable, PageQuery, StringEnum, Uuid } from '../schemas/common.ts';
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES } from '../../domain/audit.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';

const RecordedFields = Nullable(
  Type.Object(
    {},
    {
      additionalProperties: true,
      description:
        'The fields the action changed, redacted: secrets and keys never, account numbers and phones by their last 4 digits',
    },
  ),
);

const AuditEntryView = Component(
  'AuditEntry',
  Type.Object(
    {
      id: Uuid(),
      createdAt: Type.String({ format: 'date-time', description: 'When the change committed (its transaction began)' }),
      actorKeyId: Uuid('The API key that acted'),
      actorTenantId: Uuid("That key's tenant (the platform's own tenant for the platform key)"),
      action: Type.String({
        description: 'What was done, as a stable dotted name: `tenant.update`, `api_key.revoke`, `funding.create`…',
        example: 'api_key.revoke',
      }),
      targetType: Type.String({
        description:
          'What it was done to: `tenant`, `api_key`, `funding`, `webhook_endpoint`, `program`, `customer`, `rate`, `limit_rule`, `event`, `payment`…',
        example: 'api_key',
      }),
      targetId: Type.String({
        description: "The target's id (an asset code for a rate, the tenant id for a program or webhook endpoint)",
      }),
      targetTenantId: Nullable(Uuid('The tenant the target belongs to; null for a rate or a platform limit rule')),
      targetMode: Nullable(ModeSchema),
      before: RecordedFields,
      after: RecordedFields,
      requestId: Nullable(
        Type.String({ description: 'The `x-request-id` of the request that acted: find its log lines with it' }),
      ),
    },
    { description: 'One admin or operator action, recorded in the same transaction as the change' },
  ),
);

const AuditPage = Component(
  'AuditPage',
  Type.Object(
    {
      data: Type.Array(AuditEntryView),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
      ),
    },
    { description: 'One page of the audit trail, newest first' },
  ),
);

const AuditQuery = Type.Object({
  ...PageQuery,
  actorKeyId: Type.Optional(Uuid('Only what this API key did')),
  targetType: Type.Optional(StringEnum(AUDIT_TARGET_TYPES, { description: 'Only actions on this kind of target' })),
  targetId: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Only actions on this target (with or without `targetType`)',
    }),
  ),
  tenantId: Type.Optional(Uuid("Only actions on this tenant's objects")),
  action: Type.Optional(StringEnum(AUDIT_ACTIONS, { description: 'Only this action' })),
  from: Type.Optional(
    Type.String({ format: 'date-time', maxLength: 40, description: 'Only actions at or after this instant' }),
  ),
  to: Type.Optional(
    Type.String({ format: 'date-time', maxLength: 40, description: 'Only actions before this instant' }),
  ),
});

function auditView(row: AuditRow) {
  return {
    id: row.id,
    createdAt: row.created_at.toISOString(),
    actorKeyId: row.actor_key_id,
    actorTenantId: row.actor_tenant_id,
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    targetTenantId: row.target_tenant_id,
    targetMode: row.target_mode,
    before: row.before,
    after: row.after,
    requestId: row.request_id,
  };
}

export async function adminAuditRoutes(app: App, db: Database): Promise<void> {
  adminListAuditRoute(app, db);
}

function adminListAuditRoute(app: App, db: Database): void {
  app.get(
    '/v1/admin/audit',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListAudit',
        summary: 'The audit trail: who did what',
        description: `Every admin or operator action (tenants, keys, fundings, closes, senders, webhook endpoints and secrets, rates,
limit rules, event retries, payment rechecks, sandbox simulations), newest first, each written in the same transaction as
the change it records: the acting key, the action, its target, the changed fields before and after (never a secret or a key;
account numbers and phones by their last 4 digits) and the request id. Rows are never changed or removed. Filters combine;
\`from\` is inclusive, \`to\` exclusive. Pass \`next_cursor\` as \`cursor\` for the next page (opaque, stable while actions are recorded).
What a key did: \`?actorKeyId=…\`; what was done to a tenant: \`?tenantId=…\`.`,
        querystring: AuditQuery,
        response: { 200: AuditPage, ...errorResponses(400, 403) },
      },
    },
    async function adminListAudit(request) {
      const { limit = 25, cursor, from, to, ...filter } = request.query;
      const rows = await listAudit(db, {
        limit,
        after: positionAfter(cursor),
        filter: {
          ...filter,
          from: from === undefined ? undefined : new Date(from),
          to: to === undefined ? undefined : new Date(to),
        },
      });
      const page = pageOf(rows, limit);
      return { data: page.rows.map(auditView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}
