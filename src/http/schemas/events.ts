import { Type } from '@sinclair/typebox';
import { EVENT_STATUSES, EVENT_TYPES } from '../../domain/webhooks.ts';
import { Component, DateTime, ModeSchema, Nullable, PageLimit, StringEnum, Uuid } from './common.ts';

const NUMERIC_ID = '^[0-9]{1,19}$';
const NUMERIC_ID_LENGTH = 19;

const EventType = StringEnum(EVENT_TYPES, { description: 'Event type' });
const EventStatus = StringEnum(EVENT_STATUSES, {
  description:
    '`pending` (queued or retrying), `published` (a 2xx was received) or `dead` (attempts exhausted; re-deliverable)',
});

const NumericId = (description: string) =>
  Type.String({
    pattern: NUMERIC_ID,
    maxLength: NUMERIC_ID_LENGTH,
    description,
    example: '42',
    'x-error-message': 'must be a numeric event id, such as 42',
  });

export const EventIdParam = Type.Object({ id: NumericId('Event id (numeric, as a string)') });

const EventFields = {
  id: Type.String({
    pattern: '^[0-9]+$',
    description: 'Numeric id as a string; also sent as `x-event-id`. Deduplicate on it',
    example: '42',
  }),
  event_type: EventType,
  aggregate_type: Type.String({ description: 'What the event is about: `payment`', example: 'payment' }),
  aggregate_id: Uuid('Id of the payment'),
  status: EventStatus,
  attempts: Type.Integer({ minimum: 0, description: 'Delivery attempts made so far' }),
  last_error: Nullable(Type.String({ description: 'Why the last failed attempt failed' })),
  next_attempt_at: Nullable(DateTime('When the next attempt is due; null once published or dead')),
  published_at: Nullable(DateTime('When a receiver answered 2xx')),
  dead_at: Nullable(DateTime('When the attempts ran out')),
  created_at: DateTime(),
};

const EventRecord = Component(
  'EventRecord',
  Type.Object(EventFields, { description: 'An outcome event and its delivery state; lists omit the payload' }),
);

const Delivery = Component(
  'EventDelivery',
  Type.Object(
    {
      attempt: Type.Integer({ minimum: 1, description: 'Attempt number, as sent in `x-delivery-attempt`' }),
      status_code: Nullable(
        Type.Integer({
          description: "The receiver's HTTP status; null when none arrived (timeout, refused connection, no endpoint)",
        }),
      ),
      ok: Type.Boolean({ description: 'true for a 2xx answer' }),
      error: Nullable(Type.String({ description: 'Why the attempt failed; null when ok' })),
      duration_ms: Type.Integer({ minimum: 0 }),
    },
    { description: 'One delivery attempt' },
  ),
);

export const EventDetail = Component(
  'EventDetail',
  Type.Object(
    {
      ...EventFields,
      payload: Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'The `payload` object exactly as sent in the webhook body: a `PaymentSettledPayload`, `PaymentFailedPayload` or `PaymentReversedPayload` after `event_type`',
        },
      ),
      deliveries: Type.Array(Delivery, { description: 'Attempts in order (the most recent 100)' }),
    },
    { description: 'An event with its payload and its delivery attempts' },
  ),
);

export const EventList = Component(
  'EventList',
  Type.Object(
    {
      data: Type.Array(EventRecord),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({
          description: 'Pass as `cursor` for the next page (the last event id of this page); null on the last page',
        }),
      ),
    },
    { description: 'One page of events, newest first' },
  ),
);

export const EventListQuery = Type.Object({
  status: Type.Optional(EventStatus),
  eventType: Type.Optional(EventType),
  paymentId: Type.Optional(Uuid('Only the events of this payment (its outcome, and its reversal if any)')),
  limit: Type.Optional(PageLimit()),
  cursor: Type.Optional(
    Type.String({
      pattern: NUMERIC_ID,
      maxLength: NUMERIC_ID_LENGTH,
      description: 'The `next_cursor` of the previous page: the numeric id of an event (events older than it follow)',
      'x-error-message': 'must be the numeric id of an event (the next_cursor of the previous page of /v1/events)',
    }),
  ),
});

export const RetriedEvent = Component(
  'RetriedEvent',
  Type.Object(
    {
      id: Type.String({ description: 'Event id' }),
      event_type: EventType,
      status: EventStatus,
      attempts: Type.Integer({ minimum: 0 }),
      requeued: Type.Boolean({ description: 'false when the event was already pending and due (nothing changed)' }),
    },
    { description: 'The event, back in the delivery queue' },
  ),
);

