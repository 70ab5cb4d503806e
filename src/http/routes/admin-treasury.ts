import type { SenderService } from '../../services/senders.ts';
import type { TreasuryService } from '../../services/treasury.ts';
import { Type } from '@sinclair/typebox';
import { Answer, errorResponses, Uuid } from '../schemas/common.ts';
import {
  ClosedPosition,
  FundingBody,
  ModeBody,
  SenderBody,
  StoredSender,
  TreasuryPosition,
} from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { auditActorOf, idempotencyOf, partitionOf } from '../context.ts';
import { ADMIN } from './admin-tenants.ts';
import { sendWriterAnswer } from './payouts.ts';

export async function adminTreasuryRoutes(app: App, treasury: TreasuryService, senders: SenderService): Promise<void> {
  adminFundTenantRoute(app, treasury);
  adminCloseTenantRoute(app, treasury);
  adminSetDefaultSenderRoute(app, senders);
  adminSetCustomerSenderRoute(app, senders);
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
        response: {
          201: Answer("The tenant's position in that asset, funded", TreasuryPosition),
          ...errorResponses('resource_not_found'),
        },
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
        response: {
          200: Answer('The position after the close, and what it settled', ClosedPosition),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminCloseTenant(request) {
      return treasury.close(request.params.id, request.body.mode, undefined, auditActorOf(request));
    },
  );
}

function adminSetDefaultSenderRoute(app: App, senders: SenderService): void {
  app.put(
    '/v1/admin/tenants/:id/default-sender',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminSetDefaultSender',
        summary: "Set the program's default sender",
        description:
          'Step 3 of sender resolution: used by payouts that carry no sender block and whose customer has no stored sender.',
        params: IdParam,
        body: SenderBody,
        response: {
          200: Answer('The default sender, stored (normalised)', StoredSender),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminSetDefaultSender(request) {
      const sender = await senders.setProgramDefault(
        { tenantId: request.params.id, mode: request.body.mode },
        request.body.sender,
        auditActorOf(request),
      );
      return { mode: request.body.mode, sender };
    },
  );
}

function adminSetCustomerSenderRoute(app: App, senders: SenderService): void {
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
        response: {
          200: Answer("The customer's sender, stored (normalised)", StoredSender),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminSetCustomerSender(request) {
      const sender = await senders.setCustomerStored(
        { tenantId: request.params.id, mode: request.body.mode },
        request.params.customerId,
        request.body.sender,
        auditActorOf(request),
      );
      return { mode: request.body.mode, sender };
    },
  );
}
