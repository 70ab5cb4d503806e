import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  byPriority,
  candidateRails,
  catalogueRail,
  defaultOrder,
  RAIL_NAME_PATTERN,
  railServes,
  routeMatches,
  SANDBOX_RAIL,
  type RailRoute,
  type RailSetting,
  type RoutedPayout,
} from '../../src/domain/rail-routing.ts';

const ALL = ['pago_movil', 'transferencia'] as const;
const setting = (name: string, overrides: Partial<RailSetting> = {}): RailSetting => ({
  name,
  modes: ['test', 'live'],
  instruments: ALL,
  enabled: true,
  ...overrides,
});
const payout = (overrides: Partial<RoutedPayout> = {}): RoutedPayout => ({
  tenantId: 't1',
  mode: 'live',
  instrument: 'transferencia',
  bankCode: '0102',
  amountMinor: 500_000n,
  ...overrides,
});
let seq = 0;
const rule = (rail: string, overrides: Partial<RailRoute> = {}): RailRoute => ({
  id: `r${(seq += 1)}`,
  priority: 100,
  rail,
  tenantId: null,
  mode: null,
  instrument: null,
  bankCode: null,
  minAmount: null,
  maxAmount: null,
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)),
  ...overrides,
});

describe('rail routing', () => {
  it('with no rule, the eligible rails by name and the sandbox last', () => {
    const settings = [setting(SANDBOX_RAIL), setting('zeta'), setting('alpha')];
    assert.deepEqual(candidateRails(payout(), settings, []), ['alpha', 'zeta', SANDBOX_RAIL]);
    assert.deepEqual(['zeta', SANDBOX_RAIL, 'alpha'].sort(defaultOrder), ['alpha', 'zeta', SANDBOX_RAIL]);
  });

  it('only enabled rails serving the mode and instrument are eligible', () => {
    const settings = [
      setting('a', { enabled: false }),
      setting('b', { modes: ['test'] }),
      setting('c', { instruments: ['pago_movil'] }),
      setting('d'),
    ];
    assert.deepEqual(candidateRails(payout(), settings, []), ['d']);
    assert.equal(railServes(setting('c', { instruments: ['pago_movil'] }), 'live', 'pago_movil'), true);
    assert.deepEqual(
      candidateRails(payout(), [setting('a', { enabled: false })], [rule('a')]),
      [],
      'a rule never makes a rail eligible',
    );
  });

  it('a rule by bank code puts its rail first; others keep the default order', () => {
    const settings = [setting('alpha'), setting('beta')];
    const routes = [rule('beta', { bankCode: '0105' })];
    assert.deepEqual(candidateRails(payout({ bankCode: '0105' }), settings, routes), ['beta', 'alpha']);
    assert.deepEqual(candidateRails(payout({ bankCode: '0102' }), settings, routes), ['alpha', 'beta']);
  });

  it('amount ranges are inclusive at both ends', () => {
    const route = rule('beta', { minAmount: 100n, maxAmount: 200n });
    assert.deepEqual(
      [99n, 100n, 200n, 201n].map((amountMinor) => routeMatches(route, payout({ amountMinor }))),
      [false, true, true, false],
    );
    assert.equal(routeMatches(rule('beta', { minAmount: 100n }), payout({ amountMinor: 10n ** 15n })), true);
  });

  it('every condition must match: tenant, mode, instrument', () => {
    assert.equal(routeMatches(rule('b', { tenantId: 't2' }), payout()), false);
    assert.equal(routeMatches(rule('b', { mode: 'test' }), payout()), false);
    assert.equal(routeMatches(rule('b', { instrument: 'pago_movil' }), payout()), false);
    assert.equal(
      routeMatches(
        rule('b', { tenantId: 't1', mode: 'live', instrument: 'transferencia', bankCode: '0102' }),
        payout(),
      ),
      true,
    );
  });

  it('rules apply by priority, lowest first, then the oldest; each rail once', () => {
    const settings = [setting('a'), setting('b'), setting('c')];
    const routes = [
      rule('a', { priority: 50 }),
      rule('c', { priority: 10 }),
      rule('b', { priority: 50 }),
      rule('c', { priority: 60 }),
    ];
    assert.deepEqual(candidateRails(payout(), settings, routes), ['c', 'a', 'b']);
    const [first, second] = [rule('x', { priority: 5 }), rule('y', { priority: 5 })];
    assert.ok(byPriority(first!, second!) < 0, 'the older of two equal priorities first');
  });

  it('a rail name is what the rails table and the admin paths accept', () => {
    const pattern = new RegExp(RAIL_NAME_PATTERN);
    assert.deepEqual(
      ['sandbox', 'banco-a', 'bdv_2', 'BancoA', '-x', '', 'a'.repeat(64)].map((name) => pattern.test(name)),
      [true, true, true, false, false, false, false],
    );
  });

  it('a rule naming a rail that is not eligible is skipped', () => {
    const settings = [setting('a'), setting('b', { modes: ['test'] })];
    assert.deepEqual(candidateRails(payout(), settings, [rule('b', { priority: 1 }), rule('ghost', { priority: 2 })]), [
      'a',
    ]);
  });

  it("the catalogue's rail: the first for every payout of the tenant, mode and instrument; a rule by bank or amount does not choose it", () => {
    const settings = [
      setting(SANDBOX_RAIL, { modes: ['test'] }),
      setting('alpha', { modes: ['live'] }),
      setting('beta', { modes: ['live'] }),
    ];
    assert.equal(catalogueRail('t1', 'live', 'pago_movil', settings, []), 'alpha');
    assert.equal(catalogueRail('t1', 'test', 'pago_movil', settings, []), SANDBOX_RAIL);
    const byBank = [rule('beta', { bankCode: '0105' }), rule('beta', { minAmount: 1n })];
    assert.equal(catalogueRail('t1', 'live', 'pago_movil', settings, byBank), 'alpha');
    const forTenant = [rule('beta', { tenantId: 't1', instrument: 'transferencia' })];
    assert.equal(catalogueRail('t1', 'live', 'transferencia', settings, forTenant), 'beta');
    assert.equal(catalogueRail('t1', 'live', 'pago_movil', settings, forTenant), 'alpha');
    assert.equal(catalogueRail('t2', 'live', 'transferencia', settings, forTenant), 'alpha');
    assert.equal(
      catalogueRail('t1', 'live', 'pago_movil', [setting('alpha', { enabled: false, modes: ['live'] })], []),
      undefined,
    );
  });
});
