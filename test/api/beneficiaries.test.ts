import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Bank, BankCatalogueProvider } from '../../src/rails/catalogue.ts';
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

const UNKNOWN_UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

const SHIPPED = JSON.parse(
  readFileSync(new URL('../../src/rails/data/ve-banks.json', import.meta.url), 'utf8'),
) as Record<'pago_movil' | 'transferencia', Bank[]>;
const PAGO_MOVIL_CODES = new Set(SHIPPED.pago_movil.map((b) => b.code));
const TRANSFERENCIA_CODES = new Set(SHIPPED.transferencia.map((b) => b.code));
/** A bank in the pago_movil list only (the shipped data has seven; 0146 is one). */
const PAGO_MOVIL_ONLY = [...PAGO_MOVIL_CODES].find((code) => !TRANSFERENCIA_CODES.has(code))!;

const BENEFICIARY_KEYS = [
  'id',
  'full_name',
  'national_id',
  'national_id_check',
  'bank_code',
  'account_number',
  'account_check',
  'phone',
  'asset',
  'country',
  'status',
  'payout_count',
  'last_success_at',
  'last_failure_reason',
  'created_at',
  'metadata',
];

// Each test registers its own identities, so no test sees another's idempotent match.
let nextId = 10_000_000;
const nationalId = () => `V${(nextId += 1)}`;
const account = (bankCode: string, length = 20) => (bankCode + '0123456789012345678901234').slice(0, length);

const valid = (overrides: Record<string, unknown> = {}) => ({
  fullName: 'María Pérez',
  nationalId: nationalId(),
  bankCode: '0102',
  phone: '04141234567',
  ...overrides,
});

function fieldsOf(response: InjectResult): string[] {
  return (response.body.error.meta.errors as { field: string }[]).map((e) => e.field).sort();
}

/** 400 validation_failed whose meta.errors names exactly these fields, each with a message. */
function assertInvalid(response: InjectResult, ...fields: string[]): void {
  assertEnvelope(assert, response, 400, 'validation_failed');
  assert.deepEqual(fieldsOf(response), [...fields].sort(), response.raw);
  for (const error of response.body.error.meta.errors) assert.ok(error.message.length > 0);
}

function messageFor(response: InjectResult, field: string): string {
  return response.body.error.meta.errors.find((e: { field: string }) => e.field === field).message;
}

