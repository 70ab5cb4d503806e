// The reads a payment's timeline is made of, beyond GET /v1/payments/{id}: its ledger entries
// (GET /v1/payments/{id}/ledger) and its outcome events (GET /v1/events?paymentId=).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertEnvelope, createTenant, ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { AMPLE_RAIL_TIMEOUT_MS, beneficiary, type FundedTenant, fundedTenant, payout } from '../support/payouts.ts';

describe(`a payment's ledger entries and events on ${ENGINE}`, () => {
  let t: TestApp;
  let tenant: FundedTenant;
  let other: FundedTenant;
  const ids = { settled: '', failed: '', otherSettled: '' };

  before(async () => {
    t = await startTestApp({ env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) } });
    tenant = await fundedTenant(t);
    other = await fundedTenant(t);
    const settled = await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
    assert.equal(settled.body.status, 'settled', settled.raw);
    ids.settled = settled.body.id;
    const failed = await payout(tenant.api, { beneficiary: beneficiary('V99990004') });
    assert.equal(failed.body.status, 'failed', failed.raw);
    ids.failed = failed.body.id;
    const otherSettled = await payout(other.api, { beneficiary: beneficiary('V99990001') });
    ids.otherSettled = otherSettled.body.id;
  });
  after(async () => t.close());

  it('GET /v1/payments/{id}/ledger: the charge and the settlement, each balanced, amounts signed strings', async () => {
    const ledger = await tenant.api.get(`/v1/payments/${ids.settled}/ledger`);
    assert.equal(ledger.status, 200, ledger.raw);
    assert.deepEqual(
      ledger.body.data.map((e: any) => e.kind),
      ['payout', 'payout_settlement'],
    );
    for (const entry of ledger.body.data) {
      assert.deepEqual(Object.keys(entry).sort(), ['created_at', 'id', 'kind', 'postings']);
      const sums = new Map<string, bigint>();
      for (const posting of entry.postings) {
        assert.match(posting.amount, /^-?[0-9]+$/);
        sums.set(posting.asset, (sums.get(posting.asset) ?? 0n) + BigInt(posting.amount));
      }
      for (const sum of sums.values()) assert.equal(sum, 0n, `${entry.kind} balances`);
    }
    const charge = ledger.body.data[0].postings;
    assert.deepEqual(
      charge.find((p: any) => p.account === 'prefunding'),
      { asset: 'BS', account: 'prefunding', amount: '1010000' },
      'deliver 1,000,000 plus the 1 % fee leaves the prefunding balance',
    );
    assert.deepEqual(
      charge.find((p: any) => p.account === 'in_flight'),
      { asset: 'BS', account: 'in_flight', amount: '-1000000' },
    );
  });

  it('a payment failed at the rail lists the charge, then the charge given back in full', async () => {
    const ledger = await tenant.api.get(`/v1/payments/${ids.failed}/ledger`);
    assert.equal(ledger.status, 200, ledger.raw);
    assert.deepEqual(
      ledger.body.data.map((e: any) => e.kind),
      ['payout', 'payout_failure'],
    );
    const [charge, refund] = ledger.body.data.map(
      (e: any) => new Map(e.postings.map((p: any) => [`${p.asset}/${p.account}`, BigInt(p.amount)])),
    );
    for (const [account, amount] of charge) assert.equal(refund.get(account), -amount, `${account} given back`);
  });

  it("another tenant's payment is 404, and a key without payments:read is 403", async () => {
    assertEnvelope(assert, await tenant.api.get(`/v1/payments/${ids.otherSettled}/ledger`), 404, 'resource_not_found');
    assertEnvelope(
      assert,
      await tenant.api.get('/v1/payments/00000000-0000-4000-8000-000000000000/ledger'),
      404,
      'resource_not_found',
    );
    assertEnvelope(assert, await tenant.api.get('/v1/payments/not-a-uuid/ledger'), 400, 'validation_failed');
    const narrow = await createTenant(t, { scopes: ['events:read'] });
    assertEnvelope(assert, await narrow.api.get(`/v1/payments/${ids.settled}/ledger`), 403, 'scope_missing');
  });

  it("GET /v1/events?paymentId= lists that payment's events only, and none of another tenant's", async () => {
    const settled = await tenant.api.get(`/v1/events?paymentId=${ids.settled}`);
    assert.equal(settled.status, 200, settled.raw);
    assert.deepEqual(
      settled.body.data.map((e: any) => [e.event_type, e.aggregate_id]),
      [['payment.settled', ids.settled]],
    );
    const failed = await tenant.api.get(`/v1/events?paymentId=${ids.failed}&eventType=payment.failed&status=pending`);
    assert.deepEqual(
      failed.body.data.map((e: any) => e.aggregate_id),
      [ids.failed],
    );
    const filteredOut = await tenant.api.get(`/v1/events?paymentId=${ids.failed}&eventType=payment.settled`);
    assert.deepEqual(filteredOut.body.data, []);
    const foreign = await tenant.api.get(`/v1/events?paymentId=${ids.otherSettled}`);
    assert.equal(foreign.status, 200);
    assert.deepEqual(foreign.body, { data: [], has_more: false, next_cursor: null });
    assertEnvelope(assert, await tenant.api.get('/v1/events?paymentId=nope'), 400, 'validation_failed');
  });
});
