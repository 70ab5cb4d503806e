// The SDK against the real service (in process, listening on a port): every resource method reaches
// its route with the right method, path, query and body, answers are typed as they arrive, errors
// carry the envelope's fields, lists walk every page, and the statement's metadata filter is exposed.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Bolivar, BolivarError, type StatementRow } from '../../sdk/src/index.ts';
import { ENGINE, startTestApp, type TestApp } from '../support/harness.ts';

const SENDER = {
  nationalId: 'V11222333',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '+584121234567',
  email: 'ana@example.com',
};
const UNKNOWN = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

describe(`the SDK against the service, on ${ENGINE}`, () => {
  let t: TestApp;
  let admin: Bolivar;
  let client: Bolivar;
  let tenantId: string;

  async function pay(nationalId: string, metadata: Record<string, string> = {}, idempotencyKey?: string) {
    const quote = await client.quotes.create({ deliver: { asset: 'BS', amount: 1_000_000n } });
    return client.payouts.create(
      {
        quoteId: quote.id,
        method: 'pago_movil',
        sender: SENDER,
        metadata,
        beneficiary: { fullName: 'María Pérez', nationalId, bankCode: '0102', phone: '04141234567' },
      },
      idempotencyKey === undefined ? {} : { idempotencyKey },
    );
  }

  before(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    admin = new Bolivar({ apiKey: t.platformKey, baseUrl });
    const tenant = await admin.admin.tenants.create({ name: 'SDK Remesas', feeBps: 100 });
    tenantId = tenant.id;
    const key = await admin.admin.keys.issue(tenantId, { mode: 'test' });
    client = new Bolivar({ apiKey: key.key, baseUrl });
    const funded = await admin.admin.tenants.fund(tenantId, { mode: 'test', asset: 'BS', amount: 1_000_000_000n });
    assert.equal(funded.prefundingBalance, '1000000000');
  });

  after(async () => {
    await t.close();
  });

  it('customer API: tenant, quotes, beneficiaries, payouts, banks, payments, treasury, limits', async () => {
    const me = await client.tenant.me();
    assert.equal(me.tenantId, tenantId);
    assert.equal(me.mode, 'test');

    const quote = await client.quotes.create({
      deliver: { asset: 'BS', amount: '5000000' },
      metadata: { order_id: 'sdk-1' },
    });
    assert.equal(quote.deliver.amount, '5000000');
    assert.equal(quote.fee.amount, '50000');
    assert.deepEqual(await client.quotes.get(quote.id), quote);

    const beneficiary = await client.beneficiaries.create({
      fullName: 'María Pérez',
      nationalId: 'V99990001',
      bankCode: '0102',
      phone: '04141234567',
    });
    assert.equal(beneficiary.created, true);
    assert.equal((await client.beneficiaries.get(beneficiary.id)).national_id, 'V99990001');

    const body = {
      quoteId: quote.id,
      method: 'pago_movil' as const,
      beneficiaryId: beneficiary.id,
      sender: SENDER,
      metadata: { order_id: 'sdk-1' },
    };
    const payout = await client.payouts.create(body, { idempotencyKey: 'sdk-order-1' });
    assert.equal(payout.status, 'settled');
    const replay = await client.payouts.create(body, { idempotencyKey: 'sdk-order-1' });
    assert.deepEqual(replay, payout, 'the same key returns the first answer: no second payout');

    const payment = await client.payments.get(payout.id);
    assert.equal(payment.status, 'settled');
    assert.deepEqual(payment.metadata, { order_id: 'sdk-1' });

    const banks = await client.payouts.banks({ method: 'pago_movil' });
    assert.equal(banks.method, 'pago_movil');
    assert.ok(banks.data.some((bank) => bank.code === '0102'));

    const position = await client.treasury.position();
    assert.equal(position.prefundingBalance, String(1_000_000_000 - 5_050_000));
    const usage = await client.limits.usage({ asset: 'BS' });
    assert.equal(usage.usage.day_amount, '5000000');

    const csv = await client.payments.exportCsv({ metadata_key: 'order_id', metadata_value: 'sdk-1' });
    const lines = csv.trimEnd().split('\r\n');
    assert.equal(lines.length, 2, csv);
    assert.ok(lines[1]!.startsWith(`${payout.id},`));
  });

  it('lists walk every page as an async iterator; listPage reads one', async () => {
    const made = [];
    for (let i = 0; i < 5; i += 1) made.push((await pay('V99990001', { order_id: 'walk', n: String(i) })).id);
    await pay('V99990004', { order_id: 'other' });

    const walked: StatementRow[] = [];
    for await (const row of client.payments.list({ metadata_key: 'order_id', metadata_value: 'walk', limit: 2 }))
      walked.push(row);
    assert.deepEqual(
      walked.map((r) => r.id),
      [...made].reverse(),
      'newest first, every page, nothing else',
    );

    const pages = [];
    for await (const page of client.payments
      .list({ metadata_key: 'order_id', metadata_value: 'walk', limit: 2 })
      .pages())
      pages.push(page.data.length);
    assert.deepEqual(pages, [2, 2, 1]);

    const first = await client.payments.listPage({ limit: 2 });
    assert.equal(first.data.length, 2);
    assert.equal(first.has_more, true);
    const second = await client.payments.listPage({ limit: 2, cursor: first.next_cursor! });
    assert.notEqual(second.data[0]!.id, first.data[0]!.id);

    const failed = await client.payments.list({ status: 'failed' }).toArray();
    assert.equal(failed.length, 1);

    const beneficiaries = await client.beneficiaries.list({ limit: 1 }).toArray();
    assert.ok(beneficiaries.length >= 2);
    assert.equal(new Set(beneficiaries.map((b) => b.id)).size, beneficiaries.length);
  });

  it('errors carry the envelope: status, code, type, message, requestId, meta', async () => {
    const missing = await client.payments.get(UNKNOWN).catch((e: unknown) => e);
    assert.ok(missing instanceof BolivarError);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'resource_not_found');
    assert.equal(missing.type, 'invalid_request_error');
    assert.match(missing.requestId!, /^req_[0-9a-f]{32}$/);
    assert.ok(missing.message.length > 0);

    const invalid = await client.payments.listPage({ metadata_key: 'order_id' }).catch((e: unknown) => e);
    assert.ok(invalid instanceof BolivarError);
    assert.equal(invalid.code, 'validation_failed');
    assert.deepEqual(
      (invalid.meta?.errors as { field: string }[]).map((e) => e.field),
      ['metadata_value'],
    );

    const reused = await client.quotes.create(
      { deliver: { asset: 'BS', amount: 1000 } },
      { idempotencyKey: 'sdk-reused' },
    );
    assert.ok(reused.id);
    const conflict = await client.quotes
      .create({ deliver: { asset: 'BS', amount: 2000 } }, { idempotencyKey: 'sdk-reused' })
      .catch((e: unknown) => e);
    assert.ok(conflict instanceof BolivarError);
    assert.equal(conflict.code, 'idempotency_key_reused');
    assert.equal(conflict.status, 409);

    const scope = await admin.payments.get(UNKNOWN).catch((e: unknown) => e);
    assert.ok(scope instanceof BolivarError);
    assert.equal(scope.status, 403);
  });

  it('events and the sandbox: list, get, retry, retryDead, simulate', async () => {
    const payout = await pay('V99990001', { order_id: 'events' });
    const events = await client.events.list({ eventType: 'payment.settled' }).toArray();
    const event = events.find((e) => e.aggregate_id === payout.id);
    assert.ok(event, JSON.stringify(events));
    const detail = await client.events.get(event.id);
    assert.equal(detail.id, event.id);
    const retried = await client.events.retry(event.id);
    assert.equal(retried.id, event.id);
    assert.equal(typeof (await client.events.retryDead()).requeued, 'number');

    const reversed = await client.sandbox.simulate(payout.id, { outcome: 'reverse' });
    assert.equal(reversed.status, 'reversed');
    const deliveries = await client.sandbox.webhookDeliveriesPage({ limit: 5 });
    assert.ok(Array.isArray(deliveries.data));
  });

  it("admin API: a tenant's statement in a mode is the tenant's own, page after page", async () => {
    for (const n of [1, 2, 3]) await pay(`V9999010${n}`, { order_id: 'admin-walk' });
    const filters = { metadata_key: 'order_id', metadata_value: 'admin-walk' };
    const own = await client.payments.list(filters).toArray();
    assert.equal(own.length, 3);
    assert.deepEqual(await admin.admin.payments.list(tenantId, { mode: 'test', ...filters, limit: 2 }).toArray(), own);
    const first = await admin.admin.payments.listPage(tenantId, { mode: 'test', ...filters, limit: 2 });
    assert.deepEqual(first.data, own.slice(0, 2));
    assert.equal(first.has_more, true);
    assert.deepEqual((await admin.admin.payments.listPage(tenantId, { mode: 'live', ...filters })).data, []);
    const unknown = await admin.admin.payments.listPage(UNKNOWN, { mode: 'test' }).catch((e: unknown) => e);
    assert.ok(
      unknown instanceof BolivarError && unknown.status === 404 && unknown.code === 'resource_not_found',
      String(unknown),
    );
  });

  it('admin API: tenants, keys, rates, limit rules, webhook endpoint, senders, recheck', async () => {
    const tenant = await admin.admin.tenants.get(tenantId);
    assert.equal(tenant.name, 'SDK Remesas');
    const updated = await admin.admin.tenants.update(tenantId, { feeFixed: 100n, creditLimits: { USD: '5000' } });
    assert.equal(updated.feeFixed, '100');
    assert.equal(updated.creditLimits.USD, '5000');
    const tenants = await admin.admin.tenants.list({ limit: 1 }).toArray();
    assert.ok(tenants.some((x) => x.id === tenantId));

    const keys = await admin.admin.keys.list(tenantId);
    assert.equal(keys.data.length, 1);
    const extra = await admin.admin.keys.issue(tenantId, { mode: 'live', scopes: ['payments:read'] });
    assert.deepEqual(await admin.admin.keys.revoke(extra.id), { id: extra.id, revoked: true });

    const rate = await admin.admin.rates.set('USD', { market: '930.50' });
    assert.equal(rate.asset, 'USD');
    assert.ok((await admin.admin.rates.list()).data.some((r) => r.asset === 'USD'));

    const rule = await admin.admin.limitRules.create({
      scope: 'tenant',
      tenantId,
      method: '*',
      per_tx_max: 10_000_000n,
      daily_max: '50000000',
    });
    assert.equal(rule.per_tx_max, '10000000');
    assert.ok((await admin.admin.limitRules.list({ tenantId })).data.some((r) => r.id === rule.id));
    assert.deepEqual(await admin.admin.limitRules.delete(rule.id), { id: rule.id, deleted: true });

    const endpoint = await admin.admin.tenants.setWebhookEndpoint(tenantId, {
      mode: 'test',
      url: 'http://127.0.0.1:9/hooks',
    });
    assert.match(endpoint.secret, /^whsec_/);
    const rotated = await admin.admin.tenants.rotateWebhookSecret(tenantId, { mode: 'test' });
    assert.notEqual(rotated.secret, endpoint.secret);

    const sender = await admin.admin.tenants.setDefaultSender(tenantId, { mode: 'test', sender: SENDER });
    assert.equal(sender.sender.nationalId, SENDER.nationalId);
    const customer = await admin.admin.tenants.setCustomerSender(tenantId, UNKNOWN, { mode: 'test', sender: SENDER });
    assert.equal(customer.sender.nationalId, SENDER.nationalId);

    const closed = await admin.admin.tenants.close(tenantId, { mode: 'test' }).catch((e: unknown) => e);
    assert.ok(!(closed instanceof Error) || (closed instanceof BolivarError && closed.status < 500), String(closed));

    const unresolved = await pay('V99990002');
    const recheck = await admin.admin.payments.recheck(unresolved.id);
    assert.equal(recheck.id, unresolved.id);
  });
});
