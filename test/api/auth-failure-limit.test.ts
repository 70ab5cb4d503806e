// Failed authentications are limited per client address and per key prefix: past AUTH_FAILURE_LIMIT
// failures within AUTH_FAILURE_WINDOW_S, that address's keys that are not active answer 429 without a
// database lookup, while a valid key from it is still served. Addresses come from inject's
// remoteAddress; time from a ManualClock.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { ACTIVE_KEY_INDEX_MISS_RELOAD_MS } from '../../src/services/active-key-index.ts';
import { TenantService } from '../../src/services/tenants.ts';
import { assertEnvelope, client, createTenant, getFrom, startTestApp, type TestApp } from '../support/harness.ts';

const LIMIT = 5;
const WINDOW_S = 60;

describe('failed authentications are limited per client address', () => {
  let t: TestApp;
  let clock: ManualClock;
  let validKey: string;
  let revokedKey: string;
  let keyLookups = 0;
  let indexLoads = 0;
  let authenticateCalls = 0;
  let nextAddress = 1;
  /** A fresh address per test, so tests never share a budget. */
  let address: string;

  before(async () => {
    clock = new ManualClock('2026-11-23T12:00:00Z');
    t = await startTestApp({
      clock,
      env: {
        AUTH_FAILURE_LIMIT: String(LIMIT),
        AUTH_FAILURE_WINDOW_S: String(WINDOW_S),
        AUTH_FAILURE_PREFIX_LIMIT: '0',
      },
    });
    validKey = (await createTenant(t, { name: 'Valida' })).key;
    const revoked = await createTenant(t, { name: 'Revocada' });
    await client(t.app, t.platformKey).delete(`/v1/admin/api-keys/${revoked.keyId}`);
    revokedKey = revoked.key;
    // Spies: every key lookup statement, every load of the index of active keys, and every call into
    // the authenticator.
    const query = t.db.query.bind(t.db);
    t.db.query = ((sql: string, params?: readonly unknown[]) => {
      if (/\bFROM api_keys k\b.*key_hash = ANY/s.test(sql)) keyLookups += 1;
      if (/^SELECT key_hash FROM api_keys WHERE revoked_at IS NULL/.test(sql)) indexLoads += 1;
      return query(sql, params);
    }) as typeof t.db.query;
    const authenticate = t.services.authenticator.authenticate.bind(t.services.authenticator);
    t.services.authenticator.authenticate = (key: string) => {
      authenticateCalls += 1;
      return authenticate(key);
    };
  });
  after(async () => {
    await t.close();
  });
  beforeEach(() => {
    address = `203.0.113.${nextAddress++}`;
  });

  const call = (from: string, key: string | undefined, url = '/v1/tenant/me') =>
    getFrom(t.app, from, url, key === undefined ? {} : { 'x-api-key': key });

  const unknownKey = (i: number) => `bsk_test_${String(i).padStart(40, 'x')}`;

  async function failLimit(from: string): Promise<void> {
    for (let i = 0; i < LIMIT; i += 1) assertEnvelope(assert, await call(from, unknownKey(i)), 401, 'api_key_invalid');
  }

  it(`answers 429 rate_limited with Retry-After after ${LIMIT} failures, in the error envelope`, async () => {
    await failLimit(address);
    const limited = await call(address, unknownKey(99));
    assertEnvelope(assert, limited, 429, 'rate_limited');
    assert.equal(limited.body.error.type, 'rate_limit_error');
    assert.equal(limited.headers['retry-after'], String(WINDOW_S));
    assert.deepEqual(limited.body.error.meta, {
      failed_authentications_max: LIMIT,
      window_seconds: WINDOW_S,
      limited_by: 'address',
    });
    // A valid key is served whoever shares the address; every other key is refused without a lookup.
    const me = await call(address, validKey);
    assert.equal(me.status, 200, me.raw);
    assertEnvelope(assert, await call(address, 'nope'), 429, 'rate_limited');
    assertEnvelope(assert, await call(address, revokedKey), 429, 'rate_limited');
    // No key: nothing to guess, nothing looked up, so neither counted nor limited.
    assertEnvelope(assert, await call(address, undefined), 401, 'api_key_missing');
    // Public routes are never limited.
    assert.equal((await call(address, undefined, '/health/live')).status, 200);
    assert.equal((await call(address, unknownKey(1), '/health/ready')).status, 200);
    assert.equal((await call(address, unknownKey(1), '/v1/openapi.json')).status, 200);
  });

  it('leaves other addresses alone', async () => {
    await failLimit(address);
    assertEnvelope(assert, await call(address, unknownKey(99)), 429, 'rate_limited');
    const other = `198.51.100.${nextAddress}`;
    assertEnvelope(assert, await call(other, unknownKey(1)), 401, 'api_key_invalid');
    const me = await call(`198.51.100.${nextAddress + 100}`, validKey);
    assert.equal(me.status, 200, me.raw);
    assert.equal(me.body.name, 'Valida');
  });

  it('counts unknown, revoked and malformed keys alike, and does not forget them on a success', async () => {
    assertEnvelope(assert, await call(address, 'nope'), 401, 'api_key_invalid');
    assertEnvelope(assert, await call(address, `bsk_test_${'a'.repeat(300)}`), 401, 'api_key_invalid');
    assert.equal((await call(address, validKey)).status, 200);
    assertEnvelope(assert, await call(address, revokedKey), 401, 'api_key_invalid');
    assertEnvelope(assert, await call(address, revokedKey), 401, 'api_key_invalid');
    assertEnvelope(assert, await call(address, unknownKey(1)), 401, 'api_key_invalid');
    assertEnvelope(assert, await call(address, unknownKey(2)), 429, 'rate_limited');
  });

  it('makes no lookup for the unknown keys of a limited address, one per valid key, and loads its index at most once a second', async () => {
    clock.advance(60_000); // the index loaded by earlier tests is stale: this test sees its load
    const lookupsBefore = keyLookups;
    const loadsBefore = indexLoads;
    const callsBefore = authenticateCalls;
    await failLimit(address);
    assert.equal(keyLookups - lookupsBefore, LIMIT, 'one lookup per failure until the limit');
    assert.equal(authenticateCalls - callsBefore, LIMIT);
    assert.equal(indexLoads - loadsBefore, 0, 'no index while nothing is limited');
    for (let i = 0; i < 20; i += 1)
      assertEnvelope(assert, await call(address, unknownKey(100 + i)), 429, 'rate_limited');
    assert.equal(keyLookups - lookupsBefore, LIMIT, 'no lookup for an unknown key while limited');
    assert.equal(authenticateCalls - callsBefore, LIMIT, 'the authenticator is not even asked');
    assert.equal(indexLoads - loadsBefore, 1, 'one index load for all of them');
    for (let i = 0; i < 3; i += 1) assert.equal((await call(address, validKey)).status, 200);
    assert.equal(keyLookups - lookupsBefore, LIMIT + 3, 'a valid key is looked up as always');
    clock.advance(999);
    assertEnvelope(assert, await call(address, unknownKey(200)), 429, 'rate_limited');
    assert.equal(indexLoads - loadsBefore, 1);
    clock.advance(1);
    for (let i = 0; i < 20; i += 1)
      assertEnvelope(assert, await call(address, unknownKey(300 + i)), 429, 'rate_limited');
    assert.equal(
      indexLoads - loadsBefore,
      2,
      'a miss loads it again once it is a second old, once for the whole flood',
    );
    assert.equal(keyLookups - lookupsBefore, LIMIT + 3, 'and still no lookup for an unknown key');
  });

  it('a key issued after the index was loaded is served to a limited address: at once by the issuing process, within a second from another', async () => {
    await failLimit(address);
    assertEnvelope(assert, await call(address, unknownKey(99)), 429, 'rate_limited'); // the index is loaded now
    const fresh = await createTenant(t, { name: 'Nueva' });
    assert.equal(
      (await call(address, fresh.key)).status,
      200,
      'issued by this process: served at once, in the middle of the flood',
    );

    // Issued by another process (its own TenantService, which tells this process nothing).
    const elsewhere = await new TenantService(t.db).issueKeyUnchecked(
      t.db,
      fresh.tenantId,
      'test',
      ['payments:read'],
      'admin',
    );
    clock.advance(ACTIVE_KEY_INDEX_MISS_RELOAD_MS);
    assert.equal(
      (await call(address, elsewhere.key)).status,
      200,
      'issued by another process: known at the first miss a second after the last load',
    );

    const other = await createTenant(t, { name: 'Otra' });
    assert.equal((await call(`198.51.100.${nextAddress + 200}`, other.key)).status, 200);
    assert.equal((await call(address, other.key)).status, 200, 'a key this process authenticated is known at once');
  });

  it('a revocation holds at once for a limited address too', async () => {
    const victim = await createTenant(t, { name: 'Revocable' });
    assert.equal((await call(`198.51.100.${nextAddress + 150}`, victim.key)).status, 200);
    await failLimit(address);
    assert.equal((await call(address, victim.key)).status, 200);
    await client(t.app, t.platformKey).delete(`/v1/admin/api-keys/${victim.keyId}`);
    assertEnvelope(assert, await call(address, victim.key), 401, 'api_key_invalid');
  });

  it('frees a slot as the oldest failure leaves the window, and all of them after a full window', async () => {
    for (let i = 0; i < 3; i += 1) assertEnvelope(assert, await call(address, unknownKey(i)), 401, 'api_key_invalid');
    clock.advance(20_000);
    for (let i = 0; i < 2; i += 1) assertEnvelope(assert, await call(address, unknownKey(i)), 401, 'api_key_invalid');
    const limited = await call(address, unknownKey(9));
    assertEnvelope(assert, limited, 429, 'rate_limited');
    assert.equal(limited.headers['retry-after'], '40', 'until the first three leave the window');

    clock.advance(39_000);
    const stillLimited = await call(address, unknownKey(9));
    assertEnvelope(assert, stillLimited, 429, 'rate_limited');
    assert.equal(stillLimited.headers['retry-after'], '1');

    clock.advance(1_000); // the first three are a full window old: three more attempts
    for (let i = 0; i < 3; i += 1) assertEnvelope(assert, await call(address, unknownKey(i)), 401, 'api_key_invalid');
    const again = await call(address, unknownKey(9));
    assertEnvelope(assert, again, 429, 'rate_limited');
    assert.equal(again.headers['retry-after'], '20', 'until the two of second 20 leave it');

    clock.advance(WINDOW_S * 1000); // everything is old now
    const me = await call(address, validKey);
    assert.equal(me.status, 200, me.raw);
    await failLimit(address);
    assertEnvelope(assert, await call(address, unknownKey(9)), 429, 'rate_limited');
  });

  it('a valid key from a fresh address works while another address is limited', async () => {
    await failLimit(address);
    assertEnvelope(assert, await call(address, unknownKey(99)), 429, 'rate_limited');
    const fresh = await call('2001:db8::1', validKey);
    assert.equal(fresh.status, 200, fresh.raw);
    assert.equal(fresh.body.name, 'Valida');
  });
});

