import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertEnvelope, client, createTenant, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  idempotencyKey,
  payout,
  position,
  quote,
  SENDER,
} from '../support/payouts.ts';

const UNKNOWN = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

describe('POST /v1/payouts: request rules, sender resolution, scopes and isolation', () => {
  let t: TestApp;
  let tenant: FundedTenant;
  let admin: Client;
  before(async () => {
    t = await startTestApp({ env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) } });
    tenant = await fundedTenant(t);
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  it('validates the body: quoteId, method, one of beneficiaryId/beneficiary, inline beneficiary rules', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ method: 'pago_movil', beneficiary: beneficiary() }, 'quoteId'],
      [{ quoteId: 'x', method: 'pago_movil', beneficiary: beneficiary() }, 'quoteId'],
      [{ quoteId: UNKNOWN, method: 'cash', beneficiary: beneficiary() }, 'method'],
      [{ quoteId: UNKNOWN, method: 'pago_movil', methodPolicy: 'maybe', beneficiary: beneficiary() }, 'methodPolicy'],
      [{ quoteId: UNKNOWN, method: 'pago_movil' }, 'beneficiaryId'],
      [{ quoteId: UNKNOWN, method: 'pago_movil', beneficiaryId: UNKNOWN, beneficiary: beneficiary() }, 'beneficiaryId'],
      [{ quoteId: UNKNOWN, method: 'pago_movil', beneficiary: beneficiary('X123') }, 'beneficiary.nationalId'],
      [
        { quoteId: UNKNOWN, method: 'pago_movil', beneficiary: beneficiary('V12345678', { phone: '123' }) },
        'beneficiary.phone',
      ],
      [
        { quoteId: UNKNOWN, method: 'pago_movil', beneficiary: beneficiary('V12345678', { bankCode: '9999' }) },
        'beneficiary.bankCode',
      ],
      [{ quoteId: UNKNOWN, method: 'pago_movil', beneficiary: beneficiary(), customerId: 'nope' }, 'customerId'],
    ];
    for (const [body, field] of cases) {
      const response = await tenant.api.post(
        '/v1/payouts',
        { sender: SENDER, ...body },
        { 'idempotency-key': idempotencyKey() },
      );
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.ok(
        response.body.error.meta.errors.some((e: { field: string }) => e.field === field),
        `${field}: ${response.raw}`,
      );
    }
  });

  it('validates the sender block exactly as 4.6, reporting every field', async () => {
    const bad = { nationalId: 'X1', firstName: 'A', lastName: '', phone: '02121234567', email: 'not-an-email' };
    const response = await payout(tenant.api, { beneficiary: beneficiary(), sender: bad });
    assertEnvelope(assert, response, 400, 'validation_failed');
    const fields = response.body.error.meta.errors.map((e: { field: string }) => e.field).sort();
    assert.deepEqual(fields, [
      'sender.email',
      'sender.firstName',
      'sender.lastName',
      'sender.nationalId',
      'sender.phone',
    ]);
    const missing = await payout(tenant.api, { beneficiary: beneficiary(), sender: { nationalId: 'V1234567' } });
    assertEnvelope(assert, missing, 400, 'validation_failed');
  });

  it('accepts every phone form and a foreign sender', async () => {
    for (const phone of ['04141234567', '+584141234567', '4141234567']) {
      const response = await payout(tenant.api, {
        beneficiary: beneficiary('V50000001'),
        sender: { ...SENDER, phone },
      });
      assert.equal(response.status, 201, response.raw);
    }
    const foreign = await payout(tenant.api, {
      beneficiary: beneficiary('V50000002'),
      sender: { ...SENDER, nationality: 'COL', nationalId: 'AB12345' },
    });
    assert.equal(foreign.status, 201, foreign.raw);
    const wrongVenezuelan = await payout(tenant.api, {
      beneficiary: beneficiary('V50000002'),
      sender: { ...SENDER, nationalId: 'AB12345' },
    });
    assertEnvelope(assert, wrongVenezuelan, 400, 'validation_failed');
  });

  it('resolves the sender: block → stored customer sender → default sender → sender_required', async () => {
    const fresh = await fundedTenant(t);
    const customerId = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3d1';
    const none = await payout(fresh.api, { beneficiary: beneficiary('V50000010'), sender: undefined, customerId });
    assert.equal(none.body.reason, 'sender_required');
    // A payout with customerId + sender stores it; the next one with only customerId reuses it.
    const stored = await payout(fresh.api, {
      beneficiary: beneficiary('V50000011'),
      customerId,
      sender: { ...SENDER, phone: '+584161234567' },
    });
    assert.equal(stored.body.status, 'submitted', stored.raw);
    const reused = await payout(fresh.api, { beneficiary: beneficiary('V50000012'), customerId, sender: undefined });
    assert.equal(reused.body.status, 'submitted', reused.raw);
    const { rows } = await t.db.query<{ sender: { phone: string } }>(
      'SELECT sender FROM payments WHERE tenant_id = $1 AND id = $2',
      [fresh.tenantId, reused.body.id],
    );
    assert.equal(rows[0]!.sender.phone, '04161234567', 'normalised and reused');
    // Default sender for the program.
    const noDefault = await payout(fresh.api, { beneficiary: beneficiary('V50000013'), sender: undefined });
    assert.equal(noDefault.body.reason, 'sender_required');
    const set = await admin.put(`/v1/admin/tenants/${fresh.tenantId}/default-sender`, { mode: 'test', sender: SENDER });
    assert.equal(set.status, 200, set.raw);
    const withDefault = await payout(fresh.api, { beneficiary: beneficiary('V50000014'), sender: undefined });
    assert.equal(withDefault.body.status, 'submitted');
    // Admin can set a customer's sender directly.
    const other = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3d2';
    assert.equal(
      (
        await admin.put(`/v1/admin/tenants/${fresh.tenantId}/customers/${other}`, {
          mode: 'test',
          sender: { ...SENDER, firstName: 'Luis' },
        })
      ).status,
      200,
    );
    assertEnvelope(
      assert,
      await admin.put(`/v1/admin/tenants/${fresh.tenantId}/default-sender`, {
        mode: 'test',
        sender: { ...SENDER, phone: '0212' },
      }),
      400,
      'validation_failed',
    );
  });

  it("a payout without customerId is for its quote's customer: payment, stored sender and customer rule", async () => {
    const fresh = await fundedTenant(t);
    const customerId = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3e1';
    const quoteFor = async (customer: string | undefined, amount = 1_000_000) => {
      const response = await fresh.api.post('/v1/quotes', {
        deliver: { asset: 'BS', amount },
        ...(customer ? { customerId: customer } : {}),
      });
      assert.equal(response.status, 201, response.raw);
      return response.body.id as string;
    };
    // The sender block is stored for the quote's customer, and the payment carries that customer.
    const first = await payout(fresh.api, {
      quoteId: await quoteFor(customerId),
      beneficiary: beneficiary('V50000030'),
    });
    assert.equal(first.status, 201, first.raw);
    const payment = await fresh.api.get(`/v1/payments/${first.body.id}`);
    assert.equal(payment.body.customer_id, customerId);
    const listed = await fresh.api.get(`/v1/payments?customerId=${customerId}`);
    assert.deepEqual(
      listed.body.data.map((row: { id: string }) => row.id),
      [first.body.id],
    );
    const reused = await payout(fresh.api, {
      quoteId: await quoteFor(customerId),
      beneficiary: beneficiary('V50000031'),
      sender: undefined,
    });
    assert.equal(reused.body.status, 'submitted', `the customer's stored sender: ${reused.raw}`);

    // The customer's rule governs it, not the tenant's.
    const rule = async (scope: string, subject: Record<string, unknown>, perTx: number) =>
      assert.equal(
        (
          await admin.post('/v1/admin/limit-rules', {
            scope,
            tenantId: fresh.tenantId,
            ...subject,
            method: '*',
            per_tx_max: perTx,
            daily_max: 100_000_000,
          })
        ).status,
        201,
      );
    await rule('tenant', {}, 3_000_000);
    await rule('customer', { subjectId: customerId }, 5_000_000);
    const underCustomerRule = await payout(fresh.api, {
      quoteId: await quoteFor(customerId, 4_000_000),
      beneficiary: beneficiary('V50000032'),
    });
    assert.equal(underCustomerRule.status, 201, underCustomerRule.raw);
    const tenantRule = await payout(fresh.api, {
      quoteId: await quoteFor(undefined, 4_000_000),
      beneficiary: beneficiary('V50000033'),
    });
    assertEnvelope(assert, tenantRule, 422, 'limit_exceeded');
    const usage = await fresh.api.get(`/v1/limits/usage?customerId=${customerId}`);
    assert.equal(usage.body.usage.day_amount, '6000000', usage.raw);

    // The payout may repeat the quote's customer, not name another one; that refusal consumes nothing.
    const quoted = await quoteFor(customerId);
    const same = await payout(fresh.api, {
      quoteId: quoted,
      beneficiary: beneficiary('V50000034'),
      customerId: customerId.toUpperCase(),
    });
    assert.equal(same.status, 201, same.raw);
    const otherQuote = await quoteFor(customerId);
    const other = await payout(fresh.api, {
      quoteId: otherQuote,
      beneficiary: beneficiary('V50000035'),
      customerId: '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3e2',
    });
    assertEnvelope(assert, other, 400, 'validation_failed');
    assert.equal(other.body.error.meta.errors[0].field, 'customerId');
    assert.equal((await fresh.api.get(`/v1/quotes/${otherQuote}`)).body.status, 'open');
  });

  it('404 for an unknown quote or beneficiary; registered beneficiaries by id', async () => {
    assertEnvelope(
      assert,
      await payout(tenant.api, { quoteId: UNKNOWN, beneficiary: beneficiary() }),
      404,
      'resource_not_found',
    );
    assertEnvelope(assert, await payout(tenant.api, { beneficiaryId: UNKNOWN }), 404, 'resource_not_found');
    const registered = await tenant.api.post('/v1/beneficiaries', beneficiary('V50000020'));
    const byId = await payout(tenant.api, { beneficiaryId: registered.body.id });
    assert.equal(byId.status, 201, byId.raw);
    assert.equal(byId.body.beneficiaryId, registered.body.id);
    // Inline registration reuses the same beneficiary.
    const inline = await payout(tenant.api, { beneficiary: beneficiary('V50000020') });
    assert.equal(inline.body.beneficiaryId, registered.body.id);
  });

  it("the answer's beneficiary carries accountCheck; invalid check digits refuse nothing (the payout is sent as before)", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ accountNumber: '01020123310123456789' }, 'transferencia', 'valid'],
      [{ accountNumber: '01020123410123456789' }, 'transferencia', 'invalid_check_digits'],
      [{ accountNumber: '0102012345678901' }, 'transferencia', 'not_checked'],
      [{}, 'pago_movil', 'not_checked'],
    ];
    let n = 50_000_040;
    for (const [extra, method, expected] of cases) {
      const made = await payout(tenant.api, { method, beneficiary: beneficiary(`V${(n += 1)}`, extra) });
      assert.equal(made.status, 201, made.raw);
      assert.notEqual(made.body.status, 'failed', made.raw);
      assert.equal(made.body.beneficiary.accountCheck, expected, JSON.stringify(extra));
      assert.equal((await tenant.api.get(`/v1/beneficiaries/${made.body.beneficiaryId}`)).body.account_check, expected);
    }
  });

  it("the answer's beneficiary carries nationalIdCheck, the RIF check digit (information only: the payout is sent)", async () => {
    // Check digits worked out by hand in test/unit/account-check.test.ts.
    for (const [id, expected] of [
      ['J123456784', 'valid'],
      ['J123456785', 'invalid_check_digit'],
      ['V50000060', 'not_checked'],
    ]) {
      const made = await payout(tenant.api, { beneficiary: beneficiary(id!) });
      assert.equal(made.status, 201, made.raw);
      assert.notEqual(made.body.status, 'failed', made.raw);
      assert.equal(made.body.beneficiary.nationalIdCheck, expected, id);
    }
  });

  it('an HTTP error consumes nothing: the quote stays open after a 422', async () => {
    const poor = await fundedTenant(t, 100n);
    const quoteId = await quote(poor.api, 1_000_000);
    const refused = await payout(poor.api, { quoteId, beneficiary: beneficiary('V50000030') });
    assertEnvelope(assert, refused, 422, 'insufficient_tenant_funds');
    assert.deepEqual(refused.body.error.meta, { asset: 'BS', required: '1010000', available: '100' });
    assert.equal((await poor.api.get(`/v1/quotes/${quoteId}`)).body.status, 'open');
    const listed = await poor.api.get('/v1/beneficiaries');
    assert.equal(listed.body.data.length, 0, 'the inline beneficiary was not stored');
  });

  it('scopes: payments:write to pay, payments:read to read, treasury:read for the position', async () => {
    const readOnly = await createTenant(t, { scopes: ['payments:read', 'quotes:write'] });
    assertEnvelope(assert, await payout(readOnly.api, { beneficiary: beneficiary() }), 403, 'scope_missing');
    assertEnvelope(assert, await readOnly.api.get('/v1/treasury/position'), 403, 'scope_missing');
    const writer = await createTenant(t, { scopes: ['payments:write'] });
    assertEnvelope(assert, await writer.api.get(`/v1/payments/${UNKNOWN}`), 403, 'scope_missing');
    assert.equal((await readOnly.api.get(`/v1/payments/${UNKNOWN}`)).status, 404);
  });

  it('payments are isolated by tenant and mode', async () => {
    const made = await payout(tenant.api, { beneficiary: beneficiary('V50000040') });
    const other = await createTenant(t);
    assertEnvelope(assert, await other.api.get(`/v1/payments/${made.body.id}`), 404, 'resource_not_found');
    const live = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'live' });
    assertEnvelope(
      assert,
      await client(t.app, live.body.key).get(`/v1/payments/${made.body.id}`),
      404,
      'resource_not_found',
    );
    const livePosition = await client(t.app, live.body.key).get('/v1/treasury/position');
    assert.equal(livePosition.body.prefundingBalance, '0', 'test money is not live money');
  });

  it('live mode without a configured rail provider fails the payout with no_route (nothing charged)', async () => {
    const created = await createTenant(t, { mode: 'live' });
    await admin.post(
      `/v1/admin/tenants/${created.tenantId}/fundings`,
      { mode: 'live', asset: 'BS', amount: 10_000_000 },
      { 'idempotency-key': idempotencyKey() },
    );
    const response = await payout(created.api, { beneficiary: beneficiary('V50000050') });
    assert.equal(response.status, 201, response.raw);
    assert.equal(response.body.status, 'failed');
    assert.equal(response.body.reason, 'no_route');
    assert.equal((await position(created.api)).prefundingBalance, '10000000');
  });

  it('treasury position has the 2.10 shape exactly; fundings are idempotent', async () => {
    const fresh = await fundedTenant(t, 0n);
    const key = idempotencyKey();
    const body = { mode: 'test', asset: 'BS', amount: 5_000_000 };
    const first = await admin.post(`/v1/admin/tenants/${fresh.tenantId}/fundings`, body, { 'idempotency-key': key });
    const again = await admin.post(`/v1/admin/tenants/${fresh.tenantId}/fundings`, body, { 'idempotency-key': key });
    assert.equal(first.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const pos = await position(fresh.api);
    assert.deepEqual(pos, {
      tenantId: fresh.tenantId,
      asset: 'BS',
      prefundingBalance: '5000000',
      platformRevenueFromTenant: '0',
      creditEnabled: false,
      creditDrawn: '0',
      creditLimit: null,
      creditAvailable: null,
    });
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${fresh.tenantId}/fundings`, body),
      400,
      'idempotency_key_missing',
    );
    assertEnvelope(
      assert,
      await admin.post(
        `/v1/admin/tenants/${fresh.tenantId}/fundings`,
        { ...body, amount: 0 },
        { 'idempotency-key': idempotencyKey() },
      ),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${UNKNOWN}/fundings`, body, { 'idempotency-key': idempotencyKey() }),
      404,
      'resource_not_found',
    );
    const usd = await fresh.api.get('/v1/treasury/position?asset=USD');
    assert.equal(usd.body.asset, 'USD');
  });
});
