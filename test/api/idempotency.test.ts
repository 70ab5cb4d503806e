import { Type } from '@sinclair/typebox';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import {
  claimIdempotencyKey,
  purgeExpiredIdempotencyKeys,
  type IdempotencyScope,
} from '../../src/db/repositories/idempotency.ts';
import { findIdempotencyKey } from '../support/idempotency.ts';
import { ManualClock } from '../support/clock.ts';
import { ApiError, validationFailed } from '../../src/domain/errors.ts';
import { canonicalJson, IDEMPOTENCY_LEASE_MS, requestFingerprint } from '../../src/http/plugins/idempotency.ts';
import type { App } from '../../src/http/types.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  createTestDatabase,
  startTestApp,
  type Client,
  type InjectResult,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts';
import { until } from '../support/until.ts';

const HOUR_MS = 3_600_000;

/** What the test-only routes did: how many times each label's handler ran, and gates to hold them. */
class Probe {
  readonly runs = new Map<string, number>();
  private readonly gates = new Map<string, { promise: Promise<void>; open: () => void }>();

  run(label: string): number {
    const n = (this.runs.get(label) ?? 0) + 1;
    this.runs.set(label, n);
    return n;
  }
  count(label: string): number {
    return this.runs.get(label) ?? 0;
  }
  gate(name: string): Promise<void> {
    return this.entry(name).promise;
  }
  open(name: string): void {
    this.entry(name).open();
  }
  private entry(name: string) {
    let entry = this.gates.get(name);
    if (!entry) {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => {
        open = resolve;
      });
      entry = { promise, open };
      this.gates.set(name, entry);
    }
    return entry;
  }
}

const CounterBody = Type.Object(
  {
    label: Type.String({ minLength: 1 }),
    delayMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000 })),
    note: Type.Optional(Type.String()),
    nested: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: false },
);

/** Test-only routes standing in for the money-moving ones (registered before app.ready()). */
function testRoutes(probe: Probe) {
  return (app: App) => {
    const counter = async (body: { label: string; delayMs?: number }) => {
      const n = probe.run(body.label);
      if (body.delayMs) await sleep(body.delayMs);
      return { n, label: body.label, unicode: 'Bolívares ✓' };
    };

    app.post(
      '/v1/test/counter',
      { config: { scopes: [], idempotency: 'required' }, schema: { body: CounterBody } },
      async (request, reply) => reply.code(201).send(await counter(request.body)),
    );

    app.post(
      '/v1/test/optional',
      { config: { scopes: [], idempotency: 'optional' }, schema: { body: CounterBody } },
      async (request, reply) => reply.code(201).send(await counter(request.body)),
    );

    app.post(
      '/v1/test/scoped',
      { config: { scopes: ['payments:write'], idempotency: 'required' }, schema: { body: CounterBody } },
      async (request, reply) => reply.code(201).send(await counter(request.body)),
    );

    app.post(
      '/v1/test/things/:id',
      {
        config: { scopes: [], idempotency: 'required' },
        schema: { params: Type.Object({ id: Type.String() }), body: CounterBody },
      },
      async (request, reply) => reply.code(201).send({ ...(await counter(request.body)), id: request.params.id }),
    );

    // Holds until the test opens the gate named in the body.
    app.post(
      '/v1/test/gated',
      {
        config: { scopes: [], idempotency: 'required' },
        schema: { body: Type.Object({ label: Type.String(), gate: Type.String() }) },
      },
      async (request, reply) => {
        const n = probe.run(request.body.label);
        await probe.gate(request.body.gate);
        return reply.code(201).send({ n, label: request.body.label });
      },
    );

    app.post(
      '/v1/test/unprocessable',
      { config: { scopes: [], idempotency: 'required' }, schema: { body: CounterBody } },
      async (request) => {
        const n = probe.run(request.body.label);
        throw new ApiError('insufficient_tenant_funds', `Not enough balance (attempt ${n}).`, {
          available: '0',
          attempt: n,
        });
      },
    );

    // Fails with a plain Error (500) on its first run, succeeds afterwards.
    app.post(
      '/v1/test/flaky',
      { config: { scopes: [], idempotency: 'required' }, schema: { body: CounterBody } },
      async (request, reply) => {
        const n = probe.run(request.body.label);
        if (n === 1) throw new Error('database went away');
        return reply.code(201).send({ n, label: request.body.label });
      },
    );

    // The handler itself rejects (400) on its first run, as a service's own validation would.
    app.post(
      '/v1/test/rejecting',
      { config: { scopes: [], idempotency: 'required' }, schema: { body: CounterBody } },
      async (request, reply) => {
        const n = probe.run(request.body.label);
        if (n === 1) throw validationFailed([{ field: 'label', message: 'is not acceptable yet' }]);
        return reply.code(201).send({ n, label: request.body.label });
      },
    );

    app.post(
      '/v1/test/missing',
      { config: { scopes: [], idempotency: 'required' }, schema: { body: CounterBody } },
      async (request) => {
        probe.run(request.body.label);
        throw new ApiError('resource_not_found', 'No such thing.');
      },
    );
  };
}

