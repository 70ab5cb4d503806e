// GET /v1/admin/tenants/{id}/payments: the platform reads a tenant's statement in a mode, and what it
// reads is exactly what the tenant's own key lists with GET /v1/payments for the same filters.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { PLATFORM_TENANT_ID } from '../../src/services/bootstrap.ts';
import {
  assertEnvelope,
  client,
  ENGINE,
  startTestApp,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, type FundedTenant } from '../support/payouts.ts';

const CUSTOMER = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b301';
const UNKNOWN = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
const PAGE_BOUND = 1000;

/** Every row of a list from its first page, `limit` at a time, following next_cursor. */
async function walk(
  api: Client,
  path: string,
  query: Record<string, string>,
  limit: number,
): Promise<Array<Record<string, unknown>>> {
  const rows: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < PAGE_BOUND; pages += 1) {
    const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) });
    const page: InjectResult = await api.get(`${path}?${params.toString()}`);
    assert.equal(page.status, 200, page.raw);
    rows.push(...page.body.data);
    cursor = page.body.next_cursor;
    if (!cursor) return rows;
  }
  throw new Error(`${path} did not end within ${PAGE_BOUND} pages`);
}

function assertInvalid(response: InjectResult, field: string): void {
  assertEnvelope(assert, response, 400, 'validation_failed');
  assert.ok(
    (response.body.error.meta.errors as Array<{ field: string }>).some((e) => e.field === field),
    response.raw,
  );
}

describe(`admin statement: GET /v1/admin/tenants/{id}/payments, on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let admin: Client;
  let main: FundedTenant;
  let other: FundedTenant;
  let otherIds: string[];

  async function pay(api: Client, nationalId: string, extra: Record<string, unknown> = {}): Promise<void> {
    const response = await payout(api, { beneficiary: beneficiary(nationalId), ...extra });
    assert.equal(response.status, 201, response.raw);
  }

  before(async () => {
    // 2026-03-09 11:00 in Caracas (UTC−4).
    clock = new ManualClock('2026-03-09T15:00:00Z');
    t = await startTestApp({ clock });
    admin = client(t.app, t.platformKey);
    main = await fundedTenant(t);
    other = await fundedTenant(t);
    await pay(main.api, 'V99990001', { customerId: CUSTOMER, metadata: { order_id: 'A-1' } });
    clock.advance(60 * 60_000);
    await pay(main.api, 'V99990004', { customerId: CUSTOMER });
    await pay(main.api, 'V99990001');
    clock.advance(60 * 60_000);
    await pay(main.api, 'V99990004');
    await pay(main.api, 'V99990001', { metadata: { order_id: 'A-2' } });
    await pay(other.api, 'V99990001');
    await pay(other.api, 'V99990004');
    otherIds = (await walk(other.api, '/v1/payments', {}, 100)).map((row) => row.id as string);
  });

  after(async () => {
    await t.close();
  });

  it("lists exactly the tenant's own statement for the same filters, page after page", async () => {
    const filters: Array<Record<string, string>> = [
      {},
      { status: 'settled' },
      { status: 'failed' },
      { customerId: CUSTOMER },
      // The second hour of the day: a bucket of the payout report, as the console's bars link it.
      { createdFrom: '2026-03-09T16:00:00.000Z', createdBefore: '2026-03-09T17:00:00.000Z' },
      { createdFrom: '2026-03-09T16:00:00.000Z', createdBefore: '2026-03-09T18:00:00.000Z', status: 'failed' },
      { from: '2026-03-09', to: '2026-03-09' },
      { metadata_key: 'order_id', metadata_value: 'A-2' },
    ];
    for (const filter of filters) {
      const own = await walk(main.api, '/v1/payments', filter, 100);
      assert.ok(own.length > 0, `the filter ${JSON.stringify(filter)} selects something`);
      for (const limit of [1, 2, 100]) {
        assert.deepEqual(
          await walk(admin, `/v1/admin/tenants/${main.tenantId}/payments`, { mode: 'test', ...filter }, limit),
          own,
          `${JSON.stringify(filter)}, limit ${limit}`,
        );
      }
    }
    const all = await walk(admin, `/v1/admin/tenants/${main.tenantId}/payments`, { mode: 'test' }, 100);
    assert.equal(all.length, 5);
    assert.ok(!all.some((row) => otherIds.includes(row.id as string)), 'no payment of another tenant');
  });

  it('answers the same page, default limit and cursor as the tenant gets', async () => {
    const own = await main.api.get('/v1/payments?limit=2');
    const read = await admin.get(`/v1/admin/tenants/${main.tenantId}/payments?mode=test&limit=2`);
    assert.equal(read.status, 200, read.raw);
    assert.deepEqual(read.body, own.body);
    const rest = await admin.get(
      `/v1/admin/tenants/${main.tenantId}/payments?mode=test&cursor=${encodeURIComponent(read.body.next_cursor)}`,
    );
    assert.deepEqual(
      rest.body,
      (await main.api.get(`/v1/payments?cursor=${encodeURIComponent(own.body.next_cursor)}`)).body,
    );
  });

  it('reads the mode it names: the live statement of a tenant that paid only in test is empty', async () => {
    const live = await admin.get(`/v1/admin/tenants/${main.tenantId}/payments?mode=live`);
    assert.deepEqual(live.body, { data: [], has_more: false, next_cursor: null });
  });

  it('400 validation_failed without mode, or with an invalid mode or filter', async () => {
    assertInvalid(await admin.get(`/v1/admin/tenants/${main.tenantId}/payments`), 'mode');
    assertInvalid(await admin.get(`/v1/admin/tenants/${main.tenantId}/payments?mode=sandbox`), 'mode');
    assertInvalid(await admin.get(`/v1/admin/tenants/${main.tenantId}/payments?mode=test&status=paid`), 'status');
    assertInvalid(
      await admin.get(
        `/v1/admin/tenants/${main.tenantId}/payments?mode=test&createdFrom=2026-03-09T17:00:00.000Z&createdBefore=2026-03-09T16:00:00.000Z`,
      ),
      'createdFrom',
    );
    assertInvalid(
      await admin.get(`/v1/admin/tenants/${main.tenantId}/payments?mode=test&metadata_key=order_id`),
      'metadata_value',
    );
  });

  it('404 resource_not_found for an unknown tenant and for the platform tenant', async () => {
    assertEnvelope(
      assert,
      await admin.get(`/v1/admin/tenants/${UNKNOWN}/payments?mode=test`),
      404,
      'resource_not_found',
    );
    assertEnvelope(
      assert,
      await admin.get(`/v1/admin/tenants/${PLATFORM_TENANT_ID}/payments?mode=test`),
      404,
      'resource_not_found',
    );
  });

  it("403 for a tenant's key, its own tenant included", async () => {
    assertEnvelope(
      assert,
      await main.api.get(`/v1/admin/tenants/${main.tenantId}/payments?mode=test`),
      403,
      'scope_missing',
    );
    assertEnvelope(
      assert,
      await main.api.get(`/v1/admin/tenants/${other.tenantId}/payments?mode=test`),
      403,
      'scope_missing',
    );
  });
});
