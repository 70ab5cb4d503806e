// The tenant setting rejectInvalidAccounts: a transferencia payout to an account whose check digits do
// not agree (account_check: invalid_check_digits) fails before the rail with invalid_destination_account,
// like any other pre-rail failure. Off by default: such payouts are sent as before.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { client, startTestApp, type TestApp } from '../support/harness.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  payout,
  position,
} from '../support/payouts.ts';

// Check digits worked out by hand in test/unit/account-check.test.ts.
const VALID = '01020123310123456789';
const INVALID = '01020123410123456789';

async function events(t: TestApp, paymentId: string): Promise<string[]> {
  const { rows } = await t.db.query<{ event_type: string }>(
    `SELECT event_type FROM outbox_events WHERE aggregate_id = $1 ORDER BY id`,
    [paymentId],
  );
  return rows.map((r) => r.event_type);
}

describe('rejectInvalidAccounts', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) } });
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  it('defaults to false; set on creation and by PATCH, and shown by GET', async () => {
    const admin = client(t.app, t.platformKey);
    const plain = await admin.post('/v1/admin/tenants', { name: 'Plain' });
    assert.equal(plain.body.rejectInvalidAccounts, false);
    const strict = await admin.post('/v1/admin/tenants', { name: 'Strict', rejectInvalidAccounts: true });
    assert.equal(strict.status, 201, strict.raw);
    assert.equal(strict.body.rejectInvalidAccounts, true);
    const patched = await admin.patch(`/v1/admin/tenants/${plain.body.id}`, { rejectInvalidAccounts: true });
    assert.equal(patched.status, 200, patched.raw);
    assert.equal(patched.body.rejectInvalidAccounts, true);
    assert.equal((await admin.get(`/v1/admin/tenants/${plain.body.id}`)).body.rejectInvalidAccounts, true);
    assert.equal(
      (await admin.patch(`/v1/admin/tenants/${plain.body.id}`, { rejectInvalidAccounts: 'yes' })).status,
      400,
    );
  });

  it('on: 201 failed invalid_destination_account before the rail, nothing charged, one payment.failed', async () => {
    const tenant = await fundedTenant(t, 1_000_000_000n, { rejectInvalidAccounts: true });
    const before = await position(tenant.api);
    const made = await payout(tenant.api, {
      method: 'transferencia',
      beneficiary: beneficiary('V60000001', { accountNumber: INVALID }),
    });
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'failed', made.raw);
    assert.equal(made.body.reason, 'invalid_destination_account');
    assert.match(made.body.message, /check digits/);
    assert.equal(made.body.feeAmount, '0');
    assert.equal(made.body.totalDebited, '0');
    assert.equal(made.body.beneficiary.accountCheck, 'invalid_check_digits');
    assert.deepEqual(await position(tenant.api), before, 'nothing charged');
    assert.deepEqual(await events(t, made.body.id), ['payment.failed']);
    const payment = await tenant.api.get(`/v1/payments/${made.body.id}`);
    assert.equal(payment.body.status, 'failed');
    assert.equal(payment.body.status_reason, 'invalid_destination_account');
    const { rows } = await t.db.query(`SELECT 1 FROM sandbox_rail_transfers WHERE reference = $1`, [made.body.id]);
    assert.equal(rows.length, 0, 'the rail never saw it');
  });

  it('on: a registered beneficiary paid by beneficiaryId fails the same way; registered again with the corrected number, it is sent', async () => {
    const tenant = await fundedTenant(t, 1_000_000_000n, { rejectInvalidAccounts: true });
    const registered = await tenant.api.post('/v1/beneficiaries', beneficiary('V60000003', { accountNumber: INVALID }));
    assert.equal(registered.body.account_check, 'invalid_check_digits');
    const refused = await payout(tenant.api, { method: 'transferencia', beneficiaryId: registered.body.id });
    assert.equal(refused.status, 201, refused.raw);
    assert.equal(refused.body.status, 'failed');
    assert.equal(refused.body.reason, 'invalid_destination_account');
    const corrected = await tenant.api.post('/v1/beneficiaries', beneficiary('V60000003', { accountNumber: VALID }));
    assert.equal(corrected.body.id, registered.body.id);
    assert.equal(corrected.body.account_check, 'valid');
    const sent = await payout(tenant.api, { method: 'transferencia', beneficiaryId: registered.body.id });
    assert.equal(sent.status, 201, sent.raw);
    assert.notEqual(sent.body.status, 'failed', sent.raw);
  });

  it('on: a valid account, an unchecked one and a Pago Móvil payout are sent as before', async () => {
    const tenant = await fundedTenant(t, 1_000_000_000n, { rejectInvalidAccounts: true });
    const cases: [string, Record<string, unknown>][] = [
      ['transferencia', { accountNumber: VALID }],
      ['transferencia', { accountNumber: '0102012345678901' }],
      ['pago_movil', {}],
    ];
    let n = 60_000_010;
    for (const [method, extra] of cases) {
      const made = await payout(tenant.api, { method, beneficiary: beneficiary(`V${(n += 1)}`, extra) });
      assert.equal(made.status, 201, made.raw);
      assert.notEqual(made.body.status, 'failed', made.raw);
    }
  });

  it('off (the default): a payout to invalid check digits is sent as before', async () => {
    const tenant = await fundedTenant(t);
    const made = await payout(tenant.api, {
      method: 'transferencia',
      beneficiary: beneficiary('V60000002', { accountNumber: INVALID }),
    });
    assert.equal(made.status, 201, made.raw);
    assert.notEqual(made.body.status, 'failed', made.raw);
    assert.equal(made.body.beneficiary.accountCheck, 'invalid_check_digits');
  });
});
