// What the dispatcher POSTs to a program's webhook endpoint: the body of each event type
// (domain/webhooks.ts `deliveryBody`, payloads from domain/payment-messages.ts `eventPayload`) and
// the headers of every attempt (domain/webhooks.ts `deliveryHeaders`). Documented as the `callbacks`
// of POST /v1/payouts and as named components, so a receiver can be typed from the document.
import { Type, type TSchema } from '@sinclair/typebox';
import { PAYOUT_FAILURE_REASONS } from '../../domain/payment-messages.ts';
import { BACKOFF_WAITS_SECONDS, EVENT_TYPES, WEBHOOK_ATTEMPTS_MAX } from '../../domain/webhooks.ts';
import { SANDBOX_REVERSAL_REASON } from '../../rails/sandbox-rail.ts';
import { SIGNATURE_SCHEME } from '../../domain/webhook-signature.ts';
import { AmountString, Asset, Component, StringEnum, Uuid } from './common.ts';
import { Metadata } from './metadata.ts';
// The payout schemas are listed before the webhook schemas under components.schemas (the published
// document's order, which follows the order the schema modules load in).
import './payouts.ts';
import { INSTRUMENTS } from '../../domain/instrument.ts';

const PayloadFields = {
  paymentId: Uuid('The payment (the `id` of the payout answer)'),
  asset: Asset,
  amount: AmountString('Amount delivered to (or, once reversed, returned from) the beneficiary, minor units'),
};

const Method = StringEnum(INSTRUMENTS, { description: 'Instrument used' });
const BankReference = Type.String({
  description: "Receipt the beneficiary sees at their bank: the settlement's reference",
});

const PaymentSettledPayload = Component(
  'PaymentSettledPayload',
  Type.Object(
    { ...PayloadFields, bankReference: BankReference, method: Method, metadata: Metadata },
    { description: 'The beneficiary has the funds' },
  ),
);

const PaymentFailedPayload = Component(
  'PaymentFailedPayload',
  Type.Object(
    {
      ...PayloadFields,
      method: StringEnum(INSTRUMENTS, {
        description: 'Instrument used, or the one requested when the payout failed before any was used',
      }),
      reason: StringEnum(PAYOUT_FAILURE_REASONS, { description: 'Why it failed, as in the payout answer' }),
      metadata: Metadata,
    },
    { description: 'Nothing was delivered and the charge is returned (fee included)' },
  ),
);

const PaymentReversedPayload = Component(
  'PaymentReversedPayload',
  Type.Object(
    {
      ...PayloadFields,
      bankReference: BankReference,
      method: Method,
      reason: Type.String({
        description: `Why the bank returned it, as the rail reports it: an open set (\`${SANDBOX_REVERSAL_REASON}\` in the sandbox, or a rail failure reason from a simulation)`,
        example: SANDBOX_REVERSAL_REASON,
      }),
      metadata: Metadata,
    },
    { description: 'A settled disbursement came back: the delivered amount is back in the balance (the fee is kept)' },
  ),
);

const EventBody = (eventType: string, payload: TSchema, description: string) =>
  Type.Object(
    {
      id: Type.String({
        pattern: '^[0-9]+$',
        description:
          'Event id (numeric, as a string), also in `x-event-id` and `webhook-id`. Deduplicate on it (on this signed field, not on the unsigned `x-event-id` header)',
        example: '42',
      }),
      eventType: StringEnum([eventType], { description: 'Event type, also in `x-event-type`' }),
      attempt: Type.Integer({ minimum: 1, description: 'Delivery attempt, from 1; also in `x-delivery-attempt`' }),
      payload,
    },
    { description },
  );

// Registered as components of the document (the bodies a webhook receiver gets); no route answers with them.
Component(
  'PaymentSettledEvent',
  EventBody('payment.settled', PaymentSettledPayload, 'Body of a `payment.settled` delivery'),
);
Component(
  'PaymentFailedEvent',
  EventBody('payment.failed', PaymentFailedPayload, 'Body of a `payment.failed` delivery'),
);
Component(
  'PaymentReversedEvent',
  EventBody('payment.reversed', PaymentReversedPayload, 'Body of a `payment.reversed` delivery'),
);

