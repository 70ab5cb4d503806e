import type { StoredLimitRule } from '../../db/repositories/limit-rules.ts';
import type { LimitService } from '../../services/limits.ts';
import { auditActorOf, partitionOf } from '../context.ts';
import { Type } from '@sinclair/typebox';
import { Answer, errorResponses } from '../schemas/common.ts';
import {
  CreateLimitRuleBody,
  LimitRuleList,
  LimitRuleView,
  LimitUsage,
  LimitUsageQuery,
  ListLimitRulesQuery,
} from '../schemas/limits.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';

const text = (value: bigint | null) => (value === null ? null : value.toString());

function ruleView(rule: StoredLimitRule) {
  return {
    id: rule.id,
    scope: rule.scope,
    tenantId: rule.tenantId,
    subjectId: rule.subjectId,
    method: rule.method,
    per_tx_max: rule.perTxMax.toString(),
    daily_max: rule.dailyMax.toString(),
    monthly_max: text(rule.monthlyMax),
    daily_count_max: text(rule.dailyCountMax),
    created_at: rule.createdAt.toISOString(),
  };
}

const big = (value: number | null | undefined) => (value === undefined || value === null ? null : BigInt(value));

export async function limitRoutes(app: App, limits: LimitService): Promise<void> {
  adminCreateLimitRuleRoute(app, limits);
  adminListLimitRulesRoute(app, limits);
  adminDeleteLimitRuleRoute(app, limits);
  getLimitUsageRoute(app, limits);
}

function adminCreateLimitRuleRoute(app: App, limits: LimitService): void {
  app.post(
    '/v1/admin/limit-rules',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminCreateLimitRule',
        summary: 'Create a limit rule',
        description:
          'A rule for the same scope, tenant, subject and method replaces the previous one. Limits measure the delivered amount; days and months are Caracas calendar days and months.',
        body: CreateLimitRuleBody,
        response: { 201: Answer('The rule, in force now', LimitRuleView), ...errorResponses('resource_not_found') },
      },
    },
    async function adminCreateLimitRule(request, reply) {
      const body = request.body;
      const rule = await limits.createRule(
        {
          scope: body.scope,
          tenantId: body.tenantId ?? null,
          subjectId: body.subjectId ?? null,
          method: body.method,
          perTxMax: BigInt(body.per_tx_max),
          dailyMax: BigInt(body.daily_max),
          monthlyMax: big(body.monthly_max),
          dailyCountMax: big(body.daily_count_max),
        },
        auditActorOf(request),
      );
      return reply.code(201).send(ruleView(rule));
    },
  );
}

function adminListLimitRulesRoute(app: App, limits: LimitService): void {
  app.get(
    '/v1/admin/limit-rules',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListLimitRules',
        summary: 'List limit rules',
        description: 'Every live rule, oldest first; `tenantId` narrows to the rules that can apply to that tenant.',
        querystring: ListLimitRulesQuery,
        response: { 200: Answer('Every rule in force', LimitRuleList), ...errorResponses() },
      },
    },
    async function adminListLimitRules(request) {
      return { data: (await limits.listRules(request.query.tenantId)).map(ruleView) };
    },
  );
}

function adminDeleteLimitRuleRoute(app: App, limits: LimitService): void {
  app.delete(
    '/v1/admin/limit-rules/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminDeleteLimitRule',
        summary: 'Delete a limit rule',
        description:
          'The rule stops applying from the next payout, on every process: a payout batch checks the version of the rules under its locks and reads them again when they changed.',
        params: IdParam,
        response: {
          200: Answer('The rule, deleted', Type.Object({ id: Type.String(), deleted: Type.Boolean() })),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminDeleteLimitRule(request) {
      await limits.deleteRule(request.params.id, auditActorOf(request));
      return { id: request.params.id, deleted: true };
    },
  );
}

function getLimitUsageRoute(app: App, limits: LimitService): void {
  app.get(
    '/v1/limits/usage',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Treasury'],
        operationId: 'getLimitUsage',
        summary: 'Limit consumption today and this month, and the rule that applies',
        description: `Totals per asset, all instruments together (the check at disbursement filters by instrument, so these are guidance
when limits differ per instrument). Payments that failed or were reversed do not count. With \`customerId\`, the figures
and rule of that user of yours; otherwise the tenant's. The rule shown is the winning one for \`*\`, else \`pago_movil\`, else \`transferencia\`.`,
        querystring: LimitUsageQuery,
        response: {
          200: Answer('Usage today and this month, and the rule that applies', LimitUsage),
          ...errorResponses(),
        },
      },
    },
    async function getLimitUsage(request) {
      const asset = request.query.asset ?? 'BS';
      const { consumed, rule } = await limits.usage(partitionOf(request.auth), asset, request.query.customerId);
      return {
        asset,
        usage: {
          day_amount: consumed.dayAmount.toString(),
          day_count: consumed.dayCount.toString(),
          month_amount: consumed.monthAmount.toString(),
        },
        limit: rule
          ? {
              scope: rule.scope,
              method: rule.method,
              per_tx_max: rule.perTxMax.toString(),
              daily_max: rule.dailyMax.toString(),
              monthly_max: text(rule.monthlyMax),
              daily_count_max: text(rule.dailyCountMax),
            }
          : null,
      };
    },
  );
}