describe('with the default limits, one address guessing keys locks nobody out', () => {
  let t: TestApp;
  let lookups = 0;
  before(async () => {
    t = await startTestApp();
    const query = t.db.query.bind(t.db);
    t.db.query = ((sql: string, params?: readonly unknown[]) => {
      if (/\bFROM api_keys k\b.*key_hash = ANY/s.test(sql)) lookups += 1;
      return query(sql, params);
    }) as typeof t.db.query;
  });
  after(async () => {
    await t.close();
  });

  it('400 bad keys from one address, then its valid key answers 200 while a further bad key still gets 429', async () => {
    const { key } = await createTenant(t, { name: 'Detrás del NAT' });
    lookups = 0;
    const from = '192.0.2.77';
    const get = (apiKey: string) =>
      t.app.inject({ method: 'GET', url: '/v1/tenant/me', remoteAddress: from, headers: { 'x-api-key': apiKey } });
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i += 1) {
      const { statusCode } = await get(`bsk_live_${String(i).padStart(40, 'z')}`);
      statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
    }
    assert.deepEqual(
      Object.fromEntries(statuses),
      { 401: 300, 429: 100 },
      'AUTH_FAILURE_LIMIT (300) failures, then 429',
    );
    assert.equal(lookups, 300, 'the 100 refused keys cost no lookup');
    const valid = await get(key);
    assert.equal(valid.statusCode, 200, valid.body);
    assert.equal(JSON.parse(valid.body).name, 'Detrás del NAT');
    const bad = await get(`bsk_live_${'y'.repeat(40)}`);
    assert.equal(bad.statusCode, 429);
    assert.equal(JSON.parse(bad.body).error.meta.limited_by, 'address');
    assert.equal(lookups, 301, 'only the valid key was looked up');
  });
});