const withKey = (key: string) => ({ 'idempotency-key': key });

function label(): string {
  return `l_${randomUUID().slice(0, 8)}`;
}

function assertReplayOf(replay: InjectResult, original: InjectResult): void {
  assert.equal(replay.status, original.status, replay.raw);
  assert.equal(replay.raw, original.raw, 'a replay sends the stored body bytes exactly');
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.match(String(replay.headers['content-type']), /^application\/json/);
}

describe('Idempotency-Key', () => {
  const probe = new Probe();
  const clock = new ManualClock('2025-03-01T12:00:00Z');
  let t: TestApp;
  let tenant: { tenantId: string; key: string; api: Client };

  before(async () => {
    t = await startTestApp({ clock, beforeReady: testRoutes(probe) });
    tenant = await createTenant(t, { name: 'Idempotente' });
  });
  after(async () => {
    await t.close();
  });

  const scopeOf = (key: string, mode: 'test' | 'live' = 'test'): IdempotencyScope => ({
    tenantId: tenant.tenantId,
    mode,
    key,
  });

  describe('replay and conflicts', () => {
    it('replays the original status and identical body bytes, without running the handler again', async () => {
      const l = label();
      const key = randomUUID();
      const first = await tenant.api.post('/v1/test/counter', { label: l, note: 'x' }, withKey(key));
      assert.equal(first.status, 201, first.raw);
      assert.deepEqual(first.body, { n: 1, label: l, unicode: 'Bolívares ✓' });
      assert.equal(first.headers['idempotent-replayed'], undefined);

      const again = await tenant.api.post('/v1/test/counter', { note: 'x', label: l }, withKey(key)); // key order differs
      assertReplayOf(again, first);
      assert.equal(Buffer.compare(Buffer.from(again.raw), Buffer.from(first.raw)), 0);
      assert.equal(again.headers['content-length'], first.headers['content-length']);
      assert.notEqual(again.headers['x-request-id'], first.headers['x-request-id']);
      assert.equal(probe.count(l), 1);

      const row = await findIdempotencyKey(t.db, scopeOf(key));
      assert.equal(row?.status, 'completed');
      assert.equal(row?.response_status, 201);
      assert.equal(row?.response_body, first.raw);
      assert.equal(row?.owner, null);
      assert.equal(row?.locked_until, null);
      assert.equal(row?.created_at.toISOString(), clock.now().toISOString());
      assert.equal(row?.expires_at.toISOString(), new Date(clock.now().getTime() + 24 * HOUR_MS).toISOString());
    });

    it('same key with a different body is 409 idempotency_key_reused, and the stored response is kept', async () => {
      const l = label();
      const key = randomUUID();
      const first = await tenant.api.post('/v1/test/counter', { label: l }, withKey(key));
      assert.equal(first.status, 201);
      const reused = await tenant.api.post('/v1/test/counter', { label: l, note: 'changed' }, withKey(key));
      assertEnvelope(assert, reused, 409, 'idempotency_key_reused');
      assert.equal(reused.headers['idempotent-replayed'], undefined);
      assertReplayOf(await tenant.api.post('/v1/test/counter', { label: l }, withKey(key)), first);
      assert.equal(probe.count(l), 1);
    });

    it('same key on another route, or on another resource of the same route, is 409 idempotency_key_reused', async () => {
      const l = label();
      const key = randomUUID();
      assert.equal((await tenant.api.post('/v1/test/things/a', { label: l }, withKey(key))).status, 201);
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/things/b', { label: l }, withKey(key)),
        409,
        'idempotency_key_reused',
      );
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/counter', { label: l }, withKey(key)),
        409,
        'idempotency_key_reused',
      );
      assert.equal(
        (await tenant.api.post('/v1/test/things/a', { label: l }, withKey(key))).headers['idempotent-replayed'],
        'true',
      );
      assert.equal(probe.count(l), 1);
    });

    it('the fingerprint is the canonical body: nested key order does not matter, values do', async () => {
      const l = label();
      const key = randomUUID();
      const first = await tenant.api.post(
        '/v1/test/counter',
        { label: l, nested: { b: [1, { y: 2, x: 1 }], a: null } },
        withKey(key),
      );
      assert.equal(first.status, 201);
      const same = await tenant.api.post(
        '/v1/test/counter',
        { nested: { a: null, b: [1, { x: 1, y: 2 }] }, label: l },
        withKey(key),
      );
      assertReplayOf(same, first);
      const arrayOrder = await tenant.api.post(
        '/v1/test/counter',
        { label: l, nested: { b: [{ y: 2, x: 1 }, 1], a: null } },
        withKey(key),
      );
      assertEnvelope(assert, arrayOrder, 409, 'idempotency_key_reused');
      assert.equal(
        canonicalJson({ b: { d: 1, c: [2, { f: 1, e: 0 }] }, a: 'x' }),
        '{"a":"x","b":{"c":[2,{"e":0,"f":1}],"d":1}}',
      );
      assert.equal(canonicalJson(undefined), '');
      assert.equal(
        requestFingerprint('POST', '/v1/x', {}, { b: 1, a: 2 }),
        requestFingerprint('post', '/v1/x', undefined, { a: 2, b: 1 }),
      );
      assert.match(requestFingerprint('POST', '/v1/x', {}, undefined), /^[0-9a-f]{64}$/);
    });

    it('a second request while the first still runs is 409 idempotency_request_in_progress (retryable)', async () => {
      const l = label();
      const key = randomUUID();
      const gate = randomUUID();
      const firstPending = tenant.api.post('/v1/test/gated', { label: l, gate }, withKey(key));
      await until(`the handler called once for ${l}`, () => probe.count(l) === 1, { timeoutMs: 5000, intervalMs: 5 });
      const second = await tenant.api.post('/v1/test/gated', { label: l, gate }, withKey(key));
      assertEnvelope(assert, second, 409, 'idempotency_request_in_progress');
      assert.match(second.body.error.message, /retry/i);
      // A different body while the first runs is a reuse, not "in progress".
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/gated', { label: l, gate: 'other' }, withKey(key)),
        409,
        'idempotency_key_reused',
      );
      const row = await findIdempotencyKey(t.db, scopeOf(key));
      assert.equal(row?.status, 'in_progress');
      assert.equal(
        row?.locked_until?.toISOString(),
        new Date(clock.now().getTime() + IDEMPOTENCY_LEASE_MS).toISOString(),
      );

      probe.open(gate);
      const first = await firstPending;
      assert.equal(first.status, 201);
      assert.deepEqual(first.body, { n: 1, label: l });
      // Our own 409s did not overwrite the row: the first request's response is what is kept.
      assertReplayOf(await tenant.api.post('/v1/test/gated', { label: l, gate }, withKey(key)), first);
      assert.equal(probe.count(l), 1);
    });

    it('20 concurrent identical requests: the handler runs once; each answer is the 201 or the in-progress 409', async () => {
      const l = label();
      const key = randomUUID();
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => tenant.api.post('/v1/test/counter', { label: l, delayMs: 150 }, withKey(key))),
      );
      assert.equal(probe.count(l), 1);
      const created = responses.filter((r) => r.status === 201);
      const busy = responses.filter((r) => r.status === 409);
      assert.equal(created.length + busy.length, 20, responses.map((r) => `${r.status} ${r.raw}`).join('\n'));
      assert.ok(created.length >= 1);
      assert.ok(busy.length >= 1, 'the others arrived while the first was still running');
      assert.equal(created.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1);
      for (const r of created) assert.equal(r.raw, created[0]!.raw);
      for (const r of busy) assertEnvelope(assert, r, 409, 'idempotency_request_in_progress');
      assertReplayOf(await tenant.api.post('/v1/test/counter', { label: l, delayMs: 150 }, withKey(key)), created[0]!);
    });
  });

  describe('what is stored and what releases the key', () => {
    it('a 422 is stored and replayed', async () => {
      const l = label();
      const key = randomUUID();
      const first = await tenant.api.post('/v1/test/unprocessable', { label: l }, withKey(key));
      assertEnvelope(assert, first, 422, 'insufficient_tenant_funds');
      assert.deepEqual(first.body.error.meta, { available: '0', attempt: 1 });
      const again = await tenant.api.post('/v1/test/unprocessable', { label: l }, withKey(key));
      assertReplayOf(again, first);
      assert.equal(again.body.error.request_id, first.body.error.request_id, 'the stored envelope, as first sent');
      assert.equal(probe.count(l), 1);
      assert.equal((await findIdempotencyKey(t.db, scopeOf(key)))?.response_status, 422);
    });

    it('a 404 from the handler is not stored: the key stays free for the corrected request', async () => {
      const l = label();
      const key = randomUUID();
      const first = await tenant.api.post('/v1/test/missing', { label: l }, withKey(key));
      assertEnvelope(assert, first, 404, 'resource_not_found');
      assert.equal(await findIdempotencyKey(t.db, scopeOf(key)), undefined);
      const again = await tenant.api.post('/v1/test/missing', { label: l }, withKey(key));
      assertEnvelope(assert, again, 404, 'resource_not_found');
      assert.equal(again.headers['idempotent-replayed'], undefined);
      assert.equal(probe.count(l), 2);
    });

    it('a 500 releases the key: a retry runs the handler', async () => {
      const l = label();
      const key = randomUUID();
      const failed = await tenant.api.post('/v1/test/flaky', { label: l }, withKey(key));
      assertEnvelope(assert, failed, 500, 'internal_error');
      assert.equal(await findIdempotencyKey(t.db, scopeOf(key)), undefined);
      const retried = await tenant.api.post('/v1/test/flaky', { label: l }, withKey(key));
      assert.equal(retried.status, 201);
      assert.equal(retried.headers['idempotent-replayed'], undefined);
      assert.deepEqual(retried.body, { n: 2, label: l });
      assertReplayOf(await tenant.api.post('/v1/test/flaky', { label: l }, withKey(key)), retried);
      assert.equal(probe.count(l), 2);
    });

    it('a schema 400 does not consume the key: the valid request with the same key then runs', async () => {
      const l = label();
      const key = randomUUID();
      const invalid = await tenant.api.post('/v1/test/counter', { label: 42 }, withKey(key));
      assertEnvelope(assert, invalid, 400, 'validation_failed');
      assert.equal(await findIdempotencyKey(t.db, scopeOf(key)), undefined);
      const valid = await tenant.api.post('/v1/test/counter', { label: l }, withKey(key));
      assert.equal(valid.status, 201);
      assert.equal(valid.headers['idempotent-replayed'], undefined);
      assert.equal(probe.count(l), 1);
    });

    it('a 400 raised by the handler releases the key', async () => {
      const l = label();
      const key = randomUUID();
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/rejecting', { label: l }, withKey(key)),
        400,
        'validation_failed',
      );
      assert.equal(await findIdempotencyKey(t.db, scopeOf(key)), undefined);
      const retried = await tenant.api.post('/v1/test/rejecting', { label: l }, withKey(key));
      assert.equal(retried.status, 201);
      assert.deepEqual(retried.body, { n: 2, label: l });
    });

    it('invalid JSON, 401 and 403 are rejected before the key is looked at', async () => {
      const l = label();
      const key = randomUUID();
      const badJson = await t.app.inject({
        method: 'POST',
        url: '/v1/test/counter',
        headers: { 'x-api-key': tenant.key, 'content-type': 'application/json', ...withKey(key) },
        payload: '{oops',
      });
      assert.equal(badJson.statusCode, 400);
      assertEnvelope(
        assert,
        await client(t.app, 'bsk_test_' + 'z'.repeat(40)).post('/v1/test/counter', { label: l }, withKey(key)),
        401,
        'api_key_invalid',
      );
      const reader = await createTenant(t, { scopes: ['payments:read'] });
      assertEnvelope(
        assert,
        await reader.api.post('/v1/test/scoped', { label: l }, withKey(key)),
        403,
        'scope_missing',
      );
      assert.equal(await findIdempotencyKey(t.db, scopeOf(key)), undefined);
      assert.equal(probe.count(l), 0);
      assert.equal((await tenant.api.post('/v1/test/counter', { label: l }, withKey(key))).status, 201);
    });
  });

  describe('the header', () => {
    it('missing on a required route: 400 idempotency_key_missing, the handler does not run', async () => {
      const l = label();
      assertEnvelope(assert, await tenant.api.post('/v1/test/counter', { label: l }), 400, 'idempotency_key_missing');
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/counter', { label: l }, withKey('')),
        400,
        'idempotency_key_missing',
      );
      assert.equal(probe.count(l), 0);
    });

    it('an optional route without the header runs every time; with it, it is idempotent', async () => {
      const l = label();
      const a = await tenant.api.post('/v1/test/optional', { label: l });
      const b = await tenant.api.post('/v1/test/optional', { label: l });
      assert.deepEqual([a.status, a.body.n, b.status, b.body.n], [201, 1, 201, 2]);
      assert.equal(b.headers['idempotent-replayed'], undefined);
      const key = randomUUID();
      const c = await tenant.api.post('/v1/test/optional', { label: l }, withKey(key));
      assert.equal(c.body.n, 3);
      assertReplayOf(await tenant.api.post('/v1/test/optional', { label: l }, withKey(key)), c);
      assert.equal(probe.count(l), 3);
    });

    it('longer than 255 characters or not printable ASCII: 400 validation_failed naming Idempotency-Key', async () => {
      const l = label();
      for (const bad of ['k'.repeat(256), 'clé-1', 'tab\there']) {
        const response = await tenant.api.post('/v1/test/counter', { label: l }, withKey(bad));
        assertEnvelope(assert, response, 400, 'validation_failed');
        assert.match(response.body.error.message, /Idempotency-Key/);
        assert.deepEqual(
          response.body.error.meta.errors.map((e: { field: string }) => e.field),
          ['Idempotency-Key'],
        );
      }
      // Checked before the body.
      const both = await tenant.api.post('/v1/test/counter', { label: 7 }, withKey('k'.repeat(256)));
      assert.deepEqual(
        both.body.error.meta.errors.map((e: { field: string }) => e.field),
        ['Idempotency-Key'],
      );
      const optional = await tenant.api.post('/v1/test/optional', { label: l }, withKey('k'.repeat(256)));
      assertEnvelope(assert, optional, 400, 'validation_failed');
      assert.equal(probe.count(l), 0);
      const longest = await tenant.api.post('/v1/test/counter', { label: l }, withKey(`~ !${'k'.repeat(252)}`));
      assert.equal(longest.status, 201, longest.raw);
    });
  });

  describe('partitions', () => {
    it('keys are per tenant: the same key string from another tenant is independent', async () => {
      const other = await createTenant(t, { name: 'Otra' });
      const l = label();
      const key = randomUUID();
      const mine = await tenant.api.post('/v1/test/counter', { label: l }, withKey(key));
      const theirs = await other.api.post('/v1/test/counter', { label: l, note: 'different body' }, withKey(key));
      assert.equal(mine.status, 201);
      assert.equal(theirs.status, 201, theirs.raw);
      assert.equal(theirs.headers['idempotent-replayed'], undefined);
      assert.deepEqual([mine.body.n, theirs.body.n], [1, 2]);
    });

    it('keys are per mode: the same tenant with a live key is independent of its test key', async () => {
      const admin = client(t.app, t.platformKey);
      const live = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'live' });
      assert.equal(live.status, 201, live.raw);
      const liveApi = client(t.app, live.body.key);
      const l = label();
      const key = randomUUID();
      assert.equal((await tenant.api.post('/v1/test/counter', { label: l }, withKey(key))).status, 201);
      const other = await liveApi.post('/v1/test/counter', { label: l, note: 'live' }, withKey(key));
      assert.equal(other.status, 201, other.raw);
      assert.equal(other.body.n, 2);
      assert.equal((await findIdempotencyKey(t.db, scopeOf(key, 'live')))?.status, 'completed');
    });
  });

  describe('time: TTL and lease', () => {
    it('an in-progress key whose lease expired is taken over; the late holder does not overwrite the result', async () => {
      const l = label();
      const key = randomUUID();
      const stuckGate = randomUUID();
      const stuck = tenant.api.post('/v1/test/gated', { label: l, gate: stuckGate }, withKey(key));
      await until(`the handler called once for ${l}`, () => probe.count(l) === 1, { timeoutMs: 5000, intervalMs: 5 });

      clock.advance(IDEMPOTENCY_LEASE_MS - 1000);
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/gated', { label: l, gate: stuckGate }, withKey(key)),
        409,
        'idempotency_request_in_progress',
      );

      clock.advance(2000); // the lease is over: the next retry takes the key over and runs
      const takeoverPending = tenant.api.post('/v1/test/gated', { label: l, gate: stuckGate }, withKey(key));
      await until(`the handler called twice for ${l}`, () => probe.count(l) === 2, { timeoutMs: 5000, intervalMs: 5 });
      probe.open(stuckGate); // both handlers finish now, in either order
      const takeover = await takeoverPending;
      assert.equal(takeover.status, 201, takeover.raw);
      assert.equal(takeover.headers['idempotent-replayed'], undefined);
      assert.deepEqual(takeover.body, { n: 2, label: l });

      const late = await stuck; // the first holder finishes after losing the key
      assert.deepEqual(late.body, { n: 1, label: l });
      assertReplayOf(await tenant.api.post('/v1/test/gated', { label: l, gate: stuckGate }, withKey(key)), takeover);
      assert.equal(probe.count(l), 2);
    });

    it('a lease is taken over by exactly one of several concurrent retries', async () => {
      const key = randomUUID();
      const scope = scopeOf(key);
      const fp = 'a'.repeat(64);
      const timing = { now: clock.now(), ttlMs: 24 * HOUR_MS, leaseMs: IDEMPOTENCY_LEASE_MS };
      assert.equal((await claimIdempotencyKey(t.db, scope, fp, timing)).outcome, 'claimed');
      const later = { ...timing, now: new Date(timing.now.getTime() + IDEMPOTENCY_LEASE_MS + 1) };
      const results = await Promise.all(Array.from({ length: 10 }, () => claimIdempotencyKey(t.db, scope, fp, later)));
      const claimed = results.filter((r) => r.outcome === 'claimed');
      assert.equal(claimed.length, 1);
      assert.deepEqual(claimed[0]!.outcome === 'claimed' && claimed[0]!.tookOver, 'lease');
      assert.ok(results.every((r) => r.outcome === 'claimed' || r.outcome === 'in_progress'));
    });

    it('past IDEMPOTENCY_TTL_HOURS the key is free again, even with a different body', async () => {
      const l = label();
      const key = randomUUID();
      const first = await tenant.api.post('/v1/test/counter', { label: l }, withKey(key));
      assert.equal(first.status, 201);

      clock.advance(24 * HOUR_MS - 1000);
      assertReplayOf(await tenant.api.post('/v1/test/counter', { label: l }, withKey(key)), first);
      assertEnvelope(
        assert,
        await tenant.api.post('/v1/test/counter', { label: l, note: 'new' }, withKey(key)),
        409,
        'idempotency_key_reused',
      );

      clock.advance(1000);
      const reused = await tenant.api.post('/v1/test/counter', { label: l, note: 'new' }, withKey(key));
      assert.equal(reused.status, 201, reused.raw);
      assert.equal(reused.headers['idempotent-replayed'], undefined);
      assert.equal(reused.body.n, 2);
      const row = await findIdempotencyKey(t.db, scopeOf(key));
      assert.equal(row?.created_at.toISOString(), clock.now().toISOString());
      assertReplayOf(await tenant.api.post('/v1/test/counter', { label: l, note: 'new' }, withKey(key)), reused);
    });
  });
});