describe('beneficiaries', () => {
  let t: TestApp;
  let api: Client;
  before(async () => {
    t = await startTestApp();
    api = (await createTenant(t)).api;
  });
  after(async () => {
    await t.close();
  });

  describe('registration', () => {
    it('201 with the exact beneficiary shape plus created, and GET returns the same without created', async () => {
      const body = valid({ accountNumber: account('0102') });
      const created = await api.post('/v1/beneficiaries', body);
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(Object.keys(created.body), [...BENEFICIARY_KEYS, 'created']);
      assert.match(created.body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const { id, created_at, ...rest } = created.body;
      assert.deepEqual(rest, {
        full_name: 'María Pérez',
        national_id: body.nationalId,
        national_id_check: 'not_checked',
        bank_code: '0102',
        account_number: account('0102'),
        // 0102 0123 would carry the check digits 3 and 1 (01020123310123456789), not 4 and 5.
        account_check: 'invalid_check_digits',
        phone: '04141234567',
        asset: 'BS',
        country: 'VE',
        status: 'active',
        payout_count: 0,
        last_success_at: null,
        last_failure_reason: null,
        metadata: {},
        created: true,
      });
      assert.equal(new Date(created_at).toISOString(), created_at);
      const read = await api.get(`/v1/beneficiaries/${id}`);
      assert.equal(read.status, 200);
      assert.deepEqual(Object.keys(read.body), BENEFICIARY_KEYS);
      const { created: _created, ...withoutCreated } = created.body;
      assert.deepEqual(read.body, withoutCreated);
    });

    it('account_check: valid or invalid_check_digits for 20 digits, not_checked for shorter or none; the same on GET and in the list', async () => {
      // Check digits worked out by hand in test/unit/account-check.test.ts.
      const cases: [Record<string, unknown>, string][] = [
        [{ bankCode: '0102', accountNumber: '01020123310123456789' }, 'valid'],
        [{ bankCode: '0134', accountNumber: '01340001630000000001' }, 'valid'],
        [{ bankCode: '0102', accountNumber: '01020123410123456789' }, 'invalid_check_digits'],
        [{ bankCode: '0134', accountNumber: '01340001630000000002' }, 'invalid_check_digits'],
        [{ bankCode: '0102', accountNumber: '0102012345678901' }, 'not_checked'],
        [{ bankCode: '0102', accountNumber: '0102012331012345678' }, 'not_checked'],
        [{ bankCode: '0102' }, 'not_checked'],
        [{ bankCode: '0102', accountNumber: null }, 'not_checked'],
      ];
      const tenant = await createTenant(t);
      const ids = new Map<string, string>();
      for (const [overrides, expected] of cases) {
        const created = await tenant.api.post('/v1/beneficiaries', valid(overrides));
        assert.equal(created.status, 201, created.raw);
        assert.equal(created.body.account_check, expected, JSON.stringify(overrides));
        assert.equal((await tenant.api.get(`/v1/beneficiaries/${created.body.id}`)).body.account_check, expected);
        ids.set(created.body.id, expected);
      }
      const listed = await tenant.api.get('/v1/beneficiaries?limit=100');
      assert.equal(listed.body.data.length, cases.length);
      for (const b of listed.body.data) assert.equal(b.account_check, ids.get(b.id), b.id);
    });

    it('national_id_check: the RIF check digit for J and G ids, not_checked for a cédula or a passport, on registration and GET', async () => {
      // Check digits worked out by hand in test/unit/account-check.test.ts.
      const cases: [string, string][] = [
        ['J123456784', 'valid'],
        ['G200099976', 'valid'],
        ['J123456785', 'invalid_check_digit'],
        ['G200099970', 'invalid_check_digit'],
        [nationalId(), 'not_checked'],
        ['P12345678', 'not_checked'],
      ];
      const tenant = await createTenant(t);
      for (const [id, expected] of cases) {
        const created = await tenant.api.post('/v1/beneficiaries', valid({ nationalId: id }));
        assert.equal(created.status, 201, created.raw);
        assert.equal(created.body.national_id_check, expected, id);
        assert.equal(
          (await tenant.api.get(`/v1/beneficiaries/${created.body.id}`)).body.national_id_check,
          expected,
          id,
        );
      }
    });

    it('account_check follows the stored number: registering the identity again with a corrected number makes it valid', async () => {
      const body = valid({ accountNumber: '01020123410123456789' });
      const first = await api.post('/v1/beneficiaries', body);
      assert.equal(first.body.account_check, 'invalid_check_digits');
      const corrected = await api.post('/v1/beneficiaries', { ...body, accountNumber: '01020123310123456789' });
      assert.equal(corrected.status, 200, corrected.raw);
      assert.equal(corrected.body.id, first.body.id);
      assert.equal(corrected.body.account_check, 'valid');
      assert.equal((await api.get(`/v1/beneficiaries/${first.body.id}`)).body.account_check, 'valid');
    });

    it('accountNumber and phone may be null or absent', async () => {
      const absent = await api.post('/v1/beneficiaries', {
        fullName: 'Ana',
        nationalId: nationalId(),
        bankCode: '0102',
      });
      assert.equal(absent.status, 201, absent.raw);
      assert.equal(absent.body.account_number, null);
      assert.equal(absent.body.phone, null);
      const nulls = await api.post('/v1/beneficiaries', valid({ accountNumber: null, phone: null }));
      assert.equal(nulls.status, 201, nulls.raw);
      assert.equal(nulls.body.account_number, null);
      assert.equal(nulls.body.phone, null);
    });

    it('is idempotent: the same data again is 200 with created false and the same id', async () => {
      const body = valid();
      const first = await api.post('/v1/beneficiaries', body);
      assert.equal(first.status, 201);
      assert.equal(first.body.created, true);
      const second = await api.post('/v1/beneficiaries', body);
      assert.equal(second.status, 200, second.raw);
      assert.equal(second.body.created, false);
      assert.deepEqual({ ...second.body, created: true }, first.body);
    });

    it('matches on (nationalId, bankCode, instrument): same id and history, the latest name and phone', async () => {
      const body = valid();
      const first = await api.post('/v1/beneficiaries', body);
      const again = await api.post('/v1/beneficiaries', {
        ...body,
        nationalId: ` ${body.nationalId} `,
        fullName: 'Otro Nombre',
        phone: '04241112233',
        country: 'CO',
      });
      assert.equal(again.status, 200, again.raw);
      assert.equal(again.body.created, false);
      assert.equal(again.body.id, first.body.id);
      assert.equal(again.body.full_name, 'Otro Nombre');
      assert.equal(again.body.phone, '04241112233');
      assert.equal(again.body.country, 'VE', 'only the name, phone and account number follow the latest registration');
      assert.equal((await api.get(`/v1/beneficiaries/${first.body.id}`)).body.phone, '04241112233');
    });

    it('the instrument is part of the identity: an account number makes a separate transferencia beneficiary', async () => {
      const id = nationalId();
      const pagoMovil = await api.post('/v1/beneficiaries', valid({ nationalId: id, bankCode: '0102' }));
      const transferencia = await api.post(
        '/v1/beneficiaries',
        valid({ nationalId: id, bankCode: '0102', accountNumber: account('0102') }),
      );
      assert.equal(pagoMovil.status, 201);
      assert.equal(transferencia.status, 201, transferencia.raw);
      assert.notEqual(pagoMovil.body.id, transferencia.body.id);
      const otherBank = await api.post('/v1/beneficiaries', valid({ nationalId: id, bankCode: '0105' }));
      assert.equal(otherBank.status, 201);
      const sameAgain = await api.post(
        '/v1/beneficiaries',
        valid({ nationalId: id, bankCode: '0102', accountNumber: account('0102', 16) }),
      );
      assert.equal(sameAgain.status, 200, 'another account number at the same bank is the same transferencia identity');
      assert.equal(sameAgain.body.id, transferencia.body.id);
      assert.equal(sameAgain.body.account_number, account('0102', 16), 'the latest account number is the one paid');
    });

    it('10 concurrent identical registrations create exactly one beneficiary', async () => {
      const tenant = await createTenant(t);
      const body = valid({ accountNumber: account('0102') });
      const responses = await Promise.all(Array.from({ length: 10 }, () => tenant.api.post('/v1/beneficiaries', body)));
      const statuses = responses.map((r) => r.status).sort();
      assert.deepEqual(
        statuses,
        [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
        responses.map((r) => r.raw).join('\n'),
      );
      assert.equal(responses.filter((r) => r.body.created === true).length, 1);
      assert.equal(responses.filter((r) => r.body.created === false).length, 9);
      assert.equal(new Set(responses.map((r) => r.body.id)).size, 1);
      const list = await tenant.api.get('/v1/beneficiaries');
      assert.equal(list.body.data.length, 1);
    });
  });

  describe('field rules', () => {
    describe('fullName', () => {
      it('accepts 1 to 100 characters, trimmed, accents counted as one character', async () => {
        const trimmed = await api.post('/v1/beneficiaries', valid({ fullName: '  Ana  ' }));
        assert.equal(trimmed.status, 201);
        assert.equal(trimmed.body.full_name, 'Ana');
        const longest = 'ñ'.repeat(100);
        const hundred = await api.post('/v1/beneficiaries', valid({ fullName: longest }));
        assert.equal(hundred.status, 201, hundred.raw);
        assert.equal(hundred.body.full_name, longest);
        assert.equal((await api.post('/v1/beneficiaries', valid({ fullName: 'X' }))).status, 201);
      });

      it('rejects missing, empty, blank, over 100 characters and non-strings', async () => {
        const { fullName: _omit, ...missing } = valid();
        assertInvalid(await api.post('/v1/beneficiaries', missing), 'fullName');
        assertInvalid(await api.post('/v1/beneficiaries', valid({ fullName: '' })), 'fullName');
        assertInvalid(await api.post('/v1/beneficiaries', valid({ fullName: '   ' })), 'fullName');
        const long = await api.post('/v1/beneficiaries', valid({ fullName: 'a'.repeat(101) }));
        assertInvalid(long, 'fullName');
        assert.match(messageFor(long, 'fullName'), /100 characters/);
        assertInvalid(await api.post('/v1/beneficiaries', valid({ fullName: 42 })), 'fullName');
        assertInvalid(await api.post('/v1/beneficiaries', valid({ fullName: null })), 'fullName');
      });
    });

    describe('nationalId', () => {
      it('accepts V, E, J, G or P followed by 6 to 9 digits (surrounding spaces trimmed)', async () => {
        for (const id of ['V123456', 'E123456789', 'J30123456', 'G20000001', 'P1234567']) {
          const response = await api.post('/v1/beneficiaries', valid({ nationalId: id }));
          assert.equal(response.status, 201, `${id}: ${response.raw}`);
          assert.equal(response.body.national_id, id);
        }
        const padded = await api.post('/v1/beneficiaries', valid({ nationalId: ' V7654321 ' }));
        assert.equal(padded.status, 201, padded.raw);
        assert.equal(padded.body.national_id, 'V7654321');
      });

      it('rejects a lower-case letter, other letters, too few or too many digits, separators and missing', async () => {
        for (const id of [
          'v7654321',
          'e12345678',
          'V12345',
          'V1234567890',
          'X12345678',
          '12345678',
          'V-12345678',
          'V 12345678',
          'VV1234567',
          '',
        ]) {
          const response = await api.post('/v1/beneficiaries', valid({ nationalId: id }));
          assertInvalid(response, 'nationalId');
          assert.equal(
            messageFor(response, 'nationalId'),
            'nationalId must be V, E, J, G or P followed by 6 to 9 digits, e.g. V12345678',
          );
        }
        const { nationalId: _omit, ...missing } = valid();
        assertInvalid(await api.post('/v1/beneficiaries', missing), 'nationalId');
        assertInvalid(await api.post('/v1/beneficiaries', valid({ nationalId: 12345678 })), 'nationalId');
      });
    });

    describe('bankCode', () => {
      it('rejects anything but 4 digits', async () => {
        for (const code of ['102', '01020', 'abcd', '01 2', '']) {
          const response = await api.post('/v1/beneficiaries', valid({ bankCode: code }));
          assertInvalid(response, 'bankCode');
          assert.match(messageFor(response, 'bankCode'), /4 digits/);
        }
        assertInvalid(await api.post('/v1/beneficiaries', valid({ bankCode: 102 })), 'bankCode');
        const { bankCode: _omit, ...missing } = valid();
        assertInvalid(await api.post('/v1/beneficiaries', missing), 'bankCode');
      });

      it('rejects a well-formed code outside the catalogue, pointing at GET /v1/payouts/banks', async () => {
        const pagoMovil = await api.post('/v1/beneficiaries', valid({ bankCode: '9999' }));
        assertInvalid(pagoMovil, 'bankCode');
        assert.match(messageFor(pagoMovil, 'bankCode'), /GET \/v1\/payouts\/banks\?method=pago_movil/);
        const transferencia = await api.post(
          '/v1/beneficiaries',
          valid({ bankCode: '9999', accountNumber: account('9999') }),
        );
        assertInvalid(transferencia, 'bankCode');
        assert.match(messageFor(transferencia, 'bankCode'), /GET \/v1\/payouts\/banks\?method=transferencia/);
      });

      it('is checked against the catalogue of the derived instrument', async () => {
        assert.ok(PAGO_MOVIL_ONLY, 'the shipped data has a bank that only accepts pago_movil');
        const pagoMovil = await api.post('/v1/beneficiaries', valid({ bankCode: PAGO_MOVIL_ONLY }));
        assert.equal(pagoMovil.status, 201, `${PAGO_MOVIL_ONLY} is in the pago_movil list: ${pagoMovil.raw}`);
        const transferencia = await api.post(
          '/v1/beneficiaries',
          valid({ bankCode: PAGO_MOVIL_ONLY, accountNumber: account(PAGO_MOVIL_ONLY) }),
        );
        assertInvalid(transferencia, 'bankCode');
        assert.match(messageFor(transferencia, 'bankCode'), /transferencia/);
        // 0102 is in both lists.
        assert.equal((await api.post('/v1/beneficiaries', valid({ bankCode: '0102' }))).status, 201);
        assert.equal(
          (await api.post('/v1/beneficiaries', valid({ bankCode: '0102', accountNumber: account('0102') }))).status,
          201,
        );
      });
    });

    describe('accountNumber', () => {
      it('accepts 16 to 20 digits starting with bankCode', async () => {
        for (const length of [16, 18, 20]) {
          const response = await api.post('/v1/beneficiaries', valid({ accountNumber: account('0102', length) }));
          assert.equal(response.status, 201, response.raw);
          assert.equal(response.body.account_number, account('0102', length));
        }
      });

      it('rejects wrong lengths, non-digits, empty and another bank prefix', async () => {
        for (const value of [
          account('0102', 15),
          account('0102', 21),
          '0102-0123-45-0123456789',
          '0102012345012345678X',
          '',
          '   ',
        ]) {
          const response = await api.post('/v1/beneficiaries', valid({ accountNumber: value }));
          assertInvalid(response, 'accountNumber');
          assert.match(messageFor(response, 'accountNumber'), /16 to 20 digits/);
        }
        const otherBank = await api.post(
          '/v1/beneficiaries',
          valid({ bankCode: '0102', accountNumber: account('0105') }),
        );
        assertInvalid(otherBank, 'accountNumber');
        assert.match(messageFor(otherBank, 'accountNumber'), /start with the bankCode \(0102\)/);
        assertInvalid(await api.post('/v1/beneficiaries', valid({ accountNumber: 1020123450123456 })), 'accountNumber');
      });
    });

    describe('phone', () => {
      it('accepts 04 followed by 9 digits', async () => {
        for (const phone of ['04141234567', '04241234567', '04161234567']) {
          const response = await api.post('/v1/beneficiaries', valid({ phone }));
          assert.equal(response.status, 201, response.raw);
          assert.equal(response.body.phone, phone);
        }
      });

      it('rejects other lengths, international form, landlines and separators', async () => {
        for (const phone of [
          '0414123456',
          '041412345678',
          '+584141234567',
          '4141234567',
          '02121234567',
          '0414-1234567',
          '',
        ]) {
          const response = await api.post('/v1/beneficiaries', valid({ phone }));
          assertInvalid(response, 'phone');
          assert.match(messageFor(response, 'phone'), /04 followed by 9 digits/);
        }
        assertInvalid(await api.post('/v1/beneficiaries', valid({ phone: 4141234567 })), 'phone');
      });
    });

    describe('asset and country', () => {
      it('default to BS and VE; accept every asset and a 2-letter country', async () => {
        for (const asset of ['BS', 'USD', 'USDC', 'VESC']) {
          const response = await api.post('/v1/beneficiaries', valid({ asset }));
          assert.equal(response.status, 201);
          assert.equal(response.body.asset, asset);
        }
        const colombia = await api.post('/v1/beneficiaries', valid({ country: 'CO' }));
        assert.equal(colombia.status, 201);
        assert.equal(colombia.body.country, 'CO');
      });

      it('rejects an unknown asset and a country that is not 2 uppercase letters', async () => {
        assertInvalid(await api.post('/v1/beneficiaries', valid({ asset: 'EUR' })), 'asset');
        assertInvalid(await api.post('/v1/beneficiaries', valid({ asset: 'bs' })), 'asset');
        for (const country of ['ve', 'VEN', 'V1', '']) {
          const response = await api.post('/v1/beneficiaries', valid({ country }));
          assertInvalid(response, 'country');
          assert.match(messageFor(response, 'country'), /2 uppercase letters/);
        }
      });
    });

    it('reports every violation together and stores nothing', async () => {
      const tenant = await createTenant(t);
      const response = await tenant.api.post('/v1/beneficiaries', {
        fullName: ' ',
        nationalId: 'X1',
        bankCode: '0102',
        accountNumber: account('0105'),
        phone: '123',
        country: 'venezuela',
      });
      assertInvalid(response, 'accountNumber', 'country', 'fullName', 'nationalId', 'phone');
      const catalogue = await tenant.api.post('/v1/beneficiaries', valid({ bankCode: '9999', phone: '1' }));
      assertInvalid(catalogue, 'bankCode', 'phone');
      assert.equal((await tenant.api.get('/v1/beneficiaries')).body.data.length, 0);
    });

    it('schema type errors are validation_failed too, and a non-object body is rejected', async () => {
      assertInvalid(await api.post('/v1/beneficiaries', valid({ accountNumber: ['0102'] })), 'accountNumber');
      assertEnvelope(assert, await api.post('/v1/beneficiaries', [valid()]), 400, 'validation_failed');
      const none = await t.app.inject({
        method: 'POST',
        url: '/v1/beneficiaries',
        headers: { 'x-api-key': (await createTenant(t)).key },
      });
      assert.equal(none.statusCode, 400);
      assert.equal(none.json().error.code, 'validation_failed');
    });
  });

  describe('reading', () => {
    it('404 resource_not_found for an unknown id; 400 naming id for a malformed one', async () => {
      assertEnvelope(assert, await api.get(`/v1/beneficiaries/${UNKNOWN_UUID}`), 404, 'resource_not_found');
      const malformed = await api.get('/v1/beneficiaries/not-a-uuid');
      assertInvalid(malformed, 'id');
    });

    it("another tenant's beneficiary is 404 and absent from its list", async () => {
      const owner = await createTenant(t);
      const other = await createTenant(t);
      const created = await owner.api.post('/v1/beneficiaries', valid());
      assertEnvelope(assert, await other.api.get(`/v1/beneficiaries/${created.body.id}`), 404, 'resource_not_found');
      assert.deepEqual((await other.api.get('/v1/beneficiaries')).body, {
        data: [],
        has_more: false,
        next_cursor: null,
      });
      // The same identity in another tenant is a beneficiary of its own.
      const theirs = await other.api.post('/v1/beneficiaries', valid({ nationalId: created.body.national_id }));
      assert.equal(theirs.status, 201);
      assert.notEqual(theirs.body.id, created.body.id);
    });

    it('a live key of the same tenant does not see test beneficiaries', async () => {
      const tenant = await createTenant(t);
      const admin = client(t.app, t.platformKey);
      const issued = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'live' });
      assert.equal(issued.status, 201);
      const live = client(t.app, issued.body.key);
      const body = valid();
      const test = await tenant.api.post('/v1/beneficiaries', body);
      assert.equal(test.status, 201);
      assertEnvelope(assert, await live.get(`/v1/beneficiaries/${test.body.id}`), 404, 'resource_not_found');
      assert.deepEqual((await live.get('/v1/beneficiaries')).body, { data: [], has_more: false, next_cursor: null });
      const liveCreated = await live.post('/v1/beneficiaries', body);
      assert.equal(liveCreated.status, 201, 'the same identity in live mode is new');
      assert.notEqual(liveCreated.body.id, test.body.id);
      assertEnvelope(
        assert,
        await tenant.api.get(`/v1/beneficiaries/${liveCreated.body.id}`),
        404,
        'resource_not_found',
      );
      const testList = await tenant.api.get('/v1/beneficiaries');
      assert.deepEqual(
        testList.body.data.map((b: { id: string }) => b.id),
        [test.body.id],
      );
    });
  });

  describe('listing', () => {
    const walk = (api: Client, limit: number, between?: () => Promise<void>) =>
      walkPages(api, '/v1/beneficiaries', limit, BENEFICIARY_KEYS, between);

    it('pages newest first with limit, default 25, has_more and next_cursor', async () => {
      const tenant = await createTenant(t);
      const created: string[] = [];
      for (let i = 0; i < 27; i += 1) created.push((await tenant.api.post('/v1/beneficiaries', valid())).body.id);
      const first = await tenant.api.get('/v1/beneficiaries');
      assert.equal(first.body.data.length, 25);
      assert.equal(first.body.has_more, true);
      assert.equal(typeof first.body.next_cursor, 'string');
      const rest = await tenant.api.get(`/v1/beneficiaries?cursor=${first.body.next_cursor}`);
      assert.equal(rest.body.data.length, 2);
      assert.equal(rest.body.has_more, false);
      assert.equal(rest.body.next_cursor, null);
      const all = [...first.body.data, ...rest.body.data];
      assert.deepEqual(new Set(all.map((b) => b.id)), new Set(created));
      const order = all.map((b) => b.created_at);
      assert.deepEqual(order, [...order].sort().reverse(), 'created_at descending');
      const { ids } = await walk(tenant.api, 4);
      assert.deepEqual(
        ids,
        all.map((b) => b.id),
      );
      assert.equal((await tenant.api.get('/v1/beneficiaries?limit=1')).body.data.length, 1);
      assert.equal((await tenant.api.get('/v1/beneficiaries?limit=100')).body.data.length, 27);
    });

    it('no gaps or duplicates while beneficiaries are added between page reads', async () => {
      const tenant = await createTenant(t);
      const before: string[] = [];
      for (let i = 0; i < 23; i += 1) before.push((await tenant.api.post('/v1/beneficiaries', valid())).body.id);
      const added: string[] = [];
      const { ids } = await walk(tenant.api, 5, async () => {
        const inserted = await Promise.all([
          tenant.api.post('/v1/beneficiaries', valid()),
          tenant.api.post('/v1/beneficiaries', valid()),
        ]);
        added.push(...inserted.map((r) => r.body.id));
      });
      assert.equal(new Set(ids).size, ids.length, 'no duplicates');
      for (const id of before)
        assert.ok(ids.includes(id), 'no gaps: every beneficiary that existed before the walk is listed');
      // Rows added during the walk are newer than the position already read, so they may only
      // appear if they tie with it; a walk never revisits or skips over what it has passed.
      for (const id of ids) assert.ok(before.includes(id) || added.includes(id));
      const fresh = await walk(tenant.api, 7);
      assert.equal(fresh.ids.length, before.length + added.length);
      assert.equal(new Set(fresh.ids).size, fresh.ids.length);
    });

    it('keeps microsecond order and breaks ties by id (no row skipped or repeated within one millisecond)', async () => {
      const tenant = await createTenant(t);
      const ids: string[] = [];
      for (let i = 0; i < 7; i += 1) ids.push((await tenant.api.post('/v1/beneficiaries', valid())).body.id);
      // Same millisecond, different microseconds, and exact ties: what a millisecond cursor gets wrong.
      const times = [
        '2026-01-01T00:00:00.000001Z',
        '2026-01-01T00:00:00.000001Z',
        '2026-01-01T00:00:00.000001Z',
        '2026-01-01T00:00:00.000002Z',
        '2026-01-01T00:00:00.000999Z',
        '2026-01-01T00:00:00.000999Z',
        '2026-01-01T00:00:00.001000Z',
      ];
      for (const [i, id] of ids.entries()) {
        await t.db.query('UPDATE beneficiaries SET created_at = $2::timestamptz WHERE tenant_id = $3 AND id = $1', [
          id,
          times[i],
          tenant.tenantId,
        ]);
      }
      const expected = ids
        .map((id, i) => ({ id, time: times[i]! }))
        .sort((a, b) => (a.time === b.time ? (a.id < b.id ? 1 : -1) : a.time < b.time ? 1 : -1))
        .map((row) => row.id);
      for (const limit of [1, 2, 3]) assert.deepEqual((await walk(tenant.api, limit)).ids, expected, `limit ${limit}`);
    });

    it('limit must be an integer from 1 to 100', async () => {
      for (const limit of ['0', '101', '-1', 'abc', '1.5']) {
        assertInvalid(await api.get(`/v1/beneficiaries?limit=${limit}`), 'limit');
      }
    });

    it('a malformed or tampered cursor is 400 validation_failed naming cursor', async () => {
      const tenant = await createTenant(t);
      for (let i = 0; i < 3; i += 1) await tenant.api.post('/v1/beneficiaries', valid());
      const good = (await tenant.api.get('/v1/beneficiaries?limit=1')).body.next_cursor as string;
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
      for (const cursor of tampered) {
        assertInvalid(await tenant.api.get(`/v1/beneficiaries?cursor=${encodeURIComponent(cursor)}`), 'cursor');
      }
      assert.equal((await tenant.api.get(`/v1/beneficiaries?cursor=${good}`)).status, 200);
    });
  });

  describe('scopes and authentication', () => {
    it('POST needs beneficiaries:write; GETs need beneficiaries:read', async () => {
      const readOnly = await createTenant(t, { scopes: ['beneficiaries:read'] });
      const writeOnly = await createTenant(t, { scopes: ['beneficiaries:write', 'payments:read'] });
      const post = await readOnly.api.post('/v1/beneficiaries', valid());
      assertEnvelope(assert, post, 403, 'scope_missing');
      assert.deepEqual(post.body.error.meta, { required: ['beneficiaries:write'] });
      assert.equal((await readOnly.api.get('/v1/beneficiaries')).status, 200);

      const created = await writeOnly.api.post('/v1/beneficiaries', valid());
      assert.equal(created.status, 201);
      for (const response of [
        await writeOnly.api.get('/v1/beneficiaries'),
        await writeOnly.api.get(`/v1/beneficiaries/${created.body.id}`),
      ]) {
        assertEnvelope(assert, response, 403, 'scope_missing');
        assert.deepEqual(response.body.error.meta, { required: ['beneficiaries:read'] });
      }
    });

    it('the scope is checked before the body: an invalid body without the scope is 403', async () => {
      const readOnly = await createTenant(t, { scopes: ['beneficiaries:read'] });
      assertEnvelope(
        assert,
        await readOnly.api.post('/v1/beneficiaries', { nationalId: 'nope' }),
        403,
        'scope_missing',
      );
    });

    it('401 without a key', async () => {
      assertEnvelope(assert, await client(t.app).post('/v1/beneficiaries', valid()), 401, 'api_key_missing');
      assertEnvelope(assert, await client(t.app).get('/v1/beneficiaries'), 401, 'api_key_missing');
      assertEnvelope(assert, await client(t.app).get(`/v1/beneficiaries/${UNKNOWN_UUID}`), 401, 'api_key_missing');
    });
  });
});

