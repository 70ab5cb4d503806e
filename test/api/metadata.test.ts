import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { assertEnvelope, startTestApp, type Client, type InjectResult, type TestApp } from '../support/harness.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  idempotencyKey,
  payout,
  quote,
  SENDER,
} from '../support/payouts.ts';

// Each test uses national ids of its own, so no registration of one test matches another's.
let nextId = 30_000_000;
const nationalId = () => `V${(nextId += 1)}`;

const keys = (n: number, prefix = 'k') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, `v${i}`]));

/** 400 validation_failed naming exactly these fields. */
function assertFields(response: InjectResult, ...fields: string[]): void {
  assertEnvelope(assert, response, 400, 'validation_failed');
  const named = (response.body.error.meta.errors as Array<{ field: string; message: string }>)
    .map((e) => e.field)
    .sort();
  assert.deepEqual(named, [...fields].sort(), response.raw);
  for (const error of response.body.error.meta.errors) assert.ok(error.message.length > 0);
}

const messageOf = (response: InjectResult, field: string): string =>
  response.body.error.meta.errors.find((e: { field: string }) => e.field === field).message;

describe('metadata: free-form key-value pairs on quotes, beneficiaries and payouts', () => {
  let t: TestApp;
  let tenant: FundedTenant;
  let api: Client;
  before(async () => {
    t = await startTestApp({ env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) } });
    tenant = await fundedTenant(t);
    api = tenant.api;
  });
  after(async () => {
    await t.close();
  });

  // One way to send `metadata` in each body that takes it; `prefix` is where the error names it.
  const senders: Array<{ name: string; prefix: string; send: (metadata: unknown) => Promise<InjectResult> }> = [
    {
      name: 'POST /v1/quotes',
      prefix: 'metadata',
      send: (metadata) => api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 }, metadata }),
    },
    {
      name: 'POST /v1/beneficiaries',
      prefix: 'metadata',
      send: (metadata) => api.post('/v1/beneficiaries', { ...beneficiary(nationalId()), metadata }),
    },
    {
      name: 'POST /v1/payouts',
      prefix: 'metadata',
      send: (metadata) => payout(api, { beneficiary: beneficiary(nationalId()), metadata }),
    },
    {
      name: 'POST /v1/payouts (inline beneficiary)',
      prefix: 'beneficiary.metadata',
      send: (metadata) => payout(api, { beneficiary: beneficiary(nationalId(), { metadata }) }),
    },
  ];

  describe('limits, on every body that takes metadata', () => {
    for (const { name, prefix, send } of senders) {
      it(`${name}: accepts 50 keys of 40 characters with 500-character values, and {}`, async () => {
        const full = Object.fromEntries(
          Array.from({ length: 50 }, (_, i) => [`${String(i).padStart(2, '0')}${'k'.repeat(38)}`, 'v'.repeat(500)]),
        );
        for (const metadata of [full, {}, { order_id: '6735' }]) {
          const response = await send(metadata);
          assert.ok(response.status === 200 || response.status === 201, `${name}: ${response.raw.slice(0, 300)}`);
        }
        // Characters are code points, as every length of the API: an emoji is one.
        const wide = await send({ ['🇻'.repeat(40)]: '🇪'.repeat(500) });
        assert.ok(wide.status === 201 || wide.status === 200, wide.raw.slice(0, 300));
      });

      it(`${name}: 51 keys is 400 naming ${prefix}`, async () => {
        const response = await send(keys(51));
        assertFields(response, prefix);
        assert.match(messageOf(response, prefix), /at most 50 keys/);
      });

      it(`${name}: a 41-character key or an empty key is 400 naming the key`, async () => {
        const long = 'x'.repeat(41);
        const tooLong = await send({ ok: 'fine', [long]: 'v' });
        assertFields(tooLong, `${prefix}.${long}`);
        assert.match(messageOf(tooLong, `${prefix}.${long}`), /1 to 40 characters \(this one has 41\)/);
        const empty = await send({ '': 'v' });
        assertFields(empty, prefix);
        assert.match(messageOf(empty, prefix), /one key is empty/);
      });

      it(`${name}: a 501-character value, a non-string, a nested object or an array is 400 naming the key`, async () => {
        const tooLong = await send({ order_id: 'v'.repeat(501) });
        assertFields(tooLong, `${prefix}.order_id`);
        assert.match(messageOf(tooLong, `${prefix}.order_id`), /string of at most 500 characters/);
        for (const value of [6735, 1.5, true, null, { nested: 'x' }, ['x'], []]) {
          assertFields(await send({ good: 'yes', order_id: value }), `${prefix}.order_id`);
        }
        const several = await send({ a: 1, b: { c: 'd' }, ['y'.repeat(41)]: 'v' });
        assertFields(several, `${prefix}.a`, `${prefix}.b`, `${prefix}.${'y'.repeat(41)}`);
      });

      it(`${name}: metadata that is not an object (null, an array, a string, a number) is 400 naming ${prefix}`, async () => {
        for (const metadata of [null, [], ['x'], 'order 6735', 6735]) {
          const response = await send(metadata);
          assertFields(response, prefix);
          assert.match(messageOf(response, prefix), /JSON object/);
        }
      });
    }

    it('a bad key is reported with every other bad field of the body, in one 400', async () => {
      const response = await api.post('/v1/quotes', {
        deliver: { asset: 'XYZ', amount: 0 },
        metadata: { ['z'.repeat(41)]: 'v', n: 1 },
      });
      assertFields(response, 'deliver.asset', 'deliver.amount', `metadata.${'z'.repeat(41)}`, 'metadata.n');
    });

    it('the OpenAPI document states the limits, and the metadata object is not closed to unknown keys', () => {
      const doc = JSON.parse(readFileSync('openapi.json', 'utf8'));
      const body = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema;
      for (const schema of [
        body('/v1/quotes'),
        body('/v1/beneficiaries'),
        body('/v1/payouts'),
        body('/v1/payouts').properties.beneficiary,
      ]) {
        assert.equal(schema.additionalProperties, false, 'the body itself stays closed');
        const metadata = schema.properties.metadata;
        assert.equal(metadata.type, 'object');
        assert.equal(metadata.maxProperties, 50);
        assert.deepEqual(metadata['x-property-names'], { minLength: 1, maxLength: 40 });
        assert.equal(metadata.additionalProperties.type, 'string');
        assert.equal(metadata.additionalProperties.maxLength, 500);
        assert.equal(metadata.properties, undefined);
        assert.match(metadata.description, /1 to 40 characters/);
      }
      for (const name of ['Quote', 'Beneficiary', 'RegisteredBeneficiary', 'PayoutResult', 'Payment', 'StatementRow']) {
        assert.deepEqual(
          doc.components.schemas[name].properties.metadata,
          { $ref: '#/components/schemas/Metadata' },
          name,
        );
        assert.ok(doc.components.schemas[name].required.includes('metadata'), `${name}: always present`);
      }
    });
  });

  describe('round trips', () => {
    it('quote: the answer and GET /v1/quotes/{id}; {} when none was sent', async () => {
      const metadata = { order_id: '6735', 'customer ref': 'Ana Rojas, "VIP"', empty: '' };
      const created = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 }, metadata });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(created.body.metadata, metadata);
      assert.deepEqual((await api.get(`/v1/quotes/${created.body.id}`)).body.metadata, metadata);
      const plain = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 } });
      assert.deepEqual(plain.body.metadata, {});
      assert.deepEqual((await api.get(`/v1/quotes/${plain.body.id}`)).body.metadata, {});
    });

    it('quote: the same Idempotency-Key with other metadata is 409 idempotency_key_reused', async () => {
      const key = idempotencyKey();
      const body = { deliver: { asset: 'BS', amount: 1_000_000 }, metadata: { a: '1', b: '2' } };
      const first = await api.post('/v1/quotes', body, { 'idempotency-key': key });
      assert.equal(first.status, 201, first.raw);
      const reordered = await api.post(
        '/v1/quotes',
        { ...body, metadata: { b: '2', a: '1' } },
        { 'idempotency-key': key },
      );
      assert.equal(
        reordered.headers['idempotent-replayed'],
        'true',
        'the same object, keys in another order, is the same request',
      );
      assert.equal(reordered.raw, first.raw);
      assertEnvelope(
        assert,
        await api.post('/v1/quotes', { ...body, metadata: { a: '1', b: '3' } }, { 'idempotency-key': key }),
        409,
        'idempotency_key_reused',
      );
    });

    it('beneficiary: the answer, GET by id and the list; {} when none was sent', async () => {
      const metadata = { crm_id: 'C-77' };
      const created = await api.post('/v1/beneficiaries', { ...beneficiary(nationalId()), metadata });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(created.body.metadata, metadata);
      assert.deepEqual((await api.get(`/v1/beneficiaries/${created.body.id}`)).body.metadata, metadata);
      const plain = await api.post('/v1/beneficiaries', beneficiary(nationalId()));
      assert.deepEqual(plain.body.metadata, {});
      const listed = await api.get('/v1/beneficiaries?limit=100');
      assert.deepEqual(listed.body.data.find((b: { id: string }) => b.id === created.body.id).metadata, metadata);
      assert.deepEqual(listed.body.data.find((b: { id: string }) => b.id === plain.body.id).metadata, {});
    });

    it('payout: the answer, its replay, GET /v1/payments/{id} and the statement; the quote keeps its own', async () => {
      const metadata = { order_id: '6735', invoice: 'F-2026-0042' };
      const quoted = await api.post('/v1/quotes', {
        deliver: { asset: 'BS', amount: 1_000_000 },
        metadata: { quote_only: 'yes' },
      });
      const key = idempotencyKey();
      const body = { quoteId: quoted.body.id, beneficiary: beneficiary(nationalId()), metadata };
      const first = await payout(api, body, undefined, key);
      assert.equal(first.status, 201, first.raw);
      assert.equal(first.body.status, 'submitted');
      assert.deepEqual(first.body.metadata, metadata, 'not the quote’s');
      const replay = await payout(api, body, undefined, key);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.raw, first.raw, 'the replay is the answer sent, metadata included');
      const read = await api.get(`/v1/payments/${first.body.id}`);
      assert.deepEqual(read.body.metadata, metadata);
      for (const event of read.body.events)
        assert.deepEqual(
          Object.keys(event.metadata).sort(),
          ['methodRequested', 'methodUsed'],
          'the history keeps its own',
        );
      const statement = await api.get('/v1/payments?limit=100');
      assert.deepEqual(statement.body.data.find((r: { id: string }) => r.id === first.body.id).metadata, metadata);
      assert.deepEqual((await api.get(`/v1/quotes/${quoted.body.id}`)).body.metadata, { quote_only: 'yes' });
    });

    it('payout without metadata: {} in the answer, the payment and the statement', async () => {
      const made = await payout(api, { beneficiary: beneficiary(nationalId()) });
      assert.equal(made.status, 201, made.raw);
      assert.deepEqual(made.body.metadata, {});
      assert.deepEqual((await api.get(`/v1/payments/${made.body.id}`)).body.metadata, {});
      const statement = await api.get('/v1/payments?limit=100');
      assert.deepEqual(statement.body.data.find((r: { id: string }) => r.id === made.body.id).metadata, {});
    });

    it('payout failed before the rail (below the floor) and failed by the rail: the answer carries it too', async () => {
      const below = await payout(api, { beneficiary: beneficiary(nationalId()), metadata: { why: 'floor' } }, 92_499);
      assert.equal(below.body.status, 'failed', below.raw);
      assert.equal(below.body.reason, 'amount_below_rail_minimum');
      assert.deepEqual(below.body.metadata, { why: 'floor' });
      const rejected = await payout(api, { beneficiary: beneficiary('V99990004'), metadata: { why: 'mismatch' } });
      assert.equal(rejected.body.status, 'failed', rejected.raw);
      assert.deepEqual(rejected.body.metadata, { why: 'mismatch' });
      assert.deepEqual((await api.get(`/v1/payments/${rejected.body.id}`)).body.metadata, { why: 'mismatch' });
    });

    it('payout: the same Idempotency-Key with other metadata (or none) is 409 idempotency_key_reused, and nothing is paid twice', async () => {
      const key = idempotencyKey();
      const quoteId = await quote(api, 1_000_000);
      const body = { quoteId, beneficiary: beneficiary(nationalId()), metadata: { order_id: '1' } };
      const first = await payout(api, body, undefined, key);
      assert.equal(first.status, 201, first.raw);
      for (const other of [{ order_id: '2' }, { order_id: '1', extra: 'x' }, {}, undefined]) {
        assertEnvelope(
          assert,
          await payout(api, { ...body, metadata: other }, undefined, key),
          409,
          'idempotency_key_reused',
        );
      }
      const { rows } = await t.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1 AND quote_id = $2',
        [tenant.tenantId, quoteId],
      );
      assert.equal(rows[0]!.n, 1);
    });

    it('concurrent payouts committed in one batch each keep their own metadata', async () => {
      const made = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          payout(api, {
            beneficiary: beneficiary(nationalId()),
            ...(i % 3 === 0 ? {} : { metadata: { n: String(i) } }),
          }),
        ),
      );
      for (const [i, response] of made.entries()) {
        assert.equal(response.status, 201, response.raw);
        const expected = i % 3 === 0 ? {} : { n: String(i) };
        assert.deepEqual(response.body.metadata, expected);
        assert.deepEqual((await api.get(`/v1/payments/${response.body.id}`)).body.metadata, expected);
      }
    });
  });

  describe('beneficiaries: registering the same identity again', () => {
    it('with metadata replaces it (even when nothing else changes); without, it stays; {} clears it', async () => {
      const details = beneficiary(nationalId());
      const first = await api.post('/v1/beneficiaries', { ...details, metadata: { crm_id: 'C-1', tier: 'gold' } });
      assert.equal(first.status, 201, first.raw);
      const kept = await api.post('/v1/beneficiaries', { ...details, fullName: 'María P. Pérez' });
      assert.equal(kept.status, 200, kept.raw);
      assert.equal(kept.body.id, first.body.id);
      assert.equal(kept.body.full_name, 'María P. Pérez');
      assert.deepEqual(kept.body.metadata, { crm_id: 'C-1', tier: 'gold' }, 'without metadata the stored one stays');
      const replaced = await api.post('/v1/beneficiaries', {
        ...details,
        fullName: 'María P. Pérez',
        metadata: { crm_id: 'C-2' },
      });
      assert.equal(replaced.status, 200, replaced.raw);
      assert.equal(replaced.body.created, false);
      assert.deepEqual(replaced.body.metadata, { crm_id: 'C-2' }, 'replaced, not merged');
      assert.deepEqual((await api.get(`/v1/beneficiaries/${first.body.id}`)).body.metadata, { crm_id: 'C-2' });
      const cleared = await api.post('/v1/beneficiaries', { ...details, fullName: 'María P. Pérez', metadata: {} });
      assert.deepEqual(cleared.body.metadata, {});
      assert.deepEqual((await api.get(`/v1/beneficiaries/${first.body.id}`)).body.metadata, {});
    });

    it('inline in a payout: registered with its own metadata, apart from the payout’s; replaced when sent again, kept when not', async () => {
      const details = beneficiary(nationalId());
      const made = await payout(api, {
        beneficiary: { ...details, metadata: { crm_id: 'C-9' } },
        metadata: { order_id: '9' },
      });
      assert.equal(made.status, 201, made.raw);
      assert.deepEqual(made.body.metadata, { order_id: '9' });
      const registered = await api.get(`/v1/beneficiaries/${made.body.beneficiaryId}`);
      assert.deepEqual(registered.body.metadata, { crm_id: 'C-9' });
      assert.deepEqual((await api.get(`/v1/payments/${made.body.id}`)).body.metadata, { order_id: '9' });

      const without = await payout(api, { beneficiary: details });
      assert.equal(without.body.beneficiaryId, made.body.beneficiaryId);
      assert.deepEqual(without.body.metadata, {});
      assert.deepEqual(
        (await api.get(`/v1/beneficiaries/${made.body.beneficiaryId}`)).body.metadata,
        { crm_id: 'C-9' },
        'kept',
      );

      const again = await payout(api, { beneficiary: { ...details, metadata: { crm_id: 'C-10' } } });
      assert.equal(again.body.beneficiaryId, made.body.beneficiaryId);
      assert.deepEqual(
        (await api.get(`/v1/beneficiaries/${made.body.beneficiaryId}`)).body.metadata,
        { crm_id: 'C-10' },
        'replaced',
      );

      // Registered first through the API, then paid inline with new metadata: the same rule.
      const other = beneficiary(nationalId());
      const byApi = await api.post('/v1/beneficiaries', { ...other, metadata: { source: 'api' } });
      const inline = await payout(api, { beneficiary: { ...other, metadata: { source: 'payout' } } });
      assert.equal(inline.body.beneficiaryId, byApi.body.id);
      assert.deepEqual((await api.get(`/v1/beneficiaries/${byApi.body.id}`)).body.metadata, { source: 'payout' });
    });

    it('a refused payout registers nothing: its inline beneficiary metadata is not stored either', async () => {
      const poor = await fundedTenant(t, 100n);
      const details = beneficiary(nationalId());
      const registered = await poor.api.post('/v1/beneficiaries', { ...details, metadata: { v: '1' } });
      const refused = await payout(poor.api, { beneficiary: { ...details, metadata: { v: '2' } } });
      assertEnvelope(assert, refused, 422, 'insufficient_tenant_funds');
      assert.deepEqual((await poor.api.get(`/v1/beneficiaries/${registered.body.id}`)).body.metadata, { v: '1' });
    });

    it('a misspelt field next to metadata is still refused, with a hint', async () => {
      const response = await api.post(
        '/v1/payouts',
        {
          quoteId: await quote(api, 1_000_000),
          method: 'pago_movil',
          beneficiary: beneficiary(nationalId()),
          sender: SENDER,
          metadata: { a: 'b' },
          metadatum: { a: 'b' },
        },
        { 'idempotency-key': idempotencyKey() },
      );
      assertFields(response, 'metadatum');
      assert.match(messageOf(response, 'metadatum'), /Did you mean `metadata`/);
    });
  });
});
