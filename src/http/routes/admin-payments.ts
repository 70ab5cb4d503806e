import { Type } from '@sinclair/typebox';
import type { Database } from '../../db/database.ts';
import { findPaymentById, requeueResolution } from '../../db/repositories/payments.ts';
import type { Clock } from '../../domain/clock.ts';
import { ApiError, notFound } from '../errors.ts';
import { Answer, DateTime, errorResponses, ModeSchema, Nullable, StringEnum, Uuid } from '../schemas/common.ts';
import { PAYMENT_STATUSES } from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';

const Requeued = Type.Object({
  id: Uuid(),
  tenantId: Uuid(),
  mode: ModeSchema,
  status: StringEnum(PAYMENT_STATUSES, { description: '`submitted` or `unknown`: still unresolved' }),
  nextCheckAt: Nullable(DateTime()),
  checkAttempts: Type.Integer(),
});

/** Operator actions on payments (platform key; outside the public contract). */
export async function adminPaymentRoutes(app: App, db: Database, clock: Clock): Promise<void> {
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
with a fresh backoff. 409 \`payment_already_resolved\` when it is settled, failed or reversed.`,
        params: IdParam,
        response: { 200: Answer('The payment, back on the resolution schedule', Requeued), ...errorResponses('resource_not_found', 'payment_already_resolved') },
      },
    },
    async (request) => {
      const row = await requeueResolution(db, request.params.id, clock.now());
      if (!row) {
        const existing = await findPaymentById(db, request.params.id);
        if (!existing) throw notFound('payment');
        throw new ApiError('payment_already_resolved', `This payment is already ${existing.status}: there is nothing to ask the rail.`, { status: existing.status });
      }
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