describe('failed lookups are limited per key prefix across addresses', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { AUTH_FAILURE_LIMIT: '1000', AUTH_FAILURE_PREFIX_LIMIT: String(LIMIT) } });
  });
  after(async () => {
    await t.close();
  });

  const get = (from: string, key: string) => getFrom(t.app, from, '/v1/tenant/me', { 'x-api-key': key });

  it('many addresses guessing one kind of key spend its budget; other kinds, malformed keys and valid keys are not refused', async () => {
    const valid = await createTenant(t, { name: 'Viva', mode: 'live' });
    for (let i = 0; i < LIMIT; i += 1)
      assertEnvelope(
        assert,
        await get(`203.0.113.${i + 1}`, `bsk_live_${String(i).padStart(40, 'w')}`),
        401,
        'api_key_invalid',
      );
    const limited = await get('203.0.113.200', `bsk_live_${'v'.repeat(40)}`);
    assertEnvelope(assert, limited, 429, 'rate_limited');
    assert.equal(limited.body.error.meta.limited_by, 'key_prefix');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assertEnvelope(assert, await get('203.0.113.201', `bsk_test_${'v'.repeat(40)}`), 401, 'api_key_invalid');
    assertEnvelope(assert, await get('203.0.113.202', 'bsk_live_short'), 401, 'api_key_invalid');
    const me = await get('203.0.113.203', valid.key);
    assert.equal(me.status, 200, me.raw);
  });
});

