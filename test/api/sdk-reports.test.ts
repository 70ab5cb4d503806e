// The SDK's payout report against the real service listening on a port: a tenant's report of its
// own payouts, the platform key's report on that tenant (the same figures), and the API's refusal
// (the platform key without `mode`) as a BolivarError.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Bolivar, BolivarError, type PayoutReport, type PayoutReportQuery } from '../../sdk/src/index.ts';
import { ManualClock } from '../support/clock.ts';
import { ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { AMPLE_RAIL_TIMEOUT_MS } from '../support/payouts.ts';

const SENDER = {
  nationalId: 'V12345678',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '04141234567',
  email: 'ana@example.com',
};

// The service's clock: 11:00 in Caracas (UTC−4) on the report's day.
const DAY = '2026-03-09';

describe(`the SDK's payout report against the service, on ${ENGINE}`, () => {
  let t: TestApp;
  let baseUrl: string;
  let admin: Bolivar;
  let client: Bolivar;
  let tenantId: string;
  let apiKey: string;

  before(async () => {
    t = await startTestApp({
      clock: new ManualClock(`${DAY}T15:00:00Z`),
      env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    admin = new Bolivar({ apiKey: t.platformKey, baseUrl });
    tenantId = (await admin.admin.tenants.create({ name: 'SDK Reportes' })).id;
    const key = await admin.admin.keys.issue(tenantId, { mode: 'test' });
    await admin.admin.tenants.fund(tenantId, { mode: 'test', asset: 'BS', amount: 100_000_000n });
    apiKey = key.key;
    client = new Bolivar({ apiKey, baseUrl });
    // One settles at once, one fails at once (docs/sandbox.md).
    for (const [nationalId, amount] of [
      ['V99990001', 1_000_000n],
      ['V99990004', 2_000_000n],
    ] as const) {
      const quote = await client.quotes.create({ deliver: { asset: 'BS', amount } });
      const paid = await client.payouts.create({
        quoteId: quote.id,
        method: 'pago_movil',
        sender: SENDER,
        beneficiary: { fullName: 'María Pérez', nationalId, bankCode: '0102', phone: '04241234567' },
      });
      assert.ok(paid.status === 'settled' || paid.status === 'failed', paid.status);
    }
  });

  after(async () => {
    await t?.close();
  });

  it("reports.payouts: the tenant's own report, typed, as the API answers it", async () => {
    const today = DAY;
    const query: PayoutReportQuery = { from: today, to: today, granularity: 'hour' };
    const report: PayoutReport = await client.reports.payouts(query);
    assert.equal(report.tenantId, tenantId);
    assert.equal(report.mode, 'test');
    assert.equal(report.buckets.length, 24);
    assert.equal(report.totals.count, 2);
    assert.deepEqual(report.totals.byStatus.settled, { count: 1, amount: '1000000' });
    assert.deepEqual(report.totals.byStatus.failed, { count: 1, amount: '2000000' });
    assert.equal(report.totals.deliveredAmount, '1000000');
    const bucket = report.buckets.find((b) => b.count > 0)!;
    assert.equal(bucket.count, 2);
    assert.equal(bucket.timeToOutcome.count, 2);
    assert.deepEqual(
      report.instruments.map((i) => [i.method, i.count, i.successRate]),
      [['pago_movil', 2, 0.5]],
    );
    assert.deepEqual(report.failureReasons, [
      { status: 'failed', reason: 'beneficiary_mismatch', count: 1, amount: '2000000' },
    ]);
    // The same as the raw API answer, field for field.
    const raw = await fetch(`${baseUrl}/v1/reports/payouts?from=${today}&to=${today}&granularity=hour`, {
      headers: { 'x-api-key': apiKey },
    });
    assert.equal(raw.status, 200);
    assert.deepEqual(await raw.json(), report);
  });

  it('the platform key names the mode and the tenant, and gets the same figures', async () => {
    const today = DAY;
    const own = await client.reports.payouts({ from: today, to: today });
    const platform = await admin.reports.payouts({ from: today, to: today, mode: 'test', tenantId });
    assert.deepEqual(platform, own);
    const everyone = await admin.reports.payouts({ from: today, to: today, mode: 'test' });
    assert.equal(everyone.tenantId, null);
    assert.equal(everyone.totals.count, 2, 'the only tenant with payouts');
  });

  it('an invalid query rejects with the API error', async () => {
    const today = DAY;
    await assert.rejects(admin.reports.payouts({ from: today, to: today }), (error: unknown) => {
      assert.ok(error instanceof BolivarError);
      assert.equal(error.status, 400);
      assert.equal(error.code, 'validation_failed');
      assert.deepEqual(
        (error.meta?.errors as { field: string }[]).map((e) => e.field),
        ['mode'],
      );
      return true;
    });
  });
});
