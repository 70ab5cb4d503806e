import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { assertEnvelope, client, createTenant, startTestApp, type Client, type TestApp } from '../support/harness.ts';

describe('quotes and rates', () => {
  let t: TestApp;
  let clock: ManualClock;
  let api: Client;
  let admin: Client;
  let tenantId: string;
  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock });
    const tenant = await createTenant(t);
    api = tenant.api;
    tenantId = tenant.tenantId;
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  describe('deliver mode (BS, fee on top)', () => {
    it('delivers exactly deliver.amount and charges deliver + fee', async () => {
      const quote = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 5000000 } });
      assert.equal(quote.status, 201, quote.raw);
      assert.deepEqual(Object.keys(quote.body).sort(), [
        'created_at',
        'deliver',
        'expires_at',
        'fee',
        'fixed',
        'id',
        'metadata',
        'rate',
        'spend',
        'status',
      ]);
      assert.deepEqual(quote.body.metadata, {}, 'no metadata reads back as {}');
      assert.equal(quote.body.fixed, 'deliver');
      assert.deepEqual(quote.body.deliver, { asset: 'BS', amount: '5000000' });
      assert.deepEqual(quote.body.fee, { asset: 'BS', amount: '50000' });
      assert.deepEqual(quote.body.spend, { asset: 'BS', amount: '5050000' });
      assert.equal(quote.body.rate, null);
      assert.equal(quote.body.status, 'open');
      assert.equal(new Date(quote.body.expires_at).getTime() - new Date(quote.body.created_at).getTime(), 60_000);
    });

    it('rounds the percentage fee up and adds the fixed fee', async () => {
      const tenant = await createTenant(t, { tenant: { feeBps: 75, feeFixed: 500 } });
      const quote = await tenant.api.post('/v1/quotes', {
        deliver: { asset: 'BS', amount: 12345 },
        spend: { asset: 'BS' },
      });
      assert.equal(quote.status, 201, quote.raw);
      // ceil(12345 × 75 / 10000) = ceil(92.5875) = 93, + 500
      assert.equal(quote.body.fee.amount, '593');
      assert.equal(quote.body.spend.amount, '12938');
    });

    it('accepts customerId', async () => {
      const quote = await api.post('/v1/quotes', {
        deliver: { asset: 'BS', amount: 100000 },
        customerId: '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3c4',
      });
      assert.equal(quote.status, 201);
    });
  });

  describe('spend mode (conversion, fee deducted)', () => {
    it('USD: converts at rate.value (market minus spread), floors, then deducts the fee', async () => {
      const quote = await api.post('/v1/quotes', { spend: { asset: 'USD', amount: 10000 }, deliver: { asset: 'BS' } });
      assert.equal(quote.status, 201, quote.raw);
      assert.equal(quote.body.fixed, 'spend');
      assert.deepEqual(quote.body.rate, { value: '920.375', market: '925.00', spread_bps: 50 });
      assert.deepEqual(quote.body.spend, { asset: 'USD', amount: '10000' });
      // gross = floor(100.00 × 920.375) = 9203750; fee = ceil(92037.5) = 92038
      assert.deepEqual(quote.body.fee, { asset: 'BS', amount: '92038' });
      assert.deepEqual(quote.body.deliver, { asset: 'BS', amount: '9111712' });
    });

    it('USDC has 6 decimals', async () => {
      const quote = await api.post('/v1/quotes', {
        spend: { asset: 'USDC', amount: 1000000 },
        deliver: { asset: 'BS' },
      });
      assert.equal(quote.status, 201, quote.raw);
      assert.equal(quote.body.fee.amount, '921');
      assert.equal(quote.body.deliver.amount, '91116');
    });

    it('spread 0 gives rate.value equal to the market', async () => {
      const tenant = await createTenant(t, { tenant: { spreadBps: 0 } });
      const quote = await tenant.api.post('/v1/quotes', {
        spend: { asset: 'USD', amount: 100 },
        deliver: { asset: 'BS' },
      });
      assert.deepEqual(quote.body.rate, { value: '925.00', market: '925.00', spread_bps: 0 });
      assert.equal(quote.body.deliver.amount, String(92500 - 925));
    });

    it('a spend too small to cover the fee is 400, not a negative delivery', async () => {
      const tenant = await createTenant(t, { tenant: { feeFixed: 100000 } });
      const quote = await tenant.api.post('/v1/quotes', {
        spend: { asset: 'USD', amount: 1 },
        deliver: { asset: 'BS' },
      });
      assertEnvelope(assert, quote, 400, 'validation_failed');
      assert.equal(quote.body.error.meta.errors[0].field, 'spend.amount');
    });
  });

  describe('the five rules: 400 validation_failed saying what to send instead', () => {
    const cases: Array<[string, unknown, string]> = [
      [
        'rule 1: both amounts',
        { deliver: { asset: 'BS', amount: 100 }, spend: { asset: 'USD', amount: 100 } },
        'spend.amount',
      ],
      ['rule 1: no amount', { deliver: { asset: 'BS' }, spend: { asset: 'USD' } }, 'deliver.amount'],
      ['rule 1: empty body object', {}, 'deliver.amount'],
      ['rule 2: deliver in another asset', { deliver: { asset: 'USD', amount: 100 } }, 'deliver.asset'],
      [
        'rule 3: spend mode with the same asset',
        { spend: { asset: 'BS', amount: 100000 }, deliver: { asset: 'BS' } },
        'spend.asset',
      ],
      ['rule 4: spend without deliver.asset', { spend: { asset: 'USD', amount: 100 } }, 'deliver.asset'],
      [
        'rule 5: deliver.amount paying in USD',
        { deliver: { asset: 'BS', amount: 100000 }, spend: { asset: 'USD' } },
        'spend.asset',
      ],
    ];
    for (const [name, body, field] of cases) {
      it(name, async () => {
        const response = await api.post('/v1/quotes', body);
        assertEnvelope(assert, response, 400, 'validation_failed');
        assert.equal(response.body.error.meta.errors[0].field, field);
        assert.ok(response.body.error.message.length > 20, 'the message says what to send instead');
      });
    }

    const malformed: Array<[string, unknown, string]> = [
      ['amount as a string', { deliver: { asset: 'BS', amount: '5000' } }, 'deliver.amount'],
      ['fractional amount', { deliver: { asset: 'BS', amount: 50.5 } }, 'deliver.amount'],
      ['zero amount', { deliver: { asset: 'BS', amount: 0 } }, 'deliver.amount'],
      ['negative amount', { spend: { asset: 'USD', amount: -5 }, deliver: { asset: 'BS' } }, 'spend.amount'],
      ['huge amount', { deliver: { asset: 'BS', amount: 1e20 } }, 'deliver.amount'],
      ['unknown asset', { deliver: { asset: 'EUR', amount: 100 } }, 'deliver.asset'],
      ['missing asset', { deliver: { amount: 100 } }, 'deliver.asset'],
      ['bad customerId', { deliver: { asset: 'BS', amount: 100 }, customerId: 'nope' }, 'customerId'],
    ];
    for (const [name, body, field] of malformed) {
      it(`rejects ${name}`, async () => {
        const response = await api.post('/v1/quotes', body);
        assertEnvelope(assert, response, 400, 'validation_failed');
        assert.ok(
          response.body.error.meta.errors.some((e: { field: string }) => e.field === field),
          response.raw,
        );
      });
    }
  });

  describe('rates', () => {
    it('a stale rate gives 503 rate_unavailable for conversions; deliver mode needs no rate', async () => {
      clock.advance(25 * 3600 * 1000);
      try {
        const stale = await api.post('/v1/quotes', {
          spend: { asset: 'USD', amount: 10000 },
          deliver: { asset: 'BS' },
        });
        assertEnvelope(assert, stale, 503, 'rate_unavailable');
        assert.equal(stale.body.error.type, 'provider_error');
        assert.equal((await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 100000 } })).status, 201);
        const set = await admin.put('/v1/admin/rates/USD', { market: '930.50' });
        assert.equal(set.status, 200, set.raw);
        assert.equal(set.body.market, '930.50');
        const fresh = await api.post('/v1/quotes', {
          spend: { asset: 'USD', amount: 10000 },
          deliver: { asset: 'BS' },
        });
        assert.equal(fresh.status, 201);
        // 930.50 × 0.995 = 925.8475
        assert.deepEqual(fresh.body.rate, { value: '925.8475', market: '930.50', spread_bps: 50 });
      } finally {
        await admin.put('/v1/admin/rates/USD', { market: '925.00' });
        clock.advance(-25 * 3600 * 1000);
        await admin.put('/v1/admin/rates/USD', { market: '925.00' });
        await admin.put('/v1/admin/rates/USDC', { market: '925.00' });
      }
    });

    it('a missing rate gives 503 rate_unavailable', async () => {
      await t.db.query(`DELETE FROM fx_rates WHERE asset = 'VESC'`);
      const response = await api.post('/v1/quotes', {
        spend: { asset: 'VESC', amount: 10000 },
        deliver: { asset: 'BS' },
      });
      assertEnvelope(assert, response, 503, 'rate_unavailable');
      await admin.put('/v1/admin/rates/VESC', { market: '1.00' });
      assert.equal(
        (await api.post('/v1/quotes', { spend: { asset: 'VESC', amount: 10000 }, deliver: { asset: 'BS' } })).status,
        201,
      );
    });

    it('validates the admin rate body and asset', async () => {
      assertEnvelope(assert, await admin.put('/v1/admin/rates/USD', { market: 'abc' }), 400, 'validation_failed');
      assertEnvelope(assert, await admin.put('/v1/admin/rates/USD', { market: '0' }), 400, 'validation_failed');
      assertEnvelope(assert, await admin.put('/v1/admin/rates/USD', { market: 925 }), 400, 'validation_failed');
      assertEnvelope(assert, await admin.put('/v1/admin/rates/BS', { market: '1.00' }), 400, 'validation_failed');
      assertEnvelope(assert, await api.put('/v1/admin/rates/USD', { market: '1.00' }), 403, 'scope_missing');
      const list = await admin.get('/v1/admin/rates');
      assert.deepEqual(
        list.body.data.map((r: { asset: string }) => r.asset),
        ['USD', 'USDC', 'VESC'],
      );
    });
  });

  describe('GET /v1/quotes/{id}', () => {
    it('returns the same shape with the current status; expired after expires_at', async () => {
      const created = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 200000 } });
      const read = await api.get(`/v1/quotes/${created.body.id}`);
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, created.body);
      clock.advance(61_000);
      try {
        const expired = await api.get(`/v1/quotes/${created.body.id}`);
        assert.equal(expired.body.status, 'expired');
      } finally {
        clock.advance(-61_000);
      }
    });

    it('accepts quotes:write or payments:read, nothing else', async () => {
      const created = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 200000 } });
      const keys = client(t.app, t.platformKey);
      const issue = async (scopes: string[]) =>
        client(t.app, (await keys.post(`/v1/admin/tenants/${tenantId}/api-keys`, { mode: 'test', scopes })).body.key);
      assert.equal((await (await issue(['payments:read'])).get(`/v1/quotes/${created.body.id}`)).status, 200);
      assert.equal((await (await issue(['quotes:write'])).get(`/v1/quotes/${created.body.id}`)).status, 200);
      const denied = await (await issue(['beneficiaries:read'])).get(`/v1/quotes/${created.body.id}`);
      assertEnvelope(assert, denied, 403, 'scope_missing');
      assert.deepEqual(denied.body.error.meta.required, ['quotes:write', 'payments:read']);
      const cannotCreate = await (
        await issue(['payments:read'])
      ).post('/v1/quotes', { deliver: { asset: 'BS', amount: 100 } });
      assertEnvelope(assert, cannotCreate, 403, 'scope_missing');
    });

    it('another tenant or the other mode never sees it (404, not 403)', async () => {
      const created = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 200000 } });
      const other = await createTenant(t);
      assertEnvelope(assert, await other.api.get(`/v1/quotes/${created.body.id}`), 404, 'resource_not_found');
      const live = await keysFor(t, tenantId, 'live');
      assertEnvelope(assert, await live.get(`/v1/quotes/${created.body.id}`), 404, 'resource_not_found');
      assertEnvelope(assert, await api.get('/v1/quotes/not-a-uuid'), 400, 'validation_failed');
      assertEnvelope(
        assert,
        await api.get('/v1/quotes/3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f'),
        404,
        'resource_not_found',
      );
    });
  });
});

async function keysFor(t: TestApp, tenantId: string, mode: 'test' | 'live'): Promise<Client> {
  const issued = await client(t.app, t.platformKey).post(`/v1/admin/tenants/${tenantId}/api-keys`, { mode });
  return client(t.app, issued.body.key);
}
