// Which rails may carry a payout, and in what order: the rails' settings and the operator's routing
// rules, applied to one payout. Pure: the caller holds the settings (cached) and the breakers.
//
// 1. Eligible: a rail that is enabled and serves the payout's mode and instrument.
// 2. Ordered: the rules that match the payout, by priority (lowest first, then oldest first), put
//    their rails first, each rail once, in that order.
// 3. The eligible rails no matching rule names follow in the default order: connectors by name, the
//    sandbox last (a rail an operator configured is meant to carry the payouts it can; the sandbox
//    is the fallback of test mode, where it is the only rail unless a connector is set to serve it).
// A rule naming a rail that is not eligible for this payout (disabled, another mode or instrument)
// is skipped: a rule orders rails, it never makes one eligible.

import type { Instrument } from './instrument.ts';
import type { Mode } from './partition.ts';

/** What a rail's name may be (settings, rules and metrics labels name it): checked when a process starts. */
export const RAIL_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';

/** The sandbox rail's name: always present, last in the default order. */
export const SANDBOX_RAIL = 'sandbox';

export interface RailSetting {
  name: string;
  modes: readonly Mode[];
  instruments: readonly Instrument[];
  enabled: boolean;
}

/** A routing rule: each condition set (not null) must match the payout. Amounts are BS minor units, inclusive. */
export interface RailRoute {
  id: string;
  priority: number;
  rail: string;
  tenantId: string | null;
  mode: Mode | null;
  instrument: Instrument | null;
  bankCode: string | null;
  minAmount: bigint | null;
  maxAmount: bigint | null;
  createdAt: Date;
}

/** What routing looks at in a payout. */
export interface RoutedPayout {
  tenantId: string;
  mode: Mode;
  instrument: Instrument;
  bankCode: string;
  /** What the beneficiary receives, BS minor units. */
  amountMinor: bigint;
}

/** @internal Exported for its tests, not used elsewhere. */
export function railServes(setting: RailSetting, mode: Mode, instrument: Instrument): boolean {
  return setting.enabled && setting.modes.includes(mode) && setting.instruments.includes(instrument);
}

/** @internal Exported for its tests, not used elsewhere. */
export function routeMatches(route: RailRoute, payout: RoutedPayout): boolean {
  return (
    (route.tenantId === null || route.tenantId === payout.tenantId) &&
    (route.mode === null || route.mode === payout.mode) &&
    (route.instrument === null || route.instrument === payout.instrument) &&
    (route.bankCode === null || route.bankCode === payout.bankCode) &&
    (route.minAmount === null || payout.amountMinor >= route.minAmount) &&
    (route.maxAmount === null || payout.amountMinor <= route.maxAmount)
  );
}

/** Rules in the order they apply: priority, then the older first, then by id (a total order). */
export function byPriority(a: RailRoute, b: RailRoute): number {
  return (
    a.priority - b.priority || a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

/** The default order of rails no rule names: by name, the sandbox last. */
export function defaultOrder(a: string, b: string): number {
  if (a === b) return 0;
  if (a === SANDBOX_RAIL) return 1;
  if (b === SANDBOX_RAIL) return -1;
  return a < b ? -1 : 1;
}

/** The rails that may carry `payout`, in the order they are tried. Empty: no rail can carry it. */
export function candidateRails(
  payout: RoutedPayout,
  settings: readonly RailSetting[],
  routes: readonly RailRoute[],
): string[] {
  const eligible = new Set(
    settings.filter((setting) => railServes(setting, payout.mode, payout.instrument)).map((setting) => setting.name),
  );
  const ordered: string[] = [];
  for (const route of [...routes].sort(byPriority)) {
    if (eligible.has(route.rail) && !ordered.includes(route.rail) && routeMatches(route, payout))
      ordered.push(route.rail);
  }
  const rest = [...eligible].filter((name) => !ordered.includes(name)).sort(defaultOrder);
  return [...ordered, ...rest];
}

/**
 * The rail a tenant's payouts in `mode` by `instrument` are offered to first whatever their bank and
 * amount — by the rules that hold for all of them (no bank or amount condition), else the default
 * order: the rail whose bank catalogue that tenant is served. Undefined: no rail serves them.
 */
export function catalogueRail(
  tenantId: string,
  mode: Mode,
  instrument: Instrument,
  settings: readonly RailSetting[],
  routes: readonly RailRoute[],
): string | undefined {
  const forEveryPayout = routes.filter(
    (route) => route.bankCode === null && route.minAmount === null && route.maxAmount === null,
  );
  return candidateRails({ tenantId, mode, instrument, bankCode: '', amountMinor: 0n }, settings, forEveryPayout)[0];
}
