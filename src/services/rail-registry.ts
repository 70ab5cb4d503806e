// The rails of this process — the sandbox and the configured connectors — with their settings and
// routing rules (stored, cached here) and a circuit breaker each: which rails may carry a payout and
// in what order, which rail carries a payment, and what each rail has done (docs/rails.md).
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/database.ts';
import { listRailRoutes, listRailSettings } from '../db/repositories/rails.ts';
import type { Clock } from '../domain/clock.ts';
import { INSTRUMENTS } from '../domain/instrument.ts';
import type { Mode } from '../domain/partition.ts';
import {
  candidateRails,
  defaultOrder,
  RAIL_NAME_PATTERN,
  type RailRoute,
  type RailSetting,
  type RoutedPayout,
} from '../domain/rail-routing.ts';
import { CircuitBreaker, type BreakerSettings } from '../rails/circuit-breaker.ts';
import { answerCheckedRail } from '../rails/answer-check.ts';
import { modeGuardedRail } from '../rails/mode-guard.ts';
import { observedRail } from '../rails/observed-rail.ts';
import { isRailFailure, type RailAdapter } from '../rails/rail.ts';
import type { RailSet, WaitingPayment } from '../rails/rail-set.ts';
import type { SendOutcome } from '../rails/send.ts';
import type { RailMetrics } from './rail-metrics.ts';

/**
 * How long this process routes by the settings and rules it last read. Routing must not cost a read
 * per payout; a change made through this process reloads at once, one made through another process
 * is seen within this time.
 * @internal Exported for its tests, not used elsewhere.
 */
export const RAIL_SETTINGS_TTL_MS = 5_000;

export type RailKind = 'sandbox' | 'connector';

export interface RegisteredRail {
  name: string;
  kind: RailKind;
  /** The adapter, observed (its calls timed and counted per rail). */
  adapter: RailAdapter;
  /** Its settings when the operator stored none. */
  defaults: RailSetting;
  breaker: CircuitBreaker;
  /**
   * Whether its calls' outcomes judge it. The sandbox's are not: its bank is tables of our own
   * database, and its timeouts and failures are triggers that simulate one beneficiary's bank, never
   * the rail being down, so its breaker never opens.
   */
  judged: boolean;
}

export interface RailRouting {
  settings: RailSetting[];
  routes: RailRoute[];
}

