import { Type } from '@sinclair/typebox';
import {
  DEFAULT_SIMULATED_FAILURE_REASON,
  DEFAULT_SIMULATED_REVERSAL_REASON,
  SIMULATED_FAILURE_REASONS,
  SIMULATED_OUTCOMES,
  SIMULATED_REVERSAL_REASONS,
  SIMULATED_SETTLEMENT_REASON,
  type SandboxSimulationService,
} from '../../services/sandbox-simulation.ts';
import { auditActorOf, partitionOf } from '../context.ts';
import { Answer, errorResponsesDescribed, StringEnum } from '../schemas/common.ts';
import { Payment } from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { paymentView } from './payments.ts';

const list = (values: readonly string[]) => values.map((v) => `\`${v}\``).join(', ');

const SimulationBody = Type.Object({
  outcome: StringEnum(SIMULATED_OUTCOMES, {
    description: '`settle` or `fail` a `submitted` or `unknown` payment; `reverse` a `settled` one',
    example: 'settle',
  }),
  reason: Type.Optional(
    StringEnum(SIMULATED_REVERSAL_REASONS, {
      description:
        `Only with \`fail\` (one of ${list(SIMULATED_FAILURE_REASONS)}; default \`${DEFAULT_SIMULATED_FAILURE_REASON}\`) ` +
        `or \`reverse\` (one of ${list(SIMULATED_REVERSAL_REASONS)}; default \`${DEFAULT_SIMULATED_REVERSAL_REASON}\`). Refused with \`settle\`.`,
    }),
  ),
});

const DESCRIPTION = `Test mode only. Applies an outcome to one of your test payments now, instead of waiting for the
sandbox rail's schedule, exactly as if the rail had reported it: the ledger entry, the transition in the
payment's history (actor \`system\`), one outcome event and hence its webhook, with the same payload as the
rail's outcomes.

- \`settle\` (a \`submitted\` or \`unknown\` payment): \`settled\`, status reason \`${SIMULATED_SETTLEMENT_REASON}\`,
  \`settled_at\` now and a \`bank_reference\`; event \`payment.settled\`.
- \`fail\` (a \`submitted\` or \`unknown\` payment): \`failed\` with \`reason\` (default \`${DEFAULT_SIMULATED_FAILURE_REASON}\`);
  the charge is returned (\`compensated: true\`, fee 0) and the limit usage given back; event \`payment.failed\`.
- \`reverse\` (a \`settled\` payment): \`reversed\` with \`reason\` (default \`${DEFAULT_SIMULATED_REVERSAL_REASON}\`); the
  delivered amount returns to your balance, the fee is kept; event \`payment.reversed\`.

The sandbox rail records the simulated outcome in the same transaction and drops whatever the
beneficiary's trigger had scheduled (a later failure, settlement or return), so nothing else happens to
the payment afterwards except a reversal you simulate. A payment the outcome does not apply to is
answered 409 and nothing changes. A live key gets 404, as for any payment outside its tenant and mode.
Answers the payment as \`GET /v1/payments/{id}\` does. Not idempotent: the same call again is a 409.`;

const CONFLICT = `Nothing changed. \`payment_already_resolved\`: \`settle\` or \`fail\` of a payment that is already
settled, failed or reversed. \`payment_not_settled\`: \`reverse\` of a payment that is not settled. \`meta.status\`
is the payment's status.`;

/** Sandbox tools that act on the caller's test payments. */
export async function sandboxPaymentRoutes(app: App, simulation: SandboxSimulationService): Promise<void> {
  simulatePaymentOutcomeRoute(app, simulation);
}

function simulatePaymentOutcomeRoute(app: App, simulation: SandboxSimulationService): void {
  app.post(
    '/v1/sandbox/payments/:id/simulate',
    {
      config: { scopes: ['payments:write'] },
      schema: {
        tags: ['Sandbox'],
        operationId: 'simulatePaymentOutcome',
        summary: 'Settle, fail or reverse a test payment now',
        description: DESCRIPTION,
        params: IdParam,
        body: SimulationBody,
        response: {
          200: Answer('The payment with the outcome applied, as `GET /v1/payments/{id}` answers it', Payment),
          ...errorResponsesDescribed(
            { 409: CONFLICT },
            'resource_not_found',
            'payment_already_resolved',
            'payment_not_settled',
          ),
        },
      },
    },
    async function simulatePaymentOutcome(request) {
      const { payment, transitions } = await simulation.simulate(
        partitionOf(request.auth),
        request.params.id,
        request.body,
        auditActorOf(request),
      );
      return paymentView(payment, transitions);
    },
  );
}
