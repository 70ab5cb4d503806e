// Input the schemas alone would let through: prefixed uuids, text PostgreSQL cannot store, unknown
// fields and query parameters, non-decimal query integers, sums past the ledger's range. Each is a
// 400 in the envelope naming the field, never a 500 and never a silent change of meaning.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lockAndPostEntry } from '../../src/db/commit/ledger-entry.ts';
import { fundingEntry } from '../../src/domain/ledger.ts';
import {
  closeObjectSchemas,
  findUnstorableText,
  nonDecimalIntegers,
  unstorableText,
} from '../../src/http/input-hygiene.ts';
import { assertEnvelope, client, type Client, startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, idempotencyKey, quote, SENDER } from '../support/payouts.ts';

const UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

function fields(response: { body: any }): string[] {
  return (response.body?.error?.meta?.errors ?? []).map((e: { field: string }) => e.field);
}

describe('input hygiene: classifiers', () => {
  it('finds NUL and unpaired surrogates in values and keys, at any depth, and nothing in valid text', () => {
    assert.equal(unstorableText('María Pérez 😀'), undefined);
    assert.match(unstorableText('a\u0000b')!, /NUL/);
    assert.match(unstorableText('a\ud800b')!, /surrogate/);
    assert.match(unstorableText('a\udc00')!, /surrogate/);
    assert.equal(findUnstorableText({ a: [{ b: 'ok' }, { c: 'x\u0000' }] }, '')?.field, 'a.1.c');
    assert.equal(findUnstorableText({ ['k\u0000']: 1 }, 'body')?.field, 'body.k\u0000');
    assert.equal(findUnstorableText({ a: 1, b: [true, null, 'fine'] }, ''), undefined);
    let deep: unknown = 'x';
    for (let i = 0; i < 40; i += 1) deep = [deep];
    assert.match(findUnstorableText(deep, 'body')!.message, /nested too deeply/);
  });

  it('query integers must be decimal digits', () => {
    const schema = { type: 'object', properties: { limit: { type: 'integer' }, cursor: { type: 'string' } } } as never;
    assert.deepEqual(nonDecimalIntegers(schema, { limit: '25', cursor: '0x10' }), []);
    for (const raw of ['0x10', '1e1', ' 16', '16 ', '+5', '1.0', '']) {
      assert.deepEqual(
        nonDecimalIntegers(schema, { limit: raw }).map((e) => e.field),
        ['limit'],
        raw,
      );
    }
  });

  it('closes object schemas that do not say otherwise, at any depth', () => {
    const schema: any = {
      type: 'object',
      properties: {
        a: { type: 'object', properties: { b: { type: 'string' } } },
        free: { type: 'object', properties: {}, additionalProperties: true },
      },
    };
    closeObjectSchemas(schema);
    assert.equal(schema.additionalProperties, false);
    assert.equal(schema.properties.a.additionalProperties, false);
    assert.equal(schema.properties.free.additionalProperties, true);
  });
});

