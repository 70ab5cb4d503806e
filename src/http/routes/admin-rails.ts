// The rails of the deployment, their settings and routing rules (platform key; docs/rails.md).
import { Type } from '@sinclair/typebox';
import { INSTRUMENTS } from '../../domain/instrument.ts';
import { RAIL_NAME_PATTERN, type RailRoute } from '../../domain/rail-routing.ts';
import { orderedRoutes, type RailAdminService, type RailView } from '../../services/rail-admin.ts';
import { auditActorOf } from '../context.ts';
import {
  AmountString,
  Answer,
  Component,
  DateTime,
  errorResponses,
  ModeSchema,
  Nullable,
  StringEnum,
  Uuid,
} from '../schemas/common.ts';
import { RailStatementPull } from '../schemas/rail-statements.ts';
import type { App } from '../types.ts';
import { statementPullView } from './admin-rail-statements.ts';
import { ADMIN } from './admin-tenants.ts';

const RailName = (description?: string) => Type.String({ pattern: RAIL_NAME_PATTERN, maxLength: 63, description });
const Instrument = StringEnum(INSTRUMENTS);
const Health = Type.Object({ ok: Type.Boolean(), message: Type.Optional(Type.String()) });
/** Amounts of a rule, BS minor units: bounded so that they stay exact as JSON integers. */
const RuleAmount = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

const Rail = Component(
  'Rail',
  Type.Object({
    name: RailName(),
    kind: StringEnum(['sandbox', 'connector'] as const),
    modes: Type.Array(ModeSchema, { description: 'The modes whose payouts it may carry' }),
    instruments: Type.Array(Instrument, { description: 'The instruments it may carry' }),
    enabled: Type.Boolean({
      description: 'false: no new payout is routed to it (payments on it are still asked about)',
    }),
    configured: Type.Boolean({
      description: 'true: the settings were stored by an operator; false: its defaults apply',
    }),
    breaker: Type.Object(
      {
        state: StringEnum(['closed', 'open', 'half_open'] as const),
        failures: Type.Integer({
          description: 'Failed calls (refused, timed out, unreadable) in its sliding window (RAIL_BREAKER_WINDOW_MS)',
        }),
        lastProbe: Nullable(Health),
      },
      { description: 'Its circuit breaker in the process that answered (each process has its own)' },
    ),
    health: Health,
    counts: Type.Object(
      {
        sends: Type.Integer(),
        failures: Type.Record(Type.String({ maxLength: 64 }), Type.Integer(), {
          description: 'Submits that did not end in an accepted transfer, by reason',
          maxProperties: 33,
        }),
        failovers: Type.Integer({
          description: 'Payouts moved from it to the next rail (it provably did not receive them)',
        }),
        meanLatencyMs: Nullable(Type.Number({ description: 'Mean time of its submits and lookups' })),
        lastSendAt: Nullable(DateTime()),
      },
      { description: 'What it did since the answering process started' },
    ),
    statementCheck: Type.Object(
      {
        lastStatement: Nullable(
          Type.Object(
            {
              id: Uuid(),
              day: Type.String({ format: 'date' }),
              at: DateTime('When it was matched'),
              lines: Type.Integer({ minimum: 0 }),
              matched: Type.Integer({ minimum: 0 }),
              mismatches: Type.Integer({
                minimum: 0,
                description: 'Disagreements of every kind (each opens or keeps an anomaly)',
              }),
              anomaliesOpened: Type.Integer({ minimum: 0 }),
            },
            {
              description: 'The statement matched last (pulled from the bank or posted by an operator); null: none yet',
            },
          ),
        ),
        lastPull: Nullable(RailStatementPull),
      },
      { description: "The last bank-side check: the rail's own record of our transfers against our books" },
    ),
  }),
);

const RailRouteSchema = Component(
  'RailRoute',
  Type.Object(
    {
      id: Uuid(),
      priority: Type.Integer(),
      rail: RailName(),
      tenantId: Nullable(Uuid()),
      mode: Nullable(ModeSchema),
      instrument: Nullable(Instrument),
      bankCode: Nullable(Type.String()),
      minAmount: Nullable(AmountString()),
      maxAmount: Nullable(AmountString()),
      createdAt: DateTime(),
    },
    {
      description:
        'A routing rule: a payout matching every condition set (null: any) is tried on `rail` first; rules apply by priority, lowest first',
    },
  ),
);

const RailList = Type.Object({ data: Type.Array(Rail), routes: Type.Array(RailRouteSchema) });
const RouteList = Type.Object({ data: Type.Array(RailRouteSchema) });
const NameParam = Type.Object({ name: RailName() });
const RouteIdParam = Type.Object({ id: Uuid() });