export class RailRegistry implements RailSet {
  private readonly rails = new Map<string, RegisteredRail>();
  private cache: { routing: RailRouting; loadedAtMs: number } | null = null;
  private loading: Promise<RailRouting> | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    adapters: { sandbox: RailAdapter; connectors: readonly RailAdapter[] },
    breaker: BreakerSettings,
    private readonly metrics: RailMetrics,
    private readonly log?: FastifyBaseLogger,
  ) {
    const nowMs = () => clock.now().getTime();
    const add = (adapter: RailAdapter, kind: RailKind, modes: readonly Mode[]) => {
      if (this.rails.has(adapter.name))
        throw new Error(`two rails are named ${adapter.name}: a rail's name must be unique in a process`);
      if (!new RegExp(RAIL_NAME_PATTERN).test(adapter.name))
        throw new Error(
          `a rail is named ${JSON.stringify(adapter.name)}: a rail's name is lower-case letters, digits, _ and - (${RAIL_NAME_PATTERN})`,
        );
      const name = adapter.name;
      const railBreaker = new CircuitBreaker(
        breaker,
        nowMs,
        (signal) => adapter.health(signal),
        (state) => {
          log?.warn({ rail: name, breaker: state }, `rail ${name}: circuit breaker ${state}`);
        },
      );
      metrics.known(name, () => railBreaker.state);
      this.rails.set(name, {
        name,
        kind,
        // Inside the observation: a call refused for its mode never reached the rail. Every answer is
        // checked against what was asked before anything past this line reads it.
        adapter: observedRail(answerCheckedRail(modeGuardedRail(adapter, modes)), metrics),
        defaults: { name, modes, instruments: INSTRUMENTS, enabled: true },
        breaker: railBreaker,
        judged: kind === 'connector',
      });
    };
    // The sandbox moves no money: it serves test mode only, whatever it is told.
    add(adapters.sandbox, 'sandbox', ['test']);
    for (const connector of adapters.connectors) add(connector, 'connector', connector.modes ?? ['live']);
  }

  /** Every rail of this process, in the default order. */
  list(): RegisteredRail[] {
    return [...this.rails.values()].sort((a, b) => defaultOrder(a.name, b.name));
  }

  named(name: string): RegisteredRail | undefined {
    return this.rails.get(name);
  }

  all(): RailAdapter[] {
    return this.list().map((rail) => rail.adapter);
  }

  /**
   * A payment's rail: the one it records; a payment from before rails were recorded (null) is its
   * mode's default rail — the sandbox for test; for live, the live rail, else the first connector
   * serving live by default.
   */
  railOf(payment: { rail: string | null; mode: Mode }): RailAdapter | undefined {
    if (payment.rail !== null) return this.rails.get(payment.rail)?.adapter;
    // In the order the rails were given (the sandbox, then the live rail, then the connectors): the
    // rail that carried such payments when each mode had one rail.
    return [...this.rails.values()].find((rail) => rail.defaults.modes.includes(payment.mode))?.adapter;
  }

  answered(rail: string): void {
    this.judged(rail)?.success();
  }

  /**
   * Only the rail's own failures count: one of the service's database (the sandbox's bank is in it)
   * neither counts nor ends the failures in a row, as the rail was not asked anything it could fail.
   */
  unanswered(rail: string, error: unknown): void {
    if (isRailFailure(error)) this.judged(rail)?.failure();
  }

  /** The breaker of `rail` when its calls judge it (a connector), else undefined. */
  private judged(rail: string): CircuitBreaker | undefined {
    const registered = this.rails.get(rail);
    return registered?.judged ? registered.breaker : undefined;
  }

  /** The settings and rules, as cached (read again once older than RAIL_SETTINGS_TTL_MS). */
  async routing(): Promise<RailRouting> {
    if (this.cache && this.clock.now().getTime() - this.cache.loadedAtMs < RAIL_SETTINGS_TTL_MS)
      return this.cache.routing;
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  /** A change was committed through this process: the next routing reads it. */
  invalidate(): void {
    this.cache = null;
  }

  /**
   * Each rail's setting in force: the stored one, else its defaults. A stored mode the rail does not
   * serve (a setting written before a rail served one mode only) is not in force: modes never meet.
   */
  settingsOf(stored: readonly RailSetting[]): RailSetting[] {
    const byName = new Map(stored.map((setting) => [setting.name, setting]));
    return this.list().map((rail) => {
      const setting = byName.get(rail.name);
      return setting
        ? { ...setting, modes: setting.modes.filter((mode) => rail.defaults.modes.includes(mode)) }
        : rail.defaults;
    });
  }

  /**
   * The rails that may carry `payout`, in the order they are tried: eligible by their settings,
   * ordered by the rules, breakers aside (a rail whose breaker is open is still the payout's rail:
   * the payout waits for it, see `admitting`).
   */
  async candidates(payout: RoutedPayout): Promise<RegisteredRail[]> {
    const { settings, routes } = await this.routing();
    return candidateRails(payout, settings, routes).map((name) => this.rails.get(name)!);
  }

  /**
   * Of `rails`, those whose breaker admits a payout now, in the same order (a half-open one after its
   * probe's verdict, for a bounded number of waiting payouts).
   */
  async admitting(rails: readonly RegisteredRail[]): Promise<RegisteredRail[]> {
    const admitted = await Promise.all(rails.map((rail) => rail.breaker.admission()));
    return rails.filter((_, i) => admitted[i]);
  }

  /** Does any enabled rail serve `mode`, breakers aside? None is `no_route`. */
  async servesAny(mode: Mode): Promise<boolean> {
    const { settings } = await this.routing();
    return settings.some((setting) => setting.enabled && setting.modes.includes(mode));
  }

  /**
   * What a submit to `rail` ended in: its breaker counts a refusal (not received), a failure of unknown
   * fate (timed out, threw) or a success (any answer, a rejection included), and a failure is counted by reason. A
   * send our own database failed (DatabaseFailed) is counted by reason only: it is not the rail's.
   */
  sent(rail: string, outcome: SendOutcome): void {
    const transport = outcome.status === 'not_received' || outcome.status === 'timeout' || outcome.status === 'error';
    const breaker = this.judged(rail);
    if (!transport) breaker?.success();
    else if ('database' in outcome) {
      // Our own database failed under the sandbox: not the rail's failure.
    } else if (outcome.status === 'not_received') breaker?.refused();
    else breaker?.failure();
    if (transport) this.metrics.sendFailed(rail, outcome.status);
    else if (outcome.status === 'failed') this.metrics.sendFailed(rail, outcome.reason);
  }

  async railForWaiting(payment: WaitingPayment): Promise<string | null> {
    if (payment.method === null) return null;
    const instrument = payment.method;
    const eligible = await this.candidates({
      tenantId: payment.tenant_id,
      mode: payment.mode,
      instrument,
      bankCode: payment.beneficiary.bankCode,
      amountMinor: payment.payout_amount,
    });
    // Its own rail first (the one routing chose), then the others in the routing order.
    const ordered = [
      ...eligible.filter((rail) => rail.name === payment.rail),
      ...eligible.filter((rail) => rail.name !== payment.rail),
    ];
    for (const rail of await this.admitting(ordered)) {
      if (rail.name === payment.rail) return rail.name;
      const deliverable = await rail.adapter
        .instrumentAvailable(payment.beneficiary, instrument, payment.method_requested)
        .catch(() => false);
      if (deliverable) return rail.name;
    }
    return null;
  }

  failedOver(from: string, to: string): void {
    this.metrics.failover(from, to);
  }

  private async load(): Promise<RailRouting> {
    const loadedAtMs = this.clock.now().getTime();
    const [stored, routes] = await Promise.all([listRailSettings(this.db), listRailRoutes(this.db)]);
    const routing = { settings: this.settingsOf(stored), routes };
    const unknown = routes.filter((route) => !this.rails.has(route.rail)).map((route) => route.rail);
    if (unknown.length > 0)
      this.log?.warn(
        { rails: [...new Set(unknown)] },
        'rail routing: rules name rails this process does not have; they are skipped',
      );
    this.cache = { routing, loadedAtMs };
    return routing;
  }
}
