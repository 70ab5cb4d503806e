import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { BankCatalogue, LocalBankCatalogue, type Bank, type BankCatalogueProvider } from '../../src/rails/catalogue.ts';
import { assertEnvelope, client, createTenant, startTestApp, type Client, type TestApp } from '../support/harness.ts';

const SHIPPED = JSON.parse(
  readFileSync(new URL('../../src/rails/data/ve-banks.json', import.meta.url), 'utf8'),
) as Record<'pago_movil' | 'transferencia', Bank[]>;
const entries = (banks: Bank[]) => banks.map(({ code, name, shortName }) => ({ code, name, shortName }));

const RAIL_BANKS: Bank[] = [{ code: '0102', name: 'Banco de Venezuela (rail)', shortName: 'BDV' }];

/** A provider that counts its calls and answers, fails or hangs as the test says. */
function scriptedProvider(behaviour: () => 'answer' | 'throw' | 'hang' | 'empty' | 'garbage') {
  const calls = { count: 0 };
  const provider: BankCatalogueProvider = {
    fetchBanks() {
      calls.count += 1;
      switch (behaviour()) {
        case 'answer':
          return Promise.resolve(RAIL_BANKS.map((b) => ({ ...b })));
        case 'throw':
          return Promise.reject(new Error('connect ECONNREFUSED https://user:s3cret@rail.example/banks'));
        case 'hang':
          return new Promise<Bank[]>(() => undefined);
        case 'empty':
          return Promise.resolve([]);
        case 'garbage':
          return Promise.resolve([{ code: 12, name: null }] as unknown as Bank[]);
      }
    },
  };
  return { provider, calls };
}

describe('GET /v1/payouts/banks', () => {
  let t: TestApp;
  let api: Client;
  before(async () => {
    t = await startTestApp();
    api = (await createTenant(t, { scopes: ['payments:read'] })).api;
  });
  after(async () => {
    await t.close();
  });

  it('pago_movil: the 31 banks of the sandbox catalogue, in its order and shape', async () => {
    const response = await api.get('/v1/payouts/banks?method=pago_movil');
    assert.equal(response.status, 200, response.raw);
    assert.deepEqual(Object.keys(response.body), ['method', 'data']);
    assert.equal(response.body.method, 'pago_movil');
    assert.equal(response.body.data.length, 31);
    assert.deepEqual(response.body.data, entries(SHIPPED.pago_movil));
    for (const bank of response.body.data) {
      assert.deepEqual(Object.keys(bank), ['code', 'name', 'shortName']);
      assert.match(bank.code, /^[0-9]{4}$/);
      assert.ok(bank.shortName.length > 0);
    }
  });

  it('transferencia: 24 banks; some banks take only one instrument and a code may change name', async () => {
    const transferencia = await api.get('/v1/payouts/banks?method=transferencia');
    assert.equal(transferencia.status, 200);
    assert.equal(transferencia.body.method, 'transferencia');
    assert.equal(transferencia.body.data.length, 24);
    assert.deepEqual(transferencia.body.data, entries(SHIPPED.transferencia));
    const pagoMovil = (await api.get('/v1/payouts/banks?method=pago_movil')).body.data as Bank[];
    const transferCodes = new Set((transferencia.body.data as Bank[]).map((b) => b.code));
    assert.ok(
      pagoMovil.some((b) => !transferCodes.has(b.code)),
      'a bank only in pago_movil',
    );
    assert.ok(transferCodes.has('0102') && pagoMovil.some((b) => b.code === '0102'), '0102 is in both');
    const named = (list: Bank[], code: string) => list.find((b) => b.code === code)?.shortName;
    assert.notEqual(named(pagoMovil, '0169'), named(transferencia.body.data, '0169'));
  });

  it('a missing or invalid method is 400 validation_failed naming method', async () => {
    for (const url of [
      '/v1/payouts/banks',
      '/v1/payouts/banks?method=',
      '/v1/payouts/banks?method=swift',
      '/v1/payouts/banks?method=PAGO_MOVIL',
    ]) {
      const response = await api.get(url);
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.deepEqual(
        response.body.error.meta.errors.map((e: { field: string }) => e.field),
        ['method'],
        url,
      );
    }
  });

  it('needs payments:read', async () => {
    const writer = await createTenant(t, { scopes: ['beneficiaries:read', 'beneficiaries:write', 'payments:write'] });
    const response = await writer.api.get('/v1/payouts/banks?method=pago_movil');
    assertEnvelope(assert, response, 403, 'scope_missing');
    assert.deepEqual(response.body.error.meta, { required: ['payments:read'] });
    assertEnvelope(assert, await client(t.app).get('/v1/payouts/banks?method=pago_movil'), 401, 'api_key_missing');
  });
});

