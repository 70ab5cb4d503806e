// GET /v1/admin/tenants: the platform's list of customer tenants, newest first, by keyset cursor.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PLATFORM_TENANT_ID } from '../../src/services/bootstrap.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  startTestApp,
  walkPages,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';

const TENANT_KEYS = [
  'id',
  'name',
  'creditEnabled',
  'creditLimit',
  'creditLimits',
  'feeBps',
  'feeFixed',
  'spreadBps',
  'rejectInvalidAccounts',
  'createdAt',
  'updatedAt',
];

/** 400 validation_failed whose meta.errors names exactly this field. */
function assertInvalid(response: InjectResult, field: string): void {
  assertEnvelope(assert, response, 400, 'validation_failed');
  assert.deepEqual(
    (response.body.error.meta.errors as { field: string }[]).map((e) => e.field),
    [field],
    response.raw,
  );
}

describe('GET /v1/admin/tenants', () => {
  let t: TestApp;
  let admin: Client;
  let seq = 0;
  const create = async (tenant: Record<string, unknown> = {}): Promise<string> => {
    const response = await admin.post('/v1/admin/tenants', { name: `Tenant ${(seq += 1)}`, ...tenant });
    assert.equal(response.status, 201, response.raw);
    return response.body.id as string;
  };

  /** Every page from the first, `between` run after each page read. */
  const walk = (limit: number, between?: () => Promise<void>) =>
    walkPages(admin, '/v1/admin/tenants', limit, TENANT_KEYS, between);

  before(async () => {
    t = await startTestApp();
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  it('an empty platform lists nothing: the platform tenant itself is never listed', async () => {
    // startTestApp registers the platform key, hence the platform tenant, and no customer tenant.
    const { rows } = await t.db.query<{ n: bigint }>('SELECT count(*)::bigint AS n FROM tenants WHERE id = $1', [
      PLATFORM_TENANT_ID,
    ]);
    assert.equal(rows[0]!.n, 1n);
    assert.deepEqual((await admin.get('/v1/admin/tenants')).body, { data: [], has_more: false, next_cursor: null });
  });

  it('each item is the tenant exactly as GET /v1/admin/tenants/{id} returns it', async () => {
    const id = await create({
      creditEnabled: true,
      creditLimit: 5_000_000,
      creditLimits: { USD: 250_000 },
      feeBps: 80,
      feeFixed: 100,
      spreadBps: 30,
    });
    await admin.patch(`/v1/admin/tenants/${id}`, { name: 'Renamed' });
    const listed = (await admin.get('/v1/admin/tenants?limit=1')).body.data[0];
    assert.equal(listed.id, id);
    assert.deepEqual(listed, (await admin.get(`/v1/admin/tenants/${id}`)).body);
    assert.equal(listed.name, 'Renamed');
    assert.deepEqual(listed.creditLimits, { BS: '5000000', USD: '250000', USDC: null, VESC: null });
  });

  it('pages newest first with limit, default 25, has_more and next_cursor', async () => {
    for (let i = 0; i < 27; i += 1) await create();
    const { rows } = await t.db.query<{ n: bigint }>('SELECT count(*)::bigint AS n FROM tenants WHERE NOT is_platform');
    const total = Number(rows[0]!.n);
    assert.ok(total > 25);

    const first = await admin.get('/v1/admin/tenants');
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 25);
    assert.equal(first.body.has_more, true);
    assert.equal(typeof first.body.next_cursor, 'string');
    const rest = await admin.get(`/v1/admin/tenants?limit=100&cursor=${first.body.next_cursor}`);
    assert.equal(rest.body.data.length, total - 25);
    assert.equal(rest.body.has_more, false);
    assert.equal(rest.body.next_cursor, null);

    const all = [...first.body.data, ...rest.body.data];
    const order = all.map((row: { createdAt: string }) => row.createdAt);
    assert.deepEqual(order, [...order].sort().reverse(), 'createdAt descending');
    assert.deepEqual((await admin.get('/v1/admin/tenants?limit=100')).body.data, all);
    for (const limit of [1, 4, 7])
      assert.deepEqual(
        (await walk(limit)).ids,
        all.map((row: { id: string }) => row.id),
        `limit ${limit}`,
      );
    assert.ok(!all.some((row: { id: string }) => row.id === PLATFORM_TENANT_ID));
  });

  it('no gaps or duplicates while tenants are created between page reads', async () => {
    for (let i = 0; i < 12; i += 1) await create();
    const existing = (await walk(100)).ids;
    const added: string[] = [];
    const { ids } = await walk(5, async () => {
      added.push(...(await Promise.all([create(), create()])));
    });
    assert.equal(new Set(ids).size, ids.length, 'no duplicates');
    assert.deepEqual(ids, existing, 'the walk lists exactly the tenants that existed when it started, in order');
    const fresh = await walk(6);
    assert.equal(fresh.ids.length, existing.length + added.length);
    assert.deepEqual(
      new Set(fresh.ids.slice(0, added.length)),
      new Set(added),
      'the tenants created during the walk come first',
    );
    assert.deepEqual(fresh.ids.slice(added.length), existing);
  });

  it('keeps microsecond order and breaks ties by id', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) ids.push(await create());
    // Far in the future, so these seven are the newest; same millisecond and exact ties included.
    const times = [
      '2999-01-01T00:00:00.000001Z',
      '2999-01-01T00:00:00.000001Z',
      '2999-01-01T00:00:00.000001Z',
      '2999-01-01T00:00:00.000002Z',
      '2999-01-01T00:00:00.000999Z',
      '2999-01-01T00:00:00.000999Z',
      '2999-01-01T00:00:00.001000Z',
    ];
    for (const [i, id] of ids.entries())
      await t.db.query('UPDATE tenants SET created_at = $2::timestamptz WHERE id = $1', [id, times[i]]);
    const expected = ids
      .map((id, i) => ({ id, time: times[i]! }))
      .sort((a, b) => (a.time === b.time ? (a.id < b.id ? 1 : -1) : a.time < b.time ? 1 : -1))
      .map((row) => row.id);
    for (const limit of [1, 2, 3]) assert.deepEqual((await walk(limit)).ids.slice(0, 7), expected, `limit ${limit}`);
  });

  it('limit must be an integer from 1 to 100', async () => {
    for (const limit of ['0', '101', '-1', 'abc', '1.5', '0x10'])
      assertInvalid(await admin.get(`/v1/admin/tenants?limit=${limit}`), 'limit');
    assert.equal((await admin.get('/v1/admin/tenants?limit=1')).body.data.length, 1);
    assert.equal((await admin.get('/v1/admin/tenants?limit=100')).status, 200);
  });

  it('a malformed or tampered cursor is 400 validation_failed naming cursor', async () => {
    await create();
    await create();
    const good = (await admin.get('/v1/admin/tenants?limit=1')).body.next_cursor as string;
    const decoded = Buffer.from(good, 'base64url').toString();
    const tampered = [
      'garbage',
      'not*base64',
      Buffer.from(decoded.replace(/^k1/, 'k9')).toString('base64url'),
      Buffer.from(decoded.replace(/:[0-9a-f-]+$/, ':nope')).toString('base64url'),
      Buffer.from(decoded.replace(/:\d+:/, ':12ab:')).toString('base64url'),
      Buffer.from(`${decoded}:extra`).toString('base64url'),
      'x'.repeat(201),
      '',
    ];
    for (const cursor of tampered)
      assertInvalid(await admin.get(`/v1/admin/tenants?cursor=${encodeURIComponent(cursor)}`), 'cursor');
    assert.equal((await admin.get(`/v1/admin/tenants?cursor=${good}`)).status, 200);
    assertInvalid(await admin.get('/v1/admin/tenants?page=2'), 'page');
  });

  it('needs the platform key: 401 without a key or with an unknown one, 403 for a customer key', async () => {
    assertEnvelope(assert, await client(t.app).get('/v1/admin/tenants'), 401, 'api_key_missing');
    assertEnvelope(
      assert,
      await client(t.app, `bsk_platform_${'a'.repeat(40)}`).get('/v1/admin/tenants'),
      401,
      'api_key_invalid',
    );
    const customer = await createTenant(t, { scopes: ['payments:read', 'payments:write', 'treasury:read'] });
    const refused = await customer.api.get('/v1/admin/tenants');
    assertEnvelope(assert, refused, 403, 'scope_missing');
    assert.deepEqual(refused.body.error.meta, { required: ['platform:admin'] });
    // The key comes before the query: a customer key with an invalid limit is still 403.
    assertEnvelope(assert, await customer.api.get('/v1/admin/tenants?limit=0'), 403, 'scope_missing');
  });
});
