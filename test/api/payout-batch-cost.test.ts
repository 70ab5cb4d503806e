// A payout batch costs what its payouts cost. Its items are charged to a budget of items per second
// (RATE_LIMIT_RPS per key, PAYOUT_BATCH_TENANT_ITEMS_PER_S per tenant), at the DEFAULT settings: a full
// batch passes, the next waits for the refill (429 rate_limited with Retry-After, nothing written).
// A batch that cannot pay even its cheapest item is refused whole (422) before any item is priced,
// unless it is the retry of one that paid (its key, or an item's reference, holds an answer). Otherwise
// its items are checked against the tenant's funds and limits before anything of them is written: an
// item it cannot pay costs no quote; an item its transaction refuses after all leaves no quote behind.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { client, ENGINE, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import { SENDER, beneficiary, fundedTenant, idempotencyKey } from '../support/payouts.ts';

const ITEMS = 1000;

const item = (reference: string, amount: number, extra: Record<string, unknown> = {}) => ({
  reference,
  deliver: { asset: 'BS', amount },
  method: 'pago_movil',
  beneficiary: beneficiary('V99990001'),
  sender: SENDER,
  ...extra,
});
const batchOf = (prefix: string, count: number, amount = 150_000) =>
  Array.from({ length: count }, (_, i) => item(`${prefix}-${i}`, amount));