describe('bank catalogue: the rail, the cache and the local fallback', () => {
  const apps: TestApp[] = [];
  async function appWith(provider: BankCatalogueProvider, clock?: ManualClock): Promise<Client> {
    const t = await startTestApp({ deps: { catalogueProvider: provider }, clock });
    apps.push(t);
    return (await createTenant(t)).api;
  }
  after(async () => {
    for (const t of apps) await t.close();
  });

  it("serves the rail's catalogue when it answers", async () => {
    const { provider } = scriptedProvider(() => 'answer');
    const api = await appWith(provider);
    const response = await api.get('/v1/payouts/banks?method=transferencia');
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { method: 'transferencia', data: RAIL_BANKS });
  });

  it('a provider that throws: 200 with the local list', async () => {
    const { provider } = scriptedProvider(() => 'throw');
    const api = await appWith(provider);
    for (const method of ['pago_movil', 'transferencia'] as const) {
      const response = await api.get(`/v1/payouts/banks?method=${method}`);
      assert.equal(response.status, 200, response.raw);
      assert.deepEqual(response.body.data, entries(SHIPPED[method]));
    }
    // Registration does not fail either: it validates against the same fallback.
    const registered = await api.post('/v1/beneficiaries', {
      fullName: 'Ana',
      nationalId: 'V12345678',
      bankCode: '0146',
      phone: '04141234567',
    });
    assert.equal(registered.status, 201, registered.raw);
  });

  it('a provider that hangs: 200 with the local list after a bounded wait', async () => {
    const { provider } = scriptedProvider(() => 'hang');
    const api = await appWith(provider);
    const started = Date.now();
    const response = await api.get('/v1/payouts/banks?method=pago_movil');
    assert.equal(response.status, 200, response.raw);
    assert.equal(response.body.data.length, 31);
    assert.ok(Date.now() - started < 5000, 'answered within the catalogue timeout');
  });

  it('an empty or malformed answer: 200 with the local list', async () => {
    for (const behaviour of ['empty', 'garbage'] as const) {
      const { provider } = scriptedProvider(() => behaviour);
      const api = await appWith(provider);
      const response = await api.get('/v1/payouts/banks?method=transferencia');
      assert.equal(response.status, 200, response.raw);
      assert.deepEqual(response.body.data, entries(SHIPPED.transferencia), behaviour);
    }
  });

  it('caches the rail answer for 10 minutes per method', async () => {
    const clock = new ManualClock('2026-03-02T12:00:00Z');
    const { provider, calls } = scriptedProvider(() => 'answer');
    const api = await appWith(provider, clock);
    await Promise.all([api.get('/v1/payouts/banks?method=pago_movil'), api.get('/v1/payouts/banks?method=pago_movil')]);
    assert.equal(calls.count, 1, 'concurrent misses share one call');
    clock.advance(9 * 60 * 1000);
    await api.get('/v1/payouts/banks?method=pago_movil');
    assert.equal(calls.count, 1);
    await api.get('/v1/payouts/banks?method=transferencia');
    assert.equal(calls.count, 2, 'each method has its own entry');
    clock.advance(60 * 1000 + 1);
    await api.get('/v1/payouts/banks?method=pago_movil');
    assert.equal(calls.count, 3, 'asked again after the TTL');
  });

  it('after a failure serves the local copy briefly, then asks the rail again', async () => {
    const clock = new ManualClock('2026-03-02T12:00:00Z');
    let behaviour: 'throw' | 'answer' = 'throw';
    const { provider, calls } = scriptedProvider(() => behaviour);
    const api = await appWith(provider, clock);
    assert.equal((await api.get('/v1/payouts/banks?method=pago_movil')).body.data.length, 31);
    assert.equal((await api.get('/v1/payouts/banks?method=pago_movil')).body.data.length, 31);
    assert.equal(calls.count, 1, 'a failing rail is not asked on every request');
    behaviour = 'answer';
    clock.advance(30 * 1000 + 1);
    assert.deepEqual((await api.get('/v1/payouts/banks?method=pago_movil')).body.data, RAIL_BANKS);
    assert.equal(calls.count, 2);
  });
});

describe('BankCatalogue service', () => {
  it('list and has never throw for a provider failure, and log only the kind of failure', async () => {
    const warnings: { details: object; message: string }[] = [];
    const { provider } = scriptedProvider(() => 'throw');
    const catalogue = new BankCatalogue(provider, {
      log: { warn: (details, message) => warnings.push({ details, message }) },
    });
    assert.equal((await catalogue.list('pago_movil')).length, 31);
    assert.equal(await catalogue.has('pago_movil', '0146'), true);
    assert.equal(await catalogue.has('transferencia', '0146'), false);
    assert.deepEqual(
      warnings.map((w) => w.details),
      [
        { method: 'pago_movil', cause: 'Error' },
        { method: 'transferencia', cause: 'Error' },
      ],
      'one warning per method; the fallback is cached',
    );
    assert.equal(warnings[0]!.message, 'bank catalogue unavailable; serving the local copy');
    assert.doesNotMatch(JSON.stringify(warnings), /s3cret|rail\.example/);
  });

  it('times out after timeoutMs and reports the timeout', async () => {
    const warnings: object[] = [];
    const { provider } = scriptedProvider(() => 'hang');
    const catalogue = new BankCatalogue(provider, {
      timeoutMs: 50,
      log: { warn: (details) => warnings.push(details) },
    });
    const started = Date.now();
    assert.equal((await catalogue.list('transferencia')).length, 24);
    assert.ok(Date.now() - started < 5000, "answered within the catalogue timeout (and a loaded machine's margin)");
    assert.deepEqual(warnings, [{ method: 'transferencia', cause: 'timeout' }]);
  });

  it('a provider that throws synchronously is a failure like any other', async () => {
    const catalogue = new BankCatalogue({
      fetchBanks() {
        throw new TypeError('boom');
      },
    });
    assert.equal((await catalogue.list('pago_movil')).length, 31);
  });

  it('callers cannot change the cached list', async () => {
    const catalogue = new BankCatalogue(new LocalBankCatalogue());
    const first = await catalogue.list('pago_movil');
    first[0]!.name = 'changed';
    first.pop();
    const second = await catalogue.list('pago_movil');
    assert.equal(second.length, 31);
    assert.notEqual(second[0]!.name, 'changed');
  });
});
