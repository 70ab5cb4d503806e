// The audit trail: every admin or operator action leaves exactly one row, with the acting key, the
// target and the changed fields before and after, written with the change; the database refuses to
// change or remove a row; a payment keeps the key that created it; and neither the log (captured at
// debug level) nor the trail ever holds a key, a key's hash, a webhook secret, a full account number
// or a full phone.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { loggerOptions } from '../../src/app.ts';
import { hashApiKey } from '../../src/domain/api-keys.ts';
import { PLATFORM_TENANT_ID } from '../../src/services/bootstrap.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  ENGINE,
  startTestApp,
  walkPages,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import { AMPLE_RAIL_TIMEOUT_MS, beneficiary, payout, SENDER } from '../support/payouts.ts';

const AUDIT_KEYS = [
  'id',
  'createdAt',
  'actorKeyId',
  'actorTenantId',
  'action',
  'targetType',
  'targetId',
  'targetTenantId',
  'targetMode',
  'before',
  'after',
  'requestId',
];
const ACCOUNT_NUMBER = '01020123456789012345';
const CUSTOMER_PHONE = '04161239876';

/** Log lines, parsed, as the service wrote them. */
class CapturedLog extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.lines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((line) => line !== ''),
    );
    done();
  }
  parsed(): Array<Record<string, unknown>> {
    return this.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

describe(`the audit trail on ${ENGINE}`, () => {
  let t: TestApp;
  let admin: Client;
  let platformKeyId: string;
  /** A tenant key that made requests of its own. */
  let tenantKeyId: string;
  const log = new CapturedLog();
  /** Every secret, key and full number the test hands the service or gets from it. */
  const secrets = new Set<string>();

  /** The rows of one action on one target, through the API; exactly one is expected. */
  async function onlyRow(action: string, targetId: string): Promise<Record<string, any>> {
    const listed = await admin.get(
      `/v1/admin/audit?action=${action}&targetId=${encodeURIComponent(targetId)}&limit=100`,
    );
    assert.equal(listed.status, 200, listed.raw);
    assert.equal(listed.body.data.length, 1, `one ${action} row for ${targetId}: ${listed.raw}`);
    const row = listed.body.data[0];
    assert.deepEqual(Object.keys(row), AUDIT_KEYS);
    return row;
  }

  /** The acting key, its tenant and the request id of `response` are the row's. */
  function assertActor(row: Record<string, any>, keyId: string, tenantId: string, response: InjectResult): void {
    assert.equal(row.actorKeyId, keyId);
    assert.equal(row.actorTenantId, tenantId);
    assert.equal(row.requestId, response.headers['x-request-id']);
  }

  async function count(action: string, targetId: string): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM audit_log WHERE action = $1 AND target_id = $2',
      [action, targetId],
    );
    return rows[0]!.n;
  }

  before(async () => {
    t = await startTestApp({
      env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) },
      deps: { logger: { ...(loggerOptions('debug') as object), stream: log } },
    });
    admin = client(t.app, t.platformKey);
    secrets.add(t.platformKey);
    platformKeyId = (await admin.get('/v1/tenant/me')).body.apiKeyId;
  });
  after(async () => {
    await t.close();
  });

  describe('tenants and keys', () => {
    let tenantId: string;

    it('tenant.create: the settings after, nothing before', async () => {
      const created = await admin.post('/v1/admin/tenants', { name: 'Acme Remesas', feeBps: 120 });
      assert.equal(created.status, 201, created.raw);
      tenantId = created.body.id;
      const row = await onlyRow('tenant.create', tenantId);
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, created);
      assert.equal(row.targetType, 'tenant');
      assert.equal(row.targetTenantId, tenantId);
      assert.equal(row.targetMode, null);
      assert.equal(row.before, null);
      assert.deepEqual(row.after, {
        name: 'Acme Remesas',
        creditEnabled: false,
        creditLimit: null,
        creditLimits: {},
        feeBps: 120,
        feeFixed: '0',
        spreadBps: 50,
        rejectInvalidAccounts: false,
      });
    });

    it('tenant.update: the fields sent, before and after', async () => {
      const updated = await admin.patch(`/v1/admin/tenants/${tenantId}`, { name: 'Acme Pagos', spreadBps: 40 });
      assert.equal(updated.status, 200, updated.raw);
      const row = await onlyRow('tenant.update', tenantId);
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, updated);
      assert.deepEqual(row.before, { name: 'Acme Remesas', spreadBps: 50 });
      assert.deepEqual(row.after, { name: 'Acme Pagos', spreadBps: 40 });
    });

    it('a refused action leaves no row', async () => {
      const before = (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log')).rows[0]!.n;
      assertEnvelope(
        assert,
        await admin.patch('/v1/admin/tenants/3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f', { name: 'Nobody' }),
        404,
        'resource_not_found',
      );
      assertEnvelope(
        assert,
        await admin.patch(`/v1/admin/tenants/${tenantId}`, { feeBps: -1 }),
        400,
        'validation_failed',
      );
      assertEnvelope(
        assert,
        await admin.delete('/v1/admin/api-keys/3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f'),
        404,
        'resource_not_found',
      );
      assert.equal((await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log')).rows[0]!.n, before);
    });

    it('api_key.issue: what any key list shows of it (never the key); api_key.revoke: when', async () => {
      const issued = await admin.post(`/v1/admin/tenants/${tenantId}/api-keys`, {
        mode: 'live',
        scopes: ['payments:read'],
      });
      assert.equal(issued.status, 201, issued.raw);
      secrets.add(issued.body.key);
      const row = await onlyRow('api_key.issue', issued.body.id);
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, issued);
      assert.equal(row.targetType, 'api_key');
      assert.equal(row.targetTenantId, tenantId);
      assert.equal(row.targetMode, 'live');
      assert.equal(row.before, null);
      assert.deepEqual(row.after, {
        mode: 'live',
        scopes: ['payments:read'],
        prefix: issued.body.prefix,
        last4: issued.body.last4,
      });

      const revoked = await admin.delete(`/v1/admin/api-keys/${issued.body.id}`);
      assert.equal(revoked.status, 200, revoked.raw);
      const revocation = await onlyRow('api_key.revoke', issued.body.id);
      assertActor(revocation, platformKeyId, PLATFORM_TENANT_ID, revoked);
      assert.deepEqual(revocation.before, { revokedAt: null });
      assert.match(revocation.after.revokedAt, /^\d{4}-\d\d-\d\dT/);
    });
  });

  describe('money, senders, endpoints, rates and rules', () => {
    let tenantId: string;
    before(async () => {
      const tenant = await createTenant(t, { name: 'Banco Uno' });
      tenantId = tenant.tenantId;
      secrets.add(tenant.key);
    });

    it('funding.create: one row per funding, also when it is retried with the same Idempotency-Key', async () => {
      const fund = () =>
        admin.post(
          `/v1/admin/tenants/${tenantId}/fundings`,
          { mode: 'test', asset: 'BS', amount: 500_000 },
          { 'idempotency-key': 'audit-fund-1' },
        );
      const first = await fund();
      assert.equal(first.status, 201, first.raw);
      const replay = await fund();
      assert.equal(replay.status, 201, replay.raw);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      // Concurrent retries of another funding: whichever request wins records it, once.
      const racing = await Promise.all(
        [1, 2, 3].map(() =>
          admin.post(
            `/v1/admin/tenants/${tenantId}/fundings`,
            { mode: 'test', asset: 'BS', amount: 7 },
            { 'idempotency-key': 'audit-fund-2' },
          ),
        ),
      );
      assert.ok(
        racing.some((r) => r.status === 201),
        racing.map((r) => r.raw).join('\n'),
      );

      const listed = await admin.get(`/v1/admin/audit?action=funding.create&tenantId=${tenantId}`);
      assert.equal(listed.body.data.length, 2, listed.raw);
      const { rows: entries } = await t.db.query<{ id: string }>(
        `SELECT id FROM ledger_transactions WHERE tenant_id = $1 AND kind = 'funding' ORDER BY created_at`,
        [tenantId],
      );
      assert.deepEqual(
        new Set(listed.body.data.map((r: { targetId: string }) => r.targetId)),
        new Set(entries.map((e) => e.id)),
        'each row names its ledger entry',
      );
      const row = listed.body.data.find(
        (r: { after: { idempotencyKey: string } }) => r.after.idempotencyKey === 'audit-fund-1',
      );
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, first);
      assert.equal(row.targetType, 'funding');
      assert.equal(row.targetMode, 'test');
      assert.deepEqual(row.before, { asset: 'BS', prefundingBalance: '0' });
      assert.deepEqual(row.after, {
        asset: 'BS',
        amount: '500000',
        prefundingBalance: '500000',
        idempotencyKey: 'audit-fund-1',
      });
    });

    it('tenant.close: the balances before and what it settled', async () => {
      const closed = await admin.post(`/v1/admin/tenants/${tenantId}/close`, { mode: 'test' });
      assert.equal(closed.status, 200, closed.raw);
      const row = await onlyRow('tenant.close', tenantId);
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, closed);
      assert.equal(row.targetMode, 'test');
      assert.deepEqual(row.before, { BS: { creditDrawn: '0', prefundingBalance: '500007' } });
      assert.deepEqual(row.after, { closed: [] });
    });

    it('default_sender.set and customer_sender.set: the senders before and after, phones by their last 4 digits', async () => {
      secrets.add(SENDER.phone);
      const set = await admin.put(`/v1/admin/tenants/${tenantId}/default-sender`, { mode: 'test', sender: SENDER });
      assert.equal(set.status, 200, set.raw);
      const row = await onlyRow('default_sender.set', tenantId);
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, set);
      assert.equal(row.targetType, 'program');
      assert.deepEqual(row.before, { sender: null });
      assert.equal(row.after.sender.phone, '…4567');
      assert.equal(row.after.sender.nationalId, SENDER.nationalId);

      secrets.add(CUSTOMER_PHONE);
      const customerId = '7d8e9f00-1a2b-4c3d-8e4f-5a6b7c8d9e0f';
      const customer = await admin.put(`/v1/admin/tenants/${tenantId}/customers/${customerId}`, {
        mode: 'test',
        sender: { ...SENDER, phone: CUSTOMER_PHONE },
      });
      assert.equal(customer.status, 200, customer.raw);
      const again = await admin.put(`/v1/admin/tenants/${tenantId}/customers/${customerId}`, {
        mode: 'test',
        sender: { ...SENDER, firstName: 'Berta' },
      });
      assert.equal(again.status, 200, again.raw);
      const rows = (
        await admin.get(`/v1/admin/audit?action=customer_sender.set&targetType=customer&targetId=${customerId}`)
      ).body.data;
      assert.equal(rows.length, 2);
      // Newest first: the second change, whose `before` is the first one's `after`.
      assert.deepEqual(rows[0].before, rows[1].after);
      assert.equal(rows[1].before.sender, null);
      assert.equal(rows[0].after.sender.firstName, 'Berta');
      assert.equal(rows[1].after.sender.phone, '…9876');
    });

    it('webhook_endpoint.set: the URL before and after; rotate_secret: when, never which secret', async () => {
      const first = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
        mode: 'test',
        url: 'http://127.0.0.1:9/hooks/a',
      });
      assert.equal(first.status, 200, first.raw);
      secrets.add(first.body.secret);
      const second = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
        mode: 'test',
        url: 'http://127.0.0.1:9/hooks/b',
      });
      assert.equal(second.status, 200, second.raw);
      const rows = (await admin.get(`/v1/admin/audit?action=webhook_endpoint.set&targetId=${tenantId}`)).body.data;
      assert.equal(rows.length, 2);
      assert.deepEqual([rows[1].before, rows[1].after], [null, { url: 'http://127.0.0.1:9/hooks/a' }]);
      assert.deepEqual(
        [rows[0].before, rows[0].after],
        [{ url: 'http://127.0.0.1:9/hooks/a' }, { url: 'http://127.0.0.1:9/hooks/b' }],
      );
      assertActor(rows[0], platformKeyId, PLATFORM_TENANT_ID, second);

      const rotated = await admin.post(`/v1/admin/tenants/${tenantId}/webhook-endpoint/rotate-secret`, {
        mode: 'test',
      });
      assert.equal(rotated.status, 200, rotated.raw);
      secrets.add(rotated.body.secret);
      const rotation = await onlyRow('webhook_endpoint.rotate_secret', tenantId);
      assertActor(rotation, platformKeyId, PLATFORM_TENANT_ID, rotated);
      assert.deepEqual(Object.keys(rotation.before).sort(), ['previousSecretExpiresAt', 'secretSetAt']);
      assert.equal(rotation.before.previousSecretExpiresAt, null);
      assert.equal(rotation.after.previousSecretExpiresAt, rotated.body.previousSecretExpiresAt);
    });

    it('rate.set: the market rate before and after', async () => {
      const set = await admin.put('/v1/admin/rates/USDC', { market: '931.25' });
      assert.equal(set.status, 200, set.raw);
      const row = await onlyRow('rate.set', 'USDC');
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, set);
      assert.equal(row.targetType, 'rate');
      assert.equal(row.targetTenantId, null);
      assert.equal(row.before.market, '925.00');
      assert.equal(row.after.market, '931.25');
    });

    it('limit_rule.create records the rule it replaced; limit_rule.delete the rule it deleted', async () => {
      const rule = { scope: 'tenant', tenantId, method: '*', per_tx_max: 10_000_000, daily_max: 50_000_000 };
      const first = await admin.post('/v1/admin/limit-rules', rule);
      assert.equal(first.status, 201, first.raw);
      const created = await onlyRow('limit_rule.create', first.body.id);
      assertActor(created, platformKeyId, PLATFORM_TENANT_ID, first);
      assert.equal(created.targetTenantId, tenantId);
      assert.equal(created.before, null);
      assert.deepEqual(created.after, {
        id: first.body.id,
        scope: 'tenant',
        tenantId,
        subjectId: null,
        method: '*',
        perTxMax: '10000000',
        dailyMax: '50000000',
        monthlyMax: null,
        dailyCountMax: null,
      });

      const second = await admin.post('/v1/admin/limit-rules', { ...rule, daily_max: 60_000_000 });
      const replacing = await onlyRow('limit_rule.create', second.body.id);
      assert.deepEqual(replacing.before, created.after);
      assert.equal(replacing.after.dailyMax, '60000000');

      const deleted = await admin.delete(`/v1/admin/limit-rules/${second.body.id}`);
      assert.equal(deleted.status, 200, deleted.raw);
      const deletion = await onlyRow('limit_rule.delete', second.body.id);
      assertActor(deletion, platformKeyId, PLATFORM_TENANT_ID, deleted);
      assert.deepEqual(deletion.before, replacing.after);
      assert.equal(deletion.after, null);
      assertEnvelope(assert, await admin.delete(`/v1/admin/limit-rules/${second.body.id}`), 404, 'resource_not_found');
      assert.equal(await count('limit_rule.delete', second.body.id), 1);
    });
  });

  describe("a tenant's payments and events", () => {
    let tenant: { tenantId: string; key: string; keyId: string; api: Client };
    let second: { id: string; key: string; api: Client };

    before(async () => {
      tenant = await createTenant(t, { name: 'Remesas Dos' });
      tenantKeyId = tenant.keyId;
      secrets.add(tenant.key);
      const issued = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test' });
      second = { id: issued.body.id, key: issued.body.key, api: client(t.app, issued.body.key) };
      secrets.add(second.key);
      const funded = await admin.post(
        `/v1/admin/tenants/${tenant.tenantId}/fundings`,
        { mode: 'test', asset: 'BS', amount: 100_000_000 },
        { 'idempotency-key': 'audit-fund-3' },
      );
      assert.equal(funded.status, 201, funded.raw);
    });

    it('a payment keeps the key that created it: the platform sees it, the public answers stay as they were', async () => {
      secrets.add(ACCOUNT_NUMBER);
      secrets.add('04241234567');
      const byFirst = await payout(tenant.api, { beneficiary: beneficiary('V20111222') });
      const bySecond = await payout(second.api, {
        method: 'transferencia',
        beneficiary: beneficiary('V20111333', { accountNumber: ACCOUNT_NUMBER }),
      });
      const failedBySecond = await payout(second.api, { beneficiary: beneficiary('V99990004') });
      for (const made of [byFirst, bySecond, failedBySecond]) {
        assert.equal(made.status, 201, made.raw);
        assert.ok(!('created_by_key_id' in made.body) && !('createdByKeyId' in made.body), made.raw);
      }
      assert.equal(failedBySecond.body.status, 'failed');
      const expected: Array<[string, string]> = [
        [byFirst.body.id, tenant.keyId],
        [bySecond.body.id, second.id],
        [failedBySecond.body.id, second.id],
      ];
      for (const [paymentId, keyId] of expected) {
        const seen = await admin.get(`/v1/admin/tenants/${tenant.tenantId}/payments/${paymentId}`);
        assert.equal(seen.status, 200, seen.raw);
        assert.equal(seen.body.created_by_key_id, keyId);
        assert.equal(seen.body.tenant_id, tenant.tenantId);
        assert.equal(seen.body.mode, 'test');
        const own = await tenant.api.get(`/v1/payments/${paymentId}`);
        assert.equal(own.status, 200, own.raw);
        const { tenant_id: _t, mode: _m, created_by_key_id: _k, rail: _r, ...asTenantSees } = seen.body;
        assert.deepEqual(own.body, asTenantSees, 'the admin view is the public one plus tenant, mode, rail and key');
      }
      const statement = await tenant.api.get('/v1/payments?limit=100');
      assert.equal(statement.body.data.length, 3);
      assert.ok(statement.body.data.every((row: Record<string, unknown>) => !('created_by_key_id' in row)));
      assertEnvelope(
        assert,
        await admin.get(`/v1/admin/tenants/${PLATFORM_TENANT_ID}/payments/${byFirst.body.id}`),
        404,
        'resource_not_found',
      );
      assertEnvelope(
        assert,
        await tenant.api.get(`/v1/admin/tenants/${tenant.tenantId}/payments/${byFirst.body.id}`),
        403,
        'scope_missing',
      );
    });

    it('event.retry and event.retry_dead: the acting tenant key, the delivery state before and after', async () => {
      const failed = await payout(tenant.api, { beneficiary: beneficiary('V99990004') });
      const event = (await tenant.api.get(`/v1/events?paymentId=${failed.body.id}`)).body.data[0];
      // Waiting for a later attempt, so that the retry changes something (a no-op leaves no row).
      await t.db.query(
        `UPDATE outbox_events SET next_attempt_at = now() + interval '1 hour' WHERE tenant_id = $1 AND id = $2`,
        [tenant.tenantId, event.id],
      );
      const retried = await tenant.api.post(`/v1/events/${event.id}/retry`);
      assert.equal(retried.status, 200, retried.raw);
      const row = await onlyRow('event.retry', event.id);
      assertActor(row, tenant.keyId, tenant.tenantId, retried);
      assert.equal(row.targetType, 'event');
      assert.equal(row.targetMode, 'test');
      assert.equal(row.before.status, 'pending');
      assert.equal(row.after.status, 'pending');

      await t.db.query(
        `UPDATE outbox_events SET status = 'dead', dead_at = now(), next_attempt_at = NULL WHERE tenant_id = $1 AND id = $2`,
        [tenant.tenantId, event.id],
      );
      const requeued = await second.api.post('/v1/events/retry-dead');
      assert.deepEqual(requeued.body, { requeued: 1 });
      const batch = await onlyRow('event.retry_dead', tenant.tenantId);
      assertActor(batch, second.id, tenant.tenantId, requeued);
      assert.deepEqual(batch.after, { requeued: 1, firstEventId: event.id, lastEventId: event.id });
      assertEnvelope(assert, await tenant.api.post('/v1/events/999999999/retry'), 404, 'resource_not_found');
      assert.equal(await count('event.retry', '999999999'), 0);
      // Nothing left to requeue: twenty calls, no row (any events:write key could otherwise fill the trail).
      for (let i = 0; i < 20; i += 1)
        assert.deepEqual((await second.api.post('/v1/events/retry-dead')).body, { requeued: 0 });
      assert.equal(await count('event.retry_dead', tenant.tenantId), 1, 'only the call that requeued one');
    });

    it('payment.recheck and sandbox.simulate: one row each, none when refused', async () => {
      const made = await payout(tenant.api, { beneficiary: beneficiary('V20111444') });
      assert.equal(made.body.status, 'submitted', made.raw);
      const recheck = await admin.post(`/v1/admin/payments/${made.body.id}/recheck`);
      assert.equal(recheck.status, 200, recheck.raw);
      const row = await onlyRow('payment.recheck', made.body.id);
      assertActor(row, platformKeyId, PLATFORM_TENANT_ID, recheck);
      assert.equal(row.targetTenantId, tenant.tenantId);
      assert.equal(row.before.status, 'submitted');
      assert.deepEqual(
        { checkAttempts: row.after.checkAttempts, resolutionParkedAt: row.after.resolutionParkedAt },
        { checkAttempts: 0, resolutionParkedAt: null },
      );

      const simulated = await tenant.api.post(`/v1/sandbox/payments/${made.body.id}/simulate`, { outcome: 'settle' });
      assert.equal(simulated.status, 200, simulated.raw);
      const simulation = await onlyRow('sandbox.simulate', made.body.id);
      assertActor(simulation, tenant.keyId, tenant.tenantId, simulated);
      assert.deepEqual(simulation.before, { status: 'submitted' });
      assert.deepEqual(simulation.after, { outcome: 'settle', status: 'settled', reason: null });

      assertEnvelope(
        assert,
        await admin.post(`/v1/admin/payments/${made.body.id}/recheck`),
        409,
        'payment_already_resolved',
      );
      assertEnvelope(
        assert,
        await tenant.api.post(`/v1/sandbox/payments/${made.body.id}/simulate`, { outcome: 'settle' }),
        409,
        'payment_already_resolved',
      );
      assert.equal(await count('payment.recheck', made.body.id), 1);
      assert.equal(await count('sandbox.simulate', made.body.id), 1);
    });
  });

  describe('reading and protecting the trail', () => {
    it('GET /v1/admin/audit pages newest first and narrows by actor, target, tenant and time', async () => {
      const all = await walkPages(admin, '/v1/admin/audit', 3, AUDIT_KEYS);
      const { rows } = await t.db.query<{ id: string }>('SELECT id FROM audit_log ORDER BY created_at DESC, id DESC');
      assert.deepEqual(
        all.ids,
        rows.map((r) => r.id),
      );
      assert.ok(all.pages > 5);

      const everything = (await admin.get('/v1/admin/audit?limit=100')).body.data as Array<Record<string, any>>;
      const byPlatform = await walkPages(admin, `/v1/admin/audit?actorKeyId=${platformKeyId}`, 7, AUDIT_KEYS);
      assert.deepEqual(
        byPlatform.ids,
        everything.filter((r) => r.actorKeyId === platformKeyId).map((r) => r.id),
      );
      const others = everything.filter((r) => r.actorKeyId !== platformKeyId);
      assert.deepEqual(
        new Set(others.map((r) => r.action)),
        new Set(['event.retry', 'event.retry_dead', 'sandbox.simulate']),
      );

      const tenantId = everything.find((r) => r.action === 'sandbox.simulate')!.targetTenantId;
      const ofTenant = (await admin.get(`/v1/admin/audit?tenantId=${tenantId}&limit=100`)).body.data as Array<
        Record<string, any>
      >;
      assert.deepEqual(
        ofTenant.map((r) => r.id),
        everything.filter((r) => r.targetTenantId === tenantId).map((r) => r.id),
      );
      const keys = (await admin.get(`/v1/admin/audit?targetType=api_key&limit=100`)).body.data as Array<
        Record<string, any>
      >;
      assert.ok(keys.length > 0 && keys.every((r) => r.targetType === 'api_key'));

      const oldest = everything.at(-1)!.createdAt;
      assert.deepEqual((await admin.get(`/v1/admin/audit?to=${oldest}`)).body.data, []);
      assert.equal((await admin.get(`/v1/admin/audit?from=${oldest}&limit=100`)).body.data.length, everything.length);
      assert.deepEqual(
        (await admin.get(`/v1/admin/audit?from=${new Date(Date.now() + 3_600_000).toISOString()}`)).body.data,
        [],
      );
    });

    it('refuses a tenant key, an unknown filter, a malformed one and a foreign cursor', async () => {
      const tenant = await createTenant(t, { name: 'Curioso' });
      secrets.add(tenant.key);
      assertEnvelope(assert, await tenant.api.get('/v1/admin/audit'), 403, 'scope_missing');
      assertEnvelope(assert, await admin.get('/v1/admin/audit?actor=x'), 400, 'validation_failed');
      assertEnvelope(assert, await admin.get('/v1/admin/audit?actorKeyId=nope'), 400, 'validation_failed');
      assertEnvelope(assert, await admin.get('/v1/admin/audit?targetType=Robert%27);DROP'), 400, 'validation_failed');
      assertEnvelope(assert, await admin.get('/v1/admin/audit?from=yesterday'), 400, 'validation_failed');
      assertEnvelope(assert, await admin.get('/v1/admin/audit?cursor=abc'), 400, 'validation_failed');
    });

    it('the database refuses to change or remove an audit row, whoever asks', async () => {
      const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log');
      await assert.rejects(
        t.db.query(`UPDATE audit_log SET action = 'tenant.create'`),
        /audit_log is append-only: UPDATE refused/,
      );
      await assert.rejects(
        t.db.query(`UPDATE audit_log SET after = NULL WHERE action = 'api_key.issue'`),
        /append-only/,
      );
      await assert.rejects(t.db.query('DELETE FROM audit_log'), /audit_log is append-only: DELETE refused/);
      await assert.rejects(t.db.query('TRUNCATE audit_log'), /audit_log is append-only: TRUNCATE refused/);
      assert.equal(
        (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log')).rows[0]!.n,
        rows[0]!.n,
      );
    });

    it('no key, key hash, webhook secret, full account number or phone is in any log line or audit row; request lines carry the key id', async () => {
      const forbidden = [...secrets, ...[...secrets].filter((s) => s.startsWith('bsk_')).map(hashApiKey)];
      assert.ok(forbidden.length >= 12, `${forbidden.length} secrets`);
      const { rows } = await t.db.query<{ text: string }>(
        "SELECT coalesce(string_agg(row_to_json(a)::text, E'\\n'), '') AS text FROM audit_log a",
      );
      const trail = rows[0]!.text;
      const logged = log.lines.join('\n');
      assert.ok(log.lines.length > 100, `${log.lines.length} log lines captured`);
      for (const secret of forbidden) {
        assert.ok(!trail.includes(secret), `the audit trail holds ${secret.slice(0, 12)}…`);
        assert.ok(!logged.includes(secret), `the log holds ${secret.slice(0, 12)}…`);
      }

      const lines = log.parsed();
      const completed = lines.filter((l) => l.msg === 'request completed');
      const adminLines = completed.filter((l) => l.keyId === platformKeyId);
      assert.ok(adminLines.length > 20, `${adminLines.length} admin request lines carry the platform key id`);
      assert.ok(
        completed.some((l) => l.keyId === tenantKeyId),
        'tenant requests carry their key id',
      );
      // Every line of an authenticated request after the authentication carries it: here, every
      // "request completed" line of a request that authenticated (any status but 401).
      for (const line of completed) {
        const status = (line.res as { statusCode: number }).statusCode;
        if (status !== 401) assert.equal(typeof line.keyId, 'string', JSON.stringify(line));
      }
    });
  });
});