describe('beneficiaries against a rail catalogue that differs from the shipped copy', () => {
  // A rail where 0105 takes transfers but not Pago Móvil: the shipped data has no
  // transferencia-only bank, so this is the only way to test that direction.
  const provider: BankCatalogueProvider = {
    async fetchBanks(method) {
      return method === 'pago_movil' ? SHIPPED.pago_movil.filter((b) => b.code !== '0105') : SHIPPED.transferencia;
    },
  };
  let t: TestApp;
  let api: Client;
  before(async () => {
    t = await startTestApp({ deps: { catalogueProvider: provider } });
    api = (await createTenant(t)).api;
  });
  after(async () => {
    await t.close();
  });

  it("checks bankCode against the rail's list of the derived instrument", async () => {
    assert.ok(TRANSFERENCIA_CODES.has('0105'));
    const transferencia = await api.post(
      '/v1/beneficiaries',
      valid({ bankCode: '0105', accountNumber: account('0105') }),
    );
    assert.equal(transferencia.status, 201, transferencia.raw);
    const pagoMovil = await api.post('/v1/beneficiaries', valid({ bankCode: '0105' }));
    assertInvalid(pagoMovil, 'bankCode');
    assert.match(messageFor(pagoMovil, 'bankCode'), /method=pago_movil/);
  });
});