describe('Idempotency-Key: two app instances sharing one database', () => {
  const probe = new Probe();
  let database: TestDatabase;
  let secondDb: Database;
  let one: TestApp;
  let two: TestApp;

  before(async () => {
    database = await createTestDatabase();
    // On PostgreSQL the second instance has its own pool, as a second process would.
    secondDb = database.url ? new PostgresDatabase(database.url, 20) : database.db;
    one = await startTestApp({ database, beforeReady: testRoutes(probe) });
    two = await startTestApp({
      database: { db: secondDb, drop: async () => undefined },
      beforeReady: testRoutes(probe),
    });
  });
  after(async () => {
    await one.close();
    await two.close();
    if (secondDb !== database.db) await secondDb.close();
    await database.drop();
  });

  it('20 concurrent identical requests spread over both instances: the handler runs once', async () => {
    const tenant = await createTenant(two); // the last instance started holds the current platform key
    const apis = [client(one.app, tenant.key), client(two.app, tenant.key)];
    const l = label();
    const key = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        apis[i % 2]!.post('/v1/test/counter', { label: l, delayMs: 150 }, withKey(key)),
      ),
    );
    assert.equal(probe.count(l), 1);
    const created = responses.filter((r) => r.status === 201);
    assert.equal(created.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1);
    for (const r of created) assert.equal(r.raw, created[0]!.raw);
    for (const r of responses.filter((r) => r.status !== 201))
      assertEnvelope(assert, r, 409, 'idempotency_request_in_progress');
    assertReplayOf(await apis[0]!.post('/v1/test/counter', { label: l, delayMs: 150 }, withKey(key)), created[0]!);
    assertReplayOf(await apis[1]!.post('/v1/test/counter', { label: l, delayMs: 150 }, withKey(key)), created[0]!);
  });
});

