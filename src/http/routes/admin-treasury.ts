import type { Database } from '../../db/database.ts';
import { validateSender } from '../../domain/sender.ts';
import { setCustomerStoredSender, setProgramDefaultSender } from '../../services/senders.ts';
import type { TreasuryService } from '../../services/treasury.ts';
import { validationFailed } from '../../domain/errors.ts';
import { Type } from '@sinclair/typebox';
import { Answer, errorResponses, Uuid } from '../schemas/common.ts';
import { ClosedPosition, FundingBody, ModeBody, SenderBody, StoredSender, TreasuryPosition } from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { auditActorOf, idempotencyOf, partitionOf } from '../context.ts';
import { ADMIN, customerTenant } from './admin-tenants.ts';
import { sendWriterAnswer } from './payouts.ts';

function checkedSender(input: Record<string, unknown>) {
  const result = validateSender(input, 'sender');
  if (!result.ok) throw validationFailed(result.errors);
  return result.sender;
}

export async function adminTreasuryRoutes(app: App, db: Database, treasury: TreasuryService): Promise<void> {
  adminFundTenantRoute(app, treasury);
  adminCloseTenantRoute(app, treasury);
  adminSetDefaultSenderRoute(app, db);
  adminSetCustomerSenderRoute(app, db);
}

function adminFundTenantRoute(app: App, treasury: TreasuryService): void {
  app.post(
    '/v1/admin/tenants/:id/fundings',
    {
      config: { ...ADMIN, idempotency: 'required', idempotencyInWriter: true },
      schema: {
        tags: ['Admin'],
        operationId: 'adminFundTenant',
        summary: "Credit a tenant's prefunding balance",
        description:
          'One balanced ledger entry (treasury cash against the tenant prefunding account), committed in the same transaction as the `Idempotency-Key` (required): a retried funding is credited once and answered the same, whatever happened in between.',
        params: IdParam,
        body: FundingBody,
        response: { 201: Answer("The tenant's position in that asset, funded", TreasuryPosition), ...errorResponses('resource_not_found') },
      },
    },
    async function adminFundTenant(request, reply) {
      const { mode, asset, amount } = request.body;
      const answer = await treasury.fund(
        { ...partitionOf(request.auth), ...idempotencyOf(request) },
        { tenantId: request.params.id, mode, asset, amount: BigInt(amount) },
        (position) => JSON.stringify(position),
        auditActorOf(request),
      );
      return sendWriterAnswer(reply, answer);
    },
  );
}

function adminCloseTenantRoute(app: App, treasury: TreasuryService): void {
  app.post(
    '/v1/admin/tenants/:id/close',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminCloseTenant',
        summary: 'Run the daily close now',
        description:
          'The daily close now, every asset: a credit tenant settles what it drew (`creditDrawn`), net of what it is owed (refunds of payouts that failed or were returned after the previous close, shown in `prefundingBalance`). A prefunded tenant only settles a leftover draw; its prefunding is never netted. The scheduled close does the same after Caracas midnight. `closedAmount` is the BS draw settled; `closed` lists every asset.',
        params: IdParam,
        body: ModeBody,
        response: { 200: Answer('The position after the close, and what it settled', ClosedPosition), ...errorResponses('resource_not_found') },
      },
    },
    async function adminCloseTenant(request) {
      return treasury.close(request.params.id, request.body.mode, undefined, auditActorOf(request));
    },
  );
}

function adminSetDefaultSenderRoute(app: App, db: Database): void {
  app.put(
    '/v1/admin/tenants/:id/default-sender',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminSetDefaultSender',
        summary: "Set the program's default sender",
        description: 'Step 3 of sender resolution: used by payouts that carry no sender block and whose customer has no stored sender.',
        params: IdParam,
        body: SenderBody,
        response: { 200: Answer('The default sender, stored (normalised)', StoredSender), ...errorResponses('resource_not_found') },
      },
    },
    async function adminSetDefaultSender(request) {
      await customerTenant(db, request.params.id);
      const sender = checkedSender(request.body.sender);
      await setProgramDefaultSender(db, { tenantId: request.params.id, mode: request.body.mode }, sender, auditActorOf(request));
      return { mode: request.body.mode, sender };
    },
  );
}

function adminSetCustomerSenderRoute(app: App, db: Database): void {
  app.put(
    '/v1/admin/tenants/:id/customers/:customerId',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminSetCustomerSender',
        summary: "Set a customer's stored sender",
        description: 'Step 2 of sender resolution: payouts with this `customerId` and no sender block use it.',
        params: Type.Object({ id: Uuid(), customerId: Uuid() }),
        body: SenderBody,
        response: { 200: Answer("The customer's sender, stored (normalised)", StoredSender), ...errorResponses('resource_not_found') },
      },
    },
    async function adminSetCustomerSender(request) {
      await customerTenant(db, request.params.id);
      const sender = checkedSender(request.body.sender);
      await setCustomerStoredSender(db, { tenantId: request.params.id, mode: request.body.mode }, request.params.customerId, sender, auditActorOf(request));
      return { mode: request.body.mode, sender };
    },
  );
}