describe('input hygiene: HTTP answers', () => {
  let t: TestApp;
  let admin: Client;
  let tenant: Awaited<ReturnType<typeof fundedTenant>>;
  before(async () => {
    t = await startTestApp();
    admin = client(t.app, t.platformKey);
    tenant = await fundedTenant(t);
  });
  after(async () => {
    await t.close();
  });

  it('a urn:uuid: prefix is not a uuid: 400 on paths, queries and bodies', async () => {
    assertEnvelope(assert, await tenant.api.get(`/v1/quotes/urn:uuid:${UUID}`), 400, 'validation_failed');
    assertEnvelope(assert, await tenant.api.get(`/v1/beneficiaries/urn:uuid:${UUID}`), 400, 'validation_failed');
    const listed = await tenant.api.get(`/v1/payments?customerId=urn:uuid:${UUID}`);
    assertEnvelope(assert, listed, 400, 'validation_failed');
    assert.deepEqual(fields(listed), ['customerId']);
    const paid = await tenant.api.post(
      '/v1/payouts',
      { quoteId: `urn:uuid:${UUID}`, method: 'pago_movil', beneficiaryId: `urn:uuid:${UUID}` },
      { 'idempotency-key': idempotencyKey() },
    );
    assertEnvelope(assert, paid, 400, 'validation_failed');
    assert.deepEqual(fields(paid).sort(), ['beneficiaryId', 'quoteId']);
    // An upper-case uuid is still a uuid.
    assertEnvelope(assert, await tenant.api.get(`/v1/quotes/${UUID.toUpperCase()}`), 404, 'resource_not_found');
  });

  it('U+0000 and unpaired surrogates in any text field are 400 naming the field', async () => {
    const nul = await tenant.api.post('/v1/beneficiaries', { ...beneficiary('V20111222'), fullName: 'Ana\u0000Rojas' });
    assertEnvelope(assert, nul, 400, 'validation_failed');
    assert.deepEqual(fields(nul), ['fullName']);
    const renamed = await admin.post('/v1/admin/tenants', { name: 'x\u0000' });
    assertEnvelope(assert, renamed, 400, 'validation_failed');
    assert.deepEqual(fields(renamed), ['name']);
    const quoteId = await quote(tenant.api, 1_000_000);
    const surrogate = await tenant.api.post(
      '/v1/payouts',
      {
        quoteId,
        method: 'pago_movil',
        beneficiary: beneficiary('V20111222'),
        sender: { ...SENDER, firstName: 'a\ud800b' },
      },
      { 'idempotency-key': idempotencyKey() },
    );
    assertEnvelope(assert, surrogate, 400, 'validation_failed');
    assert.deepEqual(fields(surrogate), ['sender.firstName']);
    const query = await tenant.api.get('/v1/payments?cursor=%00');
    assertEnvelope(assert, query, 400, 'validation_failed');
    assert.deepEqual(fields(query), ['cursor']);
    assert.equal((await tenant.api.get(`/v1/quotes/${quoteId}`)).body.status, 'open');
  });

  it('an unknown body field is 400 naming it, with the closest known field', async () => {
    const typo = await tenant.api.post('/v1/beneficiaries', {
      ...beneficiary('V20111222'),
      acountNumber: '01020000000000000000',
    });
    assertEnvelope(assert, typo, 400, 'validation_failed');
    assert.deepEqual(fields(typo), ['acountNumber']);
    assert.match(typo.body.error.meta.errors[0].message, /Did you mean `accountNumber`\?/);
    const nested = await tenant.api.post(
      '/v1/payouts',
      { quoteId: UUID, method: 'pago_movil', beneficiary: { ...beneficiary('V20111222'), nickname: 'x' } },
      { 'idempotency-key': idempotencyKey() },
    );
    assertEnvelope(assert, nested, 400, 'validation_failed');
    assert.deepEqual(fields(nested), ['beneficiary.nickname']);
    const listed = await tenant.api.get('/v1/beneficiaries');
    assert.equal(listed.body.data.length, 0, 'nothing was registered');
  });

  it('an unknown query parameter is 400 naming it', async () => {
    const response = await tenant.api.get('/v1/payments?limt=5');
    assertEnvelope(assert, response, 400, 'validation_failed');
    assert.deepEqual(fields(response), ['limt']);
    assert.match(response.body.error.meta.errors[0].message, /Did you mean `limit`\?/);
  });

  it('a call that declares no query parameters or no body refuses them; an empty JSON object is no body', async () => {
    const query = await tenant.api.get('/v1/tenant/me?expand=all');
    assertEnvelope(assert, query, 400, 'validation_failed');
    assert.deepEqual(fields(query), ['expand']);
    const body = await tenant.api.post('/v1/events/retry-dead', { all: true });
    assertEnvelope(assert, body, 400, 'validation_failed');
    assert.deepEqual(fields(body), ['body']);
    assert.equal((await tenant.api.post('/v1/events/retry-dead', {})).status, 200);
    assert.equal((await tenant.api.post('/v1/events/retry-dead')).status, 200);
  });

  it('query integers in hex, exponent or padded form are 400; decimal ones work', async () => {
    for (const raw of ['0x10', '1e1', '%2016', '+5']) {
      const response = await tenant.api.get(`/v1/beneficiaries?limit=${raw}`);
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.deepEqual(fields(response), ['limit'], raw);
    }
    assert.equal((await tenant.api.get('/v1/beneficiaries?limit=16')).status, 200);
  });

  it('PATCH of a tenant with only unknown fields is 400, not a silent no-op', async () => {
    const response = await admin.patch(`/v1/admin/tenants/${tenant.tenantId}`, { nmae: 'Renamed' });
    assertEnvelope(assert, response, 400, 'validation_failed');
    assert.deepEqual(fields(response), ['nmae']);
  });

  it('a funding that would take a balance past the bigint range is 400, and nothing is posted', async () => {
    const partition = { tenantId: tenant.tenantId, mode: 'test' as const };
    // Bring the balance next to the ceiling without a thousand HTTP fundings.
    await t.db.transaction((tx) => lockAndPostEntry(tx, partition, fundingEntry('USD', 2n ** 63n - 1000n)));
    const before = await tenant.api.get('/v1/treasury/position?asset=USD');
    const response = await admin.post(
      `/v1/admin/tenants/${tenant.tenantId}/fundings`,
      { mode: 'test', asset: 'USD', amount: 1001 },
      { 'idempotency-key': idempotencyKey() },
    );
    assertEnvelope(assert, response, 400, 'validation_failed');
    assert.deepEqual(fields(response), ['amount']);
    assert.deepEqual((await tenant.api.get('/v1/treasury/position?asset=USD')).body, before.body);
    const fits = await admin.post(
      `/v1/admin/tenants/${tenant.tenantId}/fundings`,
      { mode: 'test', asset: 'USD', amount: 999 },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(fits.status, 201, fits.raw);
    assert.equal(fits.body.prefundingBalance, (2n ** 63n - 1n).toString());
  });
});