describe('purgeExpiredIdempotencyKeys', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    await t.close();
  });

  it('deletes expired rows only, in bounded batches', async () => {
    const tenant = await createTenant(t);
    const start = new Date('2025-01-01T00:00:00Z');
    const claim = (key: string, now: Date, ttlHours: number) =>
      claimIdempotencyKey(t.db, { tenantId: tenant.tenantId, mode: 'test', key }, 'b'.repeat(64), {
        now,
        ttlMs: ttlHours * HOUR_MS,
        leaseMs: IDEMPOTENCY_LEASE_MS,
      });
    for (let i = 0; i < 5; i++) assert.equal((await claim(`old-${i}`, start, 1)).outcome, 'claimed');
    assert.equal((await claim('young', start, 48)).outcome, 'claimed');

    const now = new Date(start.getTime() + 2 * HOUR_MS);
    assert.equal(await purgeExpiredIdempotencyKeys(t.db, now, 2), 2);
    assert.equal(await purgeExpiredIdempotencyKeys(t.db, now, 2), 2);
    assert.equal(await purgeExpiredIdempotencyKeys(t.db, now, 2), 1);
    assert.equal(await purgeExpiredIdempotencyKeys(t.db, now, 2), 0);
    const { rows } = await t.db.query<{ key: string }>('SELECT key FROM idempotency_keys ORDER BY key');
    assert.deepEqual(
      rows.map((r) => r.key),
      ['young'],
    );
    await assert.rejects(() => purgeExpiredIdempotencyKeys(t.db, now, 0));
  });
});
