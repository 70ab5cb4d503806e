// The operator's view and settings of the rails (GET/PUT /v1/admin/rails, the routing rules): every
// change is written with its audit row in one transaction, then this process's routing reloads it.
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  deleteRailRoute,
  insertRailRoute,
  listRailRoutes,
  listRailSettings,
  lockRailSetting,
  upsertRailSetting,
} from '../db/repositories/rails.ts';
import { changedFields, type AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { ApiError, notFound, validationFailed } from '../domain/errors.ts';
import { byPriority, type RailRoute, type RailSetting } from '../domain/rail-routing.ts';
import type { BreakerState } from '../rails/circuit-breaker.ts';
import type { RailHealth } from '../rails/rail.ts';
import {
  latestStatementChecks,
  latestStatementPulls,
  type RailStatementPullRow,
} from '../db/repositories/rail-statement-pulls.ts';
import type { RailCounts, RailMetrics } from './rail-metrics.ts';
import { pullStateOf, type PullState } from './rail-statement-pull.ts';
import type { RailKind, RailRegistry } from './rail-registry.ts';

/** The longest the admin list waits for one rail's health: a rail that does not answer is shown unhealthy. */
const RAIL_HEALTH_TIMEOUT_MS = 2_000;

export interface RailView extends RailSetting {
  kind: RailKind;
  /** true: the operator stored its settings; false: its defaults apply. */
  configured: boolean;
  breaker: { state: BreakerState; failures: number; lastProbe: RailHealth | null };
  health: RailHealth;
  counts: RailCounts;
  /** The last bank-side check: the statement matched last (posted or pulled) and the last day's pull. */
  statementCheck: {
    lastStatement: {
      id: string;
      day: string;
      at: Date;
      lines: number;
      matched: number;
      mismatches: number;
      anomaliesOpened: number;
    } | null;
    lastPull: { row: RailStatementPullRow; state: PullState } | null;
  };
}

function statementCheckOf(
  check: Awaited<ReturnType<typeof latestStatementChecks>>[number] | undefined,
  pull: RailStatementPullRow | undefined,
  now: Date,
): RailView['statementCheck'] {
  return {
    lastStatement: check
      ? {
          id: check.id,
          day: check.value_date,
          at: check.created_at,
          lines: check.line_count,
          matched: check.matched,
          mismatches: check.mismatches,
          anomaliesOpened: check.anomalies_opened,
        }
      : null,
    lastPull: pull ? { row: pull, state: pullStateOf(pull, now) } : null,
  };
}

export type RailSettingsPatch = Partial<Pick<RailSetting, 'modes' | 'instruments' | 'enabled'>>;

export type NewRailRoute = Omit<RailRoute, 'id' | 'createdAt'>;

export class RailAdminService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly registry: RailRegistry,
    private readonly metrics: RailMetrics,
  ) {}

  /** Every rail of this process with its settings in force, breaker, health (asked now) and counts. */
  async list(): Promise<RailView[]> {
    const [stored, checks, pulls] = await Promise.all([
      listRailSettings(this.db),
      latestStatementChecks(this.db),
      latestStatementPulls(this.db),
    ]);
    const storedNames = new Set(stored.map((setting) => setting.name));
    const settings = this.registry.settingsOf(stored);
    const now = this.clock.now();
    return Promise.all(
      this.registry.list().map(async (rail, i) => ({
        ...settings[i]!,
        kind: rail.kind,
        configured: storedNames.has(rail.name),
        breaker: { state: rail.breaker.state, failures: rail.breaker.failures, lastProbe: rail.breaker.probed },
        health: await healthOf((signal) => rail.adapter.health(signal)),
        counts: this.metrics.of(rail.name),
        statementCheck: statementCheckOf(
          checks.find((check) => check.rail === rail.name),
          pulls.find((pull) => pull.rail === rail.name),
          now,
        ),
      })),
    );
  }

  /** Stores a rail's settings (the fields given; the others as in force now). 404 for a rail this process does not have. */
  async update(
    name: string,
    patch: RailSettingsPatch,
    actor: AuditActor,
    options: { testModeOnly: boolean },
  ): Promise<RailView> {
    const rail = this.registry.named(name);
    if (!rail) throw railNotFound(name);
    await this.db.transaction(async (tx) => {
      const before = (await lockRailSetting(tx, name)) ?? rail.defaults;
      const next = { ...before, ...definedOnly(patch), name };
      // A rail that serves live payouts, before or after, is a live change (as the mode a body names).
      if (options.testModeOnly && (before.modes.includes('live') || next.modes.includes('live')))
        throw liveChangeRefused();
      const foreign = next.modes.filter((mode) => !rail.defaults.modes.includes(mode));
      if (foreign.length > 0) throw modeNotServed(rail.name, rail.defaults.modes, foreign);
      const after = await upsertRailSetting(tx, next, this.clock.now());
      const fields = changedFields<RailSetting>(before, after, ['modes', 'instruments', 'enabled']);
      await recordAudit(tx, { actor, action: 'rail.update', target: { type: 'rail', id: name }, ...fields });
    });
    this.registry.invalidate();
    return (await this.list()).find((view) => view.name === name)!;
  }

  async routes(): Promise<RailRoute[]> {
    return listRailRoutes(this.db);
  }

  /** Adds a routing rule. 404 when it names a rail this process does not have. */
  async addRoute(route: NewRailRoute, actor: AuditActor): Promise<RailRoute> {
    if (!this.registry.named(route.rail)) throw railNotFound(route.rail);
    if (route.minAmount !== null && route.maxAmount !== null && route.minAmount > route.maxAmount) {
      throw validationFailed([
        { field: 'minAmount', message: `is more than maxAmount (${route.maxAmount}): the rule would match no payout` },
      ]);
    }
    const created = await this.db.transaction(async (tx) => {
      const row = await insertRailRoute(tx, { ...route, id: randomUUID(), createdAt: this.clock.now() });
      await recordAudit(tx, {
        actor,
        action: 'rail_route.create',
        target: { type: 'rail_route', id: row.id },
        before: null,
        after: auditedRoute(row),
      });
      return row;
    });
    this.registry.invalidate();
    return created;
  }

  async deleteRoute(id: string, actor: AuditActor): Promise<RailRoute> {
    const deleted = await this.db.transaction(async (tx) => {
      const row = await deleteRailRoute(tx, id);
      if (!row) throw notFound('routing rule');
      await recordAudit(tx, {
        actor,
        action: 'rail_route.delete',
        target: { type: 'rail_route', id },
        before: auditedRoute(row),
        after: null,
      });
      return row;
    });
    this.registry.invalidate();
    return deleted;
  }
}