const EVENT_COMPONENTS = {
  'payment.settled': 'PaymentSettledEvent',
  'payment.failed': 'PaymentFailedEvent',
  'payment.reversed': 'PaymentReversedEvent',
} as const satisfies Record<(typeof EVENT_TYPES)[number], string>;

Component(
  'WebhookEvent',
  Type.Unsafe({
    description: 'Any webhook delivery body; `eventType` tells which',
    oneOf: Object.values(EVENT_COMPONENTS).map((name) => Type.Ref(name)),
    discriminator: {
      propertyName: 'eventType',
      mapping: Object.fromEntries(
        Object.entries(EVENT_COMPONENTS).map(([type, name]) => [type, `#/components/schemas/${name}`]),
      ),
    },
  }),
);

/** The headers of every delivery attempt, as `deliveryHeaders` sends them. */
export const WEBHOOK_DELIVERY_HEADERS: Record<string, { description: string; schema: Record<string, unknown> }> = {
  'content-type': { description: 'Always `application/json`', schema: { type: 'string', enum: ['application/json'] } },
  'user-agent': { description: 'The dispatcher', schema: { type: 'string', example: 'Bolivar-Webhooks/1.0' } },
  'x-signature': {
    description: `HMAC-SHA256 of \`<x-timestamp>.<raw body>\` keyed by the endpoint secret (the whole \`whsec_…\` string), as \`${SIGNATURE_SCHEME}=<hex>\`; during a secret rotation a second one (the previous secret) follows, comma-separated. Verify it over the raw bytes (\`verifyWebhook\` of this package's \`./webhooks\` export does)`,
    schema: { type: 'string' },
  },
  'x-timestamp': {
    description: 'Milliseconds since the epoch when the attempt was signed; refuse deliveries more than 5 minutes off',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'x-event-type': { description: 'The `eventType` of the body', schema: { type: 'string', enum: [...EVENT_TYPES] } },
  'x-event-id': {
    description: 'The `id` of the body. Not signed: deduplicate on the `id` of the verified body, not on this header',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'x-delivery-attempt': { description: 'The `attempt` of the body', schema: { type: 'string', pattern: '^[0-9]+$' } },
  'webhook-id': { description: 'Standard Webhooks: the event id', schema: { type: 'string' } },
  'webhook-timestamp': {
    description: 'Standard Webhooks: seconds since the epoch',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'webhook-signature': {
    description:
      'Standard Webhooks: `v1,<base64 HMAC-SHA256 of <webhook-id>.<webhook-timestamp>.<raw body>>` per secret (current first), space-separated; any Standard Webhooks library verifies it with the `whsec_` secret',
    schema: { type: 'string' },
  },
};

const CALLBACK_RESPONSES = {
  '2XX': { description: 'Received: the delivery is `published` and not sent again' },
  default: {
    description: `Any other answer, or none within WEBHOOK_TIMEOUT_MS (5 s by default), is a failed attempt: the next one follows after ${BACKOFF_WAITS_SECONDS.map((s) => `${s} s`).join(', ')} (times WEBHOOK_BACKOFF_SCALE, 1 by default); after attempt ${WEBHOOK_ATTEMPTS_MAX} the event is \`dead\` (\`GET /v1/events?status=dead\`, and the retry operations)`,
  },
};

/**
 * The `callbacks` of POST /v1/payouts: the outcome of the payment, POSTed to the program's webhook
 * endpoint. Its URL is configured, not part of the request, so the key is a placeholder URL. (The
 * delivery headers are added to every callback operation by plugins/openapi.ts.)
 */
const WEBHOOK_ENDPOINT_PLACEHOLDER = 'https://your-webhook-endpoint.example';

export const PayoutCallbacks = Object.fromEntries(
  Object.entries(EVENT_COMPONENTS).map(([type, name]) => [
    type.replace(/\.(\w)/, (_, letter: string) => letter.toUpperCase()),
    {
      [WEBHOOK_ENDPOINT_PLACEHOLDER]: {
        post: {
          requestBody: {
            description: `\`${type}\`: POSTed to the webhook endpoint of the program (tenant and mode) that made the payout, set with \`PUT /v1/admin/tenants/{id}/webhook-endpoint\` (the URL here stands for it)`,
            required: true,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
          },
          responses: CALLBACK_RESPONSES,
        },
      },
    },
  ]),
);