const UpdateRailBody = Type.Object(
  {
    modes: Type.Optional(Type.Array(ModeSchema, { uniqueItems: true, maxItems: 2 })),
    instruments: Type.Optional(Type.Array(Instrument, { uniqueItems: true, maxItems: 2 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

const CreateRouteBody = Type.Object(
  {
    priority: Type.Integer({ format: 'int32', minimum: 0, maximum: 1_000_000, description: 'Lower applies first' }),
    rail: RailName('The rail a matching payout is tried on first'),
    tenantId: Type.Optional(Nullable(Uuid())),
    mode: Type.Optional(Nullable(ModeSchema)),
    instrument: Type.Optional(Nullable(Instrument)),
    bankCode: Type.Optional(
      Nullable(Type.String({ pattern: '^[0-9]{4}$', maxLength: 4, description: "The beneficiary's bank code" })),
    ),
    minAmount: Type.Optional(Nullable(RuleAmount('The smallest amount delivered (BS minor units) it matches'))),
    maxAmount: Type.Optional(Nullable(RuleAmount('The largest amount delivered (BS minor units) it matches'))),
  },
  { additionalProperties: false },
);

function railView(view: RailView) {
  return {
    name: view.name,
    kind: view.kind,
    modes: [...view.modes],
    instruments: [...view.instruments],
    enabled: view.enabled,
    configured: view.configured,
    breaker: view.breaker,
    health: view.health,
    counts: {
      sends: view.counts.sends,
      failures: view.counts.failures,
      failovers: view.counts.failovers,
      meanLatencyMs:
        view.counts.calls === 0 ? null : Math.round((view.counts.seconds / view.counts.calls) * 1_000_000) / 1000,
      lastSendAt: view.counts.lastSendAt,
    },
    statementCheck: {
      lastStatement: view.statementCheck.lastStatement && {
        ...view.statementCheck.lastStatement,
        at: view.statementCheck.lastStatement.at.toISOString(),
      },
      lastPull:
        view.statementCheck.lastPull &&
        statementPullView(view.statementCheck.lastPull.row, view.statementCheck.lastPull.state),
    },
  };
}

function routeView(route: RailRoute) {
  return {
    id: route.id,
    priority: route.priority,
    rail: route.rail,
    tenantId: route.tenantId,
    mode: route.mode,
    instrument: route.instrument,
    bankCode: route.bankCode,
    minAmount: route.minAmount?.toString() ?? null,
    maxAmount: route.maxAmount?.toString() ?? null,
    createdAt: route.createdAt.toISOString(),
  };
}

export async function adminRailRoutes(app: App, rails: RailAdminService): Promise<void> {
  app.get(
    '/v1/admin/rails',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListRails',
        summary: 'List the rails, their settings, breakers, health and routing rules',
        description: `Every rail of the deployment (the sandbox and the configured connectors), in the default routing order
(connectors by name, the sandbox last), with the settings in force, its circuit breaker and counts in the process that
answered, and its health asked now; and the routing rules in the order they apply.`,
        response: { 200: Answer('The rails and routing rules', RailList), ...errorResponses(403) },
      },
    },
    async function adminListRails() {
      const [views, routes] = await Promise.all([rails.list(), rails.routes()]);
      return { data: views.map(railView), routes: orderedRoutes(routes).map(routeView) };
    },
  );

  app.patch(
    '/v1/admin/rails/:name',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminUpdateRail',
        summary: "Change a rail's settings",
        description: `Stores the fields given (the others keep their value in force): the modes and instruments it serves, and
whether it takes new payouts. Audited (\`rail.update\`). Every process routes by it within 5 s. 404 for a rail the
deployment does not have. The platform key of the first start may change only rails that serve test mode alone
(403 \`bootstrap_key_test_only\` for a rail that serves live payouts, before or after).`,
        params: NameParam,
        body: UpdateRailBody,
        response: {
          200: Answer('The rail, as listed', Rail),
          ...errorResponses(400, 'scope_missing', 'bootstrap_key_test_only', 'resource_not_found'),
        },
      },
    },
    async function adminUpdateRail(request) {
      const testModeOnly = request.auth?.isPlatform === true && request.auth.keySource === 'bootstrap';
      return railView(await rails.update(request.params.name, request.body, auditActorOf(request), { testModeOnly }));
    },
  );

  adminRailRouteRoutes(app, rails);
}

function adminRailRouteRoutes(app: App, rails: RailAdminService): void {
  app.get(
    '/v1/admin/rails/routes',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListRailRoutes',
        summary: 'List the routing rules',
        description: 'The routing rules in the order they apply: priority, lowest first, then the oldest first.',
        response: { 200: Answer('The routing rules', RouteList), ...errorResponses(403) },
      },
    },
    async function adminListRailRoutes() {
      return { data: orderedRoutes(await rails.routes()).map(routeView) };
    },
  );
  adminCreateRailRouteRoute(app, rails);
  adminDeleteRailRouteRoute(app, rails);
}

function adminCreateRailRouteRoute(app: App, rails: RailAdminService): void {
  app.post(
    '/v1/admin/rails/routes',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminCreateRailRoute',
        summary: 'Add a routing rule',
        description: `A payout matching every condition given (tenant, mode, instrument, beneficiary bank code, amount delivered
in BS minor units, inclusive) is tried on \`rail\` first. Audited (\`rail_route.create\`). 404 for a rail the deployment
does not have.`,
        body: CreateRouteBody,
        response: { 201: Answer('The rule, created', RailRouteSchema), ...errorResponses(400, 'resource_not_found') },
      },
    },
    async function adminCreateRailRoute(request, reply) {
      const body = request.body;
      const amount = (value: number | null | undefined) =>
        value === undefined || value === null ? null : BigInt(value);
      const route = await rails.addRoute(
        {
          priority: body.priority,
          rail: body.rail,
          tenantId: body.tenantId ?? null,
          mode: body.mode ?? null,
          instrument: body.instrument ?? null,
          bankCode: body.bankCode ?? null,
          minAmount: amount(body.minAmount),
          maxAmount: amount(body.maxAmount),
        },
        auditActorOf(request),
      );
      return reply.code(201).send(routeView(route));
    },
  );
}

function adminDeleteRailRouteRoute(app: App, rails: RailAdminService): void {
  app.delete(
    '/v1/admin/rails/routes/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminDeleteRailRoute',
        summary: 'Remove a routing rule',
        description: 'Audited (`rail_route.delete`, with the rule as it was).',
        params: RouteIdParam,
        response: { 200: Answer('The rule, removed', RailRouteSchema), ...errorResponses('resource_not_found') },
      },
    },
    async function adminDeleteRailRoute(request) {
      return routeView(await rails.deleteRoute(request.params.id, auditActorOf(request)));
    },
  );
}
