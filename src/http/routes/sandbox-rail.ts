import { Type } from '@sinclair/typebox';
import { SANDBOX_NOTICES_PENDING_MAX } from '../../rails/sandbox-rail.ts';
import {
  DEFAULT_SIMULATED_FAILURE_REASON,
  DEFAULT_SIMULATED_REVERSAL_REASON,
  SIMULATED_FAILURE_REASONS,
  SIMULATED_REVERSAL_REASONS,
  type SandboxSimulationService,
} from '../../services/sandbox-simulation.ts';
import { partitionOf } from '../context.ts';
import {
  AmountInteger,
  Answer,
  Component,
  DateTime,
  errorResponses,
  Nullable,
  StringEnum,
  Uuid,
} from '../schemas/common.ts';
import type { App } from '../types.ts';

const list = (values: readonly string[]) => values.map((v) => `\`${v}\``).join(', ');
const NOTIFIED_STATUSES = ['settled', 'failed', 'reversed'] as const;
const BANK_REFERENCE = '^[0-9]{12}$';

const NotificationBody = Type.Object({
  paymentId: Type.Optional(
    Uuid(
      'One of your test payments. Leave it out for a notification about a reference nobody has (the rail makes one up)',
    ),
  ),
  status: StringEnum(NOTIFIED_STATUSES, {
    description: 'What the rail says happened to the transfer',
    example: 'settled',
  }),
  reason: Type.Optional(
    StringEnum(SIMULATED_REVERSAL_REASONS, {
      description:
        `With \`failed\` (one of ${list(SIMULATED_FAILURE_REASONS)}; default \`${DEFAULT_SIMULATED_FAILURE_REASON}\`) ` +
        `or \`reversed\` (one of ${list(SIMULATED_REVERSAL_REASONS)}; default \`${DEFAULT_SIMULATED_REVERSAL_REASON}\`). Refused with \`settled\`.`,
    }),
  ),
  amount: Type.Optional(
    AmountInteger(
      "The amount the rail says moved, in minor units. Default: the payment's; none for a reference nobody has",
    ),
  ),
  bankReference: Type.Optional(
    Type.String({
      pattern: BANK_REFERENCE,
      maxLength: 12,
      description:
        "12 digits. Default: the payment's, else the one the rail gave the transfer, else a new one. Refused with `failed`",
      'x-error-message': 'must be 12 digits',
    }),
  ),
});

const QueuedNotification = Component(
  'SandboxRailNotification',
  Type.Object(
    {
      id: Type.String({ description: 'The notification id the rail gives it' }),
      reference: Uuid('The transfer it names: the payment id, or a reference nobody has'),
      paymentId: Nullable(Uuid()),
      status: StringEnum(NOTIFIED_STATUSES),
      reason: Nullable(Type.String()),
      amount: Nullable(
        Type.String({ pattern: '^[0-9]+$', description: 'Minor units; null: the notification names no amount' }),
      ),
      bankReference: Nullable(Type.String({ pattern: BANK_REFERENCE })),
      occurredAt: DateTime(),
    },
    { description: "A notification the sandbox rail will send on the reaper's next pass" },
  ),
);

const DESCRIPTION = `Test mode only. Makes the sandbox rail notify what you say about a transfer, as a real rail's webhook
might: its outcome (\`settled\`, \`failed\`) or a return (\`reversed\`). The reaper hears it on its next pass (within
REAPER_INTERVAL_MS) and treats it as any rail notification:

- one that agrees with the payment, or resolves a \`submitted\` or \`unknown\` one, is applied (ledger entry, history
  by actor \`provider_event\`, outcome event) as the rail's own outcomes are;
- one that contradicts our records — \`settled\` for a failed payment, \`failed\` for a settled one, \`reversed\` for a
  failed payment or for one the rail's own status does not show settled, an \`amount\` or \`bankReference\` other than
  the payment's, a reference nobody has (no \`paymentId\`) — changes nothing: it is recorded as an anomaly, once,
  for the platform operator.

Either way the rail's notification is acknowledged only after that is committed. The rail's own record of
the transfer is not changed (lookups still answer what its trigger scheduled). At most
${SANDBOX_NOTICES_PENDING_MAX} of your notifications wait at once; past that, 503 \`overloaded\`. A live key gets 404.`;

/** Sandbox tools that act on the sandbox rail itself. */
export async function sandboxRailRoutes(app: App, sandbox: SandboxSimulationService): Promise<void> {
  sendSandboxRailNotificationRoute(app, sandbox);
}

function sendSandboxRailNotificationRoute(app: App, sandbox: SandboxSimulationService): void {
  app.post(
    '/v1/sandbox/rail-notifications',
    {
      config: { scopes: ['payments:write'] },
      schema: {
        tags: ['Sandbox'],
        operationId: 'sendSandboxRailNotification',
        summary: 'Make the sandbox rail notify an outcome, a return or a contradiction',
        description: DESCRIPTION,
        body: NotificationBody,
        response: {
          202: Answer('The notification, queued at the sandbox rail', QueuedNotification),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function sendSandboxRailNotification(request, reply) {
      const queued = await sandbox.notify(partitionOf(request.auth), request.body);
      reply.code(202);
      return {
        id: queued.id,
        reference: queued.reference,
        paymentId: queued.paymentId,
        status: queued.status,
        reason: queued.reason,
        amount: queued.amount === null ? null : queued.amount.toString(),
        bankReference: queued.bankReference,
        occurredAt: queued.occurredAt.toISOString(),
      };
    },
  );
}