describe(`payout batches cost what their payouts cost, on ${ENGINE}`, () => {
  let t: TestApp;
  let admin: Client;
  before(async () => {
    // The harness turns the request limit off for other tests; here it is the default.
    t = await startTestApp({ env: { QUOTE_TTL_SECONDS: '600', RATE_LIMIT_RPS: '1000' } });
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  const quotesOf = async (tenantId: string) =>
    Number(
      (await t.db.query<{ n: string }>('SELECT count(*)::text AS n FROM quotes WHERE tenant_id = $1', [tenantId]))
        .rows[0]!.n,
    );
  const post = (api: Client, items: unknown[]) =>
    api.post('/v1/payout-batches', { items }, { 'idempotency-key': idempotencyKey() });

  it(`a batch of ${ITEMS} that can pay nothing is refused whole: 422 insufficient_tenant_funds, no batch, no quote`, async () => {
    const broke = await fundedTenant(t, 0);
    const started = performance.now();
    const answer = await post(broke.api, batchOf('broke', ITEMS));
    const ms = performance.now() - started;
    assert.equal(answer.status, 422, answer.raw.slice(0, 500));
    assert.equal(answer.body.error.code, 'insufficient_tenant_funds');
    // The least its cheapest item takes: its amount, before the fee.
    assert.deepEqual(answer.body.error.meta, { asset: 'BS', required: '150000', available: '0' });
    assert.equal(await quotesOf(broke.tenantId), 0, 'no quote');
    for (const table of ['payout_batches', 'payout_batch_items', 'payments']) {
      const rows = await t.db.query(`SELECT 1 FROM ${table} WHERE tenant_id = $1`, [broke.tenantId]);
      assert.equal(rows.rows.length, 0, `nothing in ${table}`);
    }
    console.log(`a batch of ${ITEMS} that can pay nothing refused in ${ms.toFixed(0)} ms on ${ENGINE}`);
  });

  it('funds below the cheapest item: refused whole; funds for the cheapest: decided item by item', async () => {
    const tenant = await fundedTenant(t, 99_999);
    const refused = await post(tenant.api, [item('least-0', 150_000), item('least-1', 100_000)]);
    assert.equal(refused.status, 422, refused.raw);
    assert.deepEqual(refused.body.error.meta, { asset: 'BS', required: '100000', available: '99999' });
    // 100,000 covers the cheapest item's amount but not its fee: the items are looked at, each refused.
    const enough = await fundedTenant(t, 100_000);
    const decided = await post(enough.api, [item('least-0', 150_000), item('least-1', 100_000)]);
    assert.equal(decided.status, 201, decided.raw);
    assert.deepEqual(
      decided.body.items.map((i: { error: { code: string } | null }) => i.error?.code),
      ['insufficient_tenant_funds', 'insufficient_tenant_funds'],
    );
    assert.equal(await quotesOf(enough.tenantId), 0);
  });

  it('an item paying with a quote takes at least one minor unit: a tenant with nothing is refused whole, even for an unknown quote', async () => {
    const broke = await fundedTenant(t, 0);
    const { deliver: _deliver, ...withQuote } = item('quoted-0', 150_000);
    const answer = await post(broke.api, [{ ...withQuote, quoteId: '00000000-0000-4000-8000-000000000000' }]);
    assert.equal(answer.status, 422, answer.raw);
    assert.equal(answer.body.error.code, 'insufficient_tenant_funds');
    assert.equal(answer.body.error.meta.required, '1');
  });

  it('the retry of a batch that spent the balance answers its payments, with its key or a new one', async () => {
    const tenant = await fundedTenant(t, 2 * 151_500);
    const key = idempotencyKey();
    const items = batchOf('spent', 2);
    const first = await tenant.api.post('/v1/payout-batches', { items }, { 'idempotency-key': key });
    assert.equal(first.status, 201, first.raw);
    const paid = first.body.items.map((i: { paymentId: string }) => i.paymentId);
    assert.ok(paid.every(Boolean), first.raw);
    const replayed = await tenant.api.post('/v1/payout-batches', { items }, { 'idempotency-key': key });
    assert.equal(replayed.status, 201, replayed.raw);
    assert.deepEqual(
      replayed.body.items.map((i: { paymentId: string }) => i.paymentId),
      paid,
    );
    const again = await post(tenant.api, items);
    assert.equal(again.status, 201, again.raw);
    assert.deepEqual(
      again.body.items.map((i: { paymentId: string }) => i.paymentId),
      paid,
    );
    // A new reference with nothing left is refused whole.
    assert.equal((await post(tenant.api, batchOf('spent-new', 2))).status, 422);
  });

  it('funds for two items of five: two pay, three are refused, two quotes written', async () => {
    const tenant = await fundedTenant(t, 2 * 151_500);
    const answer = await post(tenant.api, batchOf('two', 5));
    assert.equal(answer.status, 201, answer.raw);
    const shown = answer.body.items.map(
      (i: { status: string; error: { code: string } | null }) => i.error?.code ?? 'paid',
    );
    assert.deepEqual(
      shown,
      ['paid', 'paid', 'insufficient_tenant_funds', 'insufficient_tenant_funds', 'insufficient_tenant_funds'],
      answer.raw,
    );
    assert.equal(answer.body.counts.refused, 3);
    assert.equal(await quotesOf(tenant.tenantId), 2);
  });

  it('an item refused in its transaction (a rule per customer, left to the transaction) leaves no quote', async () => {
    const tenant = await fundedTenant(t);
    const customer = 'c0ffee00-0000-4000-8000-000000000001';
    const rule = await admin.post('/v1/admin/limit-rules', {
      scope: 'customer',
      tenantId: tenant.tenantId,
      subjectId: customer,
      method: '*',
      per_tx_max: 100_000,
      daily_max: 100_000_000,
    });
    assert.equal(rule.status, 201, rule.raw);
    const answer = await post(tenant.api, [
      item('cust-0', 150_000, { customerId: customer }),
      item('cust-1', 50_000, { customerId: customer }),
    ]);
    assert.equal(answer.status, 201, answer.raw);
    assert.equal(answer.body.items[0].error?.code, 'limit_exceeded', answer.raw);
    assert.notEqual(answer.body.items[1].status, 'refused', answer.raw);
    assert.equal(await quotesOf(tenant.tenantId), 1, "only the paid item's quote remains");
  });

  it('the item budget at the defaults: a full batch passes, the next waits (429, Retry-After, nothing written); keys of one tenant share a tenant budget', async () => {
    // Time stands still unless the test moves it: the buckets refill only when it says so.
    const clock = new ManualClock();
    const frozen = await startTestApp({ clock, env: { QUOTE_TTL_SECONDS: '600', RATE_LIMIT_RPS: '1000' } });
    try {
      await itemBudget(frozen, clock);
    } finally {
      await frozen.close();
    }
  });
});

async function itemBudget(t: TestApp, clock: ManualClock): Promise<void> {
  const admin = client(t.app, t.platformKey);
  const post = (api: Client, items: unknown[]) =>
    api.post('/v1/payout-batches', { items }, { 'idempotency-key': idempotencyKey() });
  {
    // Its batches are refused (422: it can pay nothing) after the budget has been charged.
    const tenant = await fundedTenant(t, 0);
    const first = await post(tenant.api, batchOf('budget-a', ITEMS));
    assert.equal(first.status, 422, first.raw.slice(0, 300));
    const second = await post(tenant.api, batchOf('budget-b', ITEMS));
    assert.equal(second.status, 429, second.raw);
    assert.equal(second.body.error.code, 'rate_limited');
    assert.equal(second.body.error.meta.budget, 'batch_items_per_key');
    assert.ok(Number(second.headers['retry-after']) >= 1, JSON.stringify(second.headers));
    const batches = await t.db.query('SELECT 1 FROM payout_batches WHERE tenant_id = $1', [tenant.tenantId]);
    assert.equal(batches.rows.length, 0, 'neither refused batch wrote anything');
    // More keys do not buy more: a second key has its own budget, the tenant's (2,000 a second) is shared.
    const keys = await Promise.all(
      [1, 2].map(() => admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test' })),
    );
    const [other, third] = keys.map((k) => client(t.app, k.body.key as string));
    assert.equal((await post(other!, batchOf('budget-c', ITEMS))).status, 422);
    const past = await post(third!, batchOf('budget-d', ITEMS));
    assert.equal(past.status, 429, past.raw);
    assert.equal(past.body.error.meta.budget, 'batch_items_per_tenant');
    // A second later the first key's budget is full again.
    clock.advance(1_000);
    assert.equal((await post(tenant.api, batchOf('budget-e', ITEMS))).status, 422);
  }
}
