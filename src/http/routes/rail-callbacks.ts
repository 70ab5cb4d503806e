import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ApiError, validationFailed } from '../../domain/errors.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { CallbackReceipt } from '../../rails/http-bank/adapter.ts';
import type { RailCallbackService } from '../../services/rail-callbacks.ts';
import { errorResponsesDescribed } from '../schemas/common.ts';
import type { CallbackBudget } from '../callback-budget.ts';
import type { App } from '../types.ts';

// Documents the body without constraining it: the route verifies the raw bytes and then reads them.
const CallbackBody = Type.Unknown({
  description: 'A gateway callback, `{eventId, occurredAt, transfer}`, exactly as the gateway signed it',
});

const RailParam = Type.Object({
  rail: Type.String({
    pattern: '^[a-z][a-z0-9-]{0,31}$',
    maxLength: 32,
    description: 'The connector name the rails file gives the gateway',
  }),
});

const CallbackReceipt = Type.Object(
  {
    received: Type.Boolean({ description: 'Always true: the event is recorded' }),
    duplicate: Type.Boolean({
      description: 'True when this event id was already recorded (a redelivery); it is stored once',
    }),
    event_id: Type.String({ description: "The gateway's event id" }),
  },
  { description: 'The callback is recorded in our inbox; the reaper applies it' },
);

const CALLBACK_401 =
  "`rail_callback_signature_invalid`: the `x-bank-key-id` is not one of the rail's callback keys, `x-bank-timestamp` is more than 5 minutes from our clock, `x-bank-signature` does not verify over the body, or there is no such rail. Nothing was stored.";

/**
 * A bank gateway's callbacks: public (the gateway has no API key; the signature is its
 * authentication), with a budget per rail of their own for the callbacks that verify
 * (http/callback-budget.ts), not the per-address limit of the other public routes. The body is read as raw bytes (its
 * own content-type parser, in this plugin scope only) to verify the signature over exactly what arrived.
 * 200 only once the event is committed to our inbox, so a gateway that got no 2xx redelivers it.
 */
export async function railCallbackRoutes(
  app: App,
  callbacks: RailCallbackService,
  budget: CallbackBudget,
): Promise<void> {
  await app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/v1/rails/:rail/callbacks',
      {
        config: { public: true, ownBudget: true },
        schema: {
          tags: ['Rails'],
          operationId: 'receiveRailCallback',
          summary: "A bank gateway's signed callback (an outcome, a return)",
          description:
            "Called by a bank gateway configured in the rails file (docs/http-bank.md), not by integrators. The callback is signed with one of the rail's callback keys " +
            '(`x-bank-key-id`, `x-bank-timestamp` within ±5 minutes, `x-bank-signature`: hex HMAC-SHA256 of `<timestamp>.<raw body>`). ' +
            'A verified callback is recorded once per `eventId` and answered 200 only once recorded (`duplicate: true` for a redelivery); the reaper applies it. ' +
            'A signed body that is not a callback is 400 `validation_failed`; anything unsigned or signed wrongly is 401 `rail_callback_signature_invalid`; nothing is stored for either. ' +
            'Each rail has a budget of verified callbacks per second of its own (`RAIL_CALLBACK_RPS`, 1000 by default, per process), not counted in any other limit: past it the answer is 503 `overloaded` with `Retry-After`, nothing stored, and the gateway redelivers; a verified callback is never answered 429. ' +
            "Only a callback that verifies spends its rail's budget: one that does not is counted per client address instead (`PUBLIC_RATE_LIMIT_RPS`), and past that it is 429 `rate_limited`. Needs no key.",
          security: [],
          params: RailParam,
          body: CallbackBody,
          response: {
            200: CallbackReceipt,
            ...errorResponsesDescribed(
              { 401: CALLBACK_401 },
              'rail_callback_signature_invalid',
              'validation_failed',
              'payload_too_large',
              'unsupported_media_type',
            ),
          },
        },
      },
      async function receiveRailCallback(request, reply) {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const receipt = await callbacks.receive(request.params.rail, request.headers, raw, (rail) =>
          budget.admit(rail),
        );
        if (receipt.stored) return { received: true, duplicate: receipt.duplicate, event_id: receipt.eventId };
        return refuse(receipt.refusal, { rail: request.params.rail, ip: request.ip, log: request.log, reply }, budget);
      },
    );
  });
}

/** Who sent a refused callback, as the refusal needs them. */
interface CallbackSender {
  rail: string;
  ip: string;
  log: FastifyBaseLogger;
  reply: { header(name: string, value: string): unknown };
}

/** The answer to a callback that was not stored: always thrown, by why it was not. */
function refuse(
  refusal: Extract<CallbackReceipt, { stored: false }>['refusal'],
  who: CallbackSender,
  budget: CallbackBudget,
): never {
  if (refusal === 'overloaded') {
    throw new ApiError(
      'overloaded',
      `More callbacks for this rail than its budget of ${budget.perSecond} per second; nothing was stored. Redeliver after Retry-After.`,
    );
  }
  if (refusal === 'unreadable') {
    who.log.info({ rail: who.rail, refusal }, 'rail callback refused');
    throw validationFailed([
      {
        field: 'body',
        message: 'not a gateway callback: {eventId, occurredAt, transfer: {reference, status, …}}',
      },
    ]);
  }
  // Not verified: a stranger's, or a gateway with the wrong key. Charged to its address, so a flood
  // of them is bounded as on every route that needs no key (and is not logged line by line).
  if (!budget.chargeRefused(who.ip)) {
    who.reply.header('retry-after', '1');
    throw new ApiError(
      'rate_limited',
      `Too many callbacks that do not verify from your address: at most ${budget.perAddressPerSecond} per second. Retry after 1 s.`,
      {
        limit_per_second: budget.perAddressPerSecond,
      },
    );
  }
  who.log.info({ rail: who.rail, refusal }, 'rail callback refused');
  throw new ApiError(
    'rail_callback_signature_invalid',
    'The callback is not signed with a callback key of this rail (or the timestamp is outside ±5 minutes). Nothing was stored.',
  );
}