describe('AUTH_FAILURE_LIMIT=0 disables the limit', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { AUTH_FAILURE_LIMIT: '0' } });
  });
  after(async () => {
    await t.close();
  });

  it('never answers 429 for failed authentications', async () => {
    const api = client(t.app, 'bsk_test_' + 'q'.repeat(40));
    for (let i = 0; i < 50; i += 1) assertEnvelope(assert, await api.get('/v1/tenant/me'), 401, 'api_key_invalid');
  });
});

describe('behind a proxy (TRUST_PROXY)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { AUTH_FAILURE_LIMIT: String(LIMIT), TRUST_PROXY: '10.0.0.0/8' } });
  });
  after(async () => {
    await t.close();
  });

  const guess = (from: string, forwardedFor?: string) =>
    t.app.inject({
      method: 'GET',
      url: '/v1/tenant/me',
      remoteAddress: from,
      headers: { 'x-api-key': `bsk_test_${'x'.repeat(40)}`, ...(forwardedFor && { 'x-forwarded-for': forwardedFor }) },
    });

  it('through a trusted proxy, each client behind it has its own budget', async () => {
    for (let i = 0; i < LIMIT; i += 1) assert.equal((await guess('10.1.2.3', '198.51.100.1')).statusCode, 401);
    assert.equal((await guess('10.1.2.3', '198.51.100.1')).statusCode, 429, 'the guessing client is limited');
    assert.equal(
      (await guess('10.1.2.3', '198.51.100.2')).statusCode,
      401,
      'another client through the same proxy is not',
    );
  });

  it('a peer that is not a trusted proxy is its own address, whatever X-Forwarded-For it sends', async () => {
    for (let i = 0; i < LIMIT; i += 1)
      assert.equal((await guess('203.0.113.50', `198.51.100.${10 + i}`)).statusCode, 401);
    assert.equal((await guess('203.0.113.50', '198.51.100.99')).statusCode, 429, 'a forged header buys no new budget');
  });
});