/** The rules in the order they apply (a stable order for the list and the console). */
export function orderedRoutes(routes: readonly RailRoute[]): RailRoute[] {
  return [...routes].sort(byPriority);
}

function liveChangeRefused(): ApiError {
  return new ApiError(
    'bootstrap_key_test_only',
    'This platform key was made by the first start (it is saved in bootstrap.json) and administers test mode only; a rail that serves live payouts is a live change. ' +
      'Set PLATFORM_API_KEY to a platform key of your own, restart the service, and use that key.',
    { mode: 'live' },
  );
}

/** A rail serves the one mode it was made for: test and live never meet on one rail. */
function modeNotServed(name: string, serves: readonly string[], asked: readonly string[]): ApiError {
  return validationFailed([
    {
      field: 'modes',
      message: `rail ${name} serves ${serves.join(', ')} only and cannot be given ${asked.join(', ')}: test and live payments never share a rail (the sandbox is test only; a connector serves the one mode its rails file gives it)`,
    },
  ]);
}

function railNotFound(name: string): ApiError {
  return new ApiError(
    'resource_not_found',
    `No rail named ${name} in this deployment (GET /v1/admin/rails lists them).`,
    { rail: name },
  );
}

function auditedRoute(route: RailRoute): Record<string, unknown> {
  return {
    priority: route.priority,
    rail: route.rail,
    tenantId: route.tenantId,
    mode: route.mode,
    instrument: route.instrument,
    bankCode: route.bankCode,
    minAmount: route.minAmount,
    maxAmount: route.maxAmount,
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

async function healthOf(health: (signal: AbortSignal) => Promise<RailHealth>): Promise<RailHealth> {
  const signal = AbortSignal.timeout(RAIL_HEALTH_TIMEOUT_MS);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<RailHealth>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, message: `no answer within ${RAIL_HEALTH_TIMEOUT_MS} ms` }),
      RAIL_HEALTH_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([health(signal), late]);
  } catch (error) {
    return { ok: false, message: (error as Error)?.message ?? String(error) };
  } finally {
    clearTimeout(timer);
  }
}
