import { Type } from '@sinclair/typebox';
import type { PaymentReads } from '../../services/payment-reads.ts';
import { auditActorOf } from '../context.ts';
import {
  Answer,
  Component,
  DateTime,
  errorResponses,
  ModeSchema,
  Nullable,
  StringEnum,
  Uuid,
} from '../schemas/common.ts';
import { PAYMENT_STATUSES, PaymentFields } from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';
import { paymentView } from './payments.ts';

const Requeued = Type.Object({
  id: Uuid(),
  tenantId: Uuid(),
  mode: ModeSchema,
  status: StringEnum(PAYMENT_STATUSES, { description: '`submitted` or `unknown`: still unresolved' }),
  nextCheckAt: Nullable(DateTime()),
  checkAttempts: Type.Integer(),
});

const AdminPayment = Component(
  'AdminPayment',
  Type.Object(
    {
      ...PaymentFields,
      tenant_id: Uuid(),
      mode: ModeSchema,
      rail: Nullable(
        Type.String({
          description:
            'The rail that carries the payment (null: failed before any rail, or made before payments recorded their rail). See GET /v1/admin/rails',
        }),
      ),
      created_by_key_id: Nullable(
        Uuid(
          'The API key that made the payout (null for payments made before keys were recorded). Find it with GET /v1/admin/tenants/{id}/api-keys; what else it did with GET /v1/admin/audit?actorKeyId=…',
        ),
      ),
    },
    {
      description:
        'A payment as its tenant reads it, with what only the platform sees: its tenant, mode, rail and the key that created it',
    },
  ),
);

const TenantPaymentParams = Type.Object({ id: Uuid(), paymentId: Uuid() });

/** Operator views and actions on payments (platform key; outside the public contract). */
export async function adminPaymentRoutes(app: App, payments: PaymentReads): Promise<void> {
  adminGetPaymentRoute(app, payments);
  adminRecheckPaymentRoute(app, payments);
}

function adminGetPaymentRoute(app: App, payments: PaymentReads): void {
  app.get(
    '/v1/admin/tenants/:id/payments/:paymentId',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminGetPayment',
        summary: "Read one of a tenant's payments, with the key that created it",
        description: `The payment as \`GET /v1/payments/{id}\` answers its tenant (in either mode), plus \`tenant_id\`, \`mode\`, \`rail\`
(the rail that carries it) and \`created_by_key_id\`: the API key that made the payout. The tenant's own answers never show the key.`,
        params: TenantPaymentParams,
        response: {
          200: Answer('The payment, with its tenant, mode and creating key', AdminPayment),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminGetPayment(request) {
      const { payment, transitions } = await payments.tenantPayment(request.params.id, request.params.paymentId);
      return {
        ...paymentView(payment, transitions),
        tenant_id: payment.tenant_id,
        mode: payment.mode,
        rail: payment.rail,
        created_by_key_id: payment.created_by_key_id,
      };
    },
  );
}

function adminRecheckPaymentRoute(app: App, payments: PaymentReads): void {
  app.post(
    '/v1/admin/payments/:id/recheck',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminRecheckPayment',
        summary: 'Ask the rail about an unresolved payment again',
        description: `The reaper asks the rail about a \`submitted\` or \`unknown\` payment on a growing backoff and stops after
REAPER_CHECK_ATTEMPTS_MAX questions, leaving it unresolved (never invented), logged at warn and counted in
\`bolivar_reaper_parked_payments_total\` / \`bolivar_payments_parked_unresolved\`. This puts it back on the schedule now,
with a fresh backoff, and records it in the audit trail. 409 \`payment_already_resolved\` when it is settled, failed or reversed.`,
        params: IdParam,
        response: {
          200: Answer('The payment, back on the resolution schedule', Requeued),
          ...errorResponses('resource_not_found', 'payment_already_resolved'),
        },
      },
    },
    async function adminRecheckPayment(request) {
      const row = await payments.recheck(request.params.id, auditActorOf(request));
      return {
        id: row.id,
        tenantId: row.tenant_id,
        mode: row.mode,
        status: row.status,
        nextCheckAt: row.next_check_at ? row.next_check_at.toISOString() : null,
        checkAttempts: row.check_attempts,
      };
    },
  );
}