export const RetriedDeadEvents = Component(
  'RetriedDeadEvents',
  Type.Object(
    { requeued: Type.Integer({ minimum: 0, description: 'How many dead events went back to pending' }) },
    { description: 'The failed queue, requeued' },
  ),
);

// Admin: the program's endpoint and secret.

export const WebhookEndpointBody = Type.Object({
  mode: ModeSchema,
  url: Type.String({
    minLength: 1,
    maxLength: 2048,
    description:
      'http:// or https:// URL that receives the webhooks. Private, link-local and metadata addresses are refused; loopback too in live mode',
    example: 'https://hooks.example.com/bolivar',
  }),
});

export const WebhookEndpoint = Component(
  'WebhookEndpoint',
  Type.Object(
    {
      url: Type.String({ description: 'The URL, normalized' }),
      secret: Type.String({
        description: 'Signing secret (`whsec_…`): the key of the x-signature HMAC',
        example: 'whsec_3bP0kX9dQ2mV7tL1rZ8yN4cF6hJ5sW0aE2uG9iK1',
      }),
    },
    { description: 'The webhook endpoint of a program (tenant and mode)' },
  ),
);

export const RotatedSecret = Component(
  'RotatedWebhookSecret',
  Type.Object(
    {
      secret: Type.String({ description: 'The new signing secret; it signs first from now on' }),
      previousSecretExpiresAt: DateTime('Until then the previous secret signs too (second signature in x-signature)'),
    },
    { description: 'A rotated signing secret' },
  ),
);

// Sandbox receivers.

// Declared only so that endpoint URLs configured with the former `?tenant=…&mode=…` keep working:
// the sink never reads them (the delivered event names the program). Untyped, so that no value,
// not even a repeated parameter, can turn an ignored parameter into a 400.
const IgnoredSinkParameter = (was: string) =>
  Type.Optional(
    Type.Unknown({
      deprecated: true,
      description: `Deprecated and ignored (formerly ${was}). The sink identifies the program from the delivery's x-event-id and signature, never from its URL.`,
    }),
  );

export const SinkQuery = Type.Object({
  tenant: IgnoredSinkParameter('the tenant id'),
  mode: IgnoredSinkParameter('the mode'),
});

export const SinkReceipt = Type.Object(
  {
    received: Type.Boolean(),
    id: Type.String({ description: 'Id of the stored receipt' }),
    signature_verified: Type.Boolean({
      description: 'Always true: the sink stores only deliveries whose signature verified',
    }),
  },
  { description: 'What the sink stored' },
);

export const FailingReceiverAnswer = Type.Object(
  {
    error: Type.Object({
      type: Type.String(),
      code: Type.String(),
      message: Type.String(),
      request_id: Type.String(),
    }),
  },
  { description: 'Always 500: lets an integrator watch retries and the failed queue' },
);

const SandboxDelivery = Component(
  'SandboxWebhookDelivery',
  Type.Object(
    {
      id: Type.String({ description: 'Receipt id' }),
      event_id: Nullable(
        Type.String({ description: 'The event delivered (its x-event-id); never null for receipts the sink stores' }),
      ),
      received_at: DateTime(),
      headers: Type.Object(
        {},
        { additionalProperties: true, description: 'Request headers exactly as received (names lower-cased)' },
      ),
      raw_body: Type.String({ description: 'The request body exactly as received' }),
      signature_verified: Type.Boolean({
        description:
          "Always true: the sink stores only deliveries whose signature verified against the program's endpoint secrets within ±5 minutes",
      }),
    },
    { description: 'A webhook delivery received by the sandbox sink' },
  ),
);

export const SandboxDeliveryList = Component(
  'SandboxWebhookDeliveryList',
  Type.Object(
    {
      data: Type.Array(SandboxDelivery),
      has_more: Type.Boolean(),
      next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page' })),
    },
    { description: 'Deliveries received by the sandbox sink, newest first' },
  ),
);

export const SandboxDeliveryQuery = Type.Object({
  limit: Type.Optional(PageLimit()),
  cursor: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,18}$',
      maxLength: 18,
      description: 'The `next_cursor` of the previous page',
      'x-error-message': 'must be the next_cursor of the previous page (a numeric id)',
    }),
  ),
  eventId: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,18}$',
      maxLength: 18,
      description: 'Only deliveries of this event',
      example: '42',
      'x-error-message': 'must be a numeric event id, such as 42',
    }),
  ),
});
