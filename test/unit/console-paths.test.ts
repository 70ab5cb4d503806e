// The console's routes take only ids of their shape, and every value it puts into an API path is
// one encoded segment: a crafted link such as /console/payments/..%2F..%2Fadmin… can neither open a
// screen nor make the console call another path with the operator's key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { apiPath, checkedApiPath, match } from '../../console/paths.ts';

const PAYMENT = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

/** The path a browser requests for a relative URL on this origin. */
const requested = (path: string) => new URL(path, 'https://ops.example').pathname;

describe('console routes', () => {
  it('match a route whose parameters have their shape, and give the segment as it is', () => {
    assert.deepEqual(match('/payments/:id', `/payments/${PAYMENT}`, { id: 'uuid' }), { id: PAYMENT });
    assert.deepEqual(match('/payments/:id', `/payments/${PAYMENT}/`, { id: 'uuid' }), { id: PAYMENT });
    assert.deepEqual(match('/payments/:id', `/payments/${PAYMENT.toUpperCase()}`, { id: 'uuid' }), {
      id: PAYMENT.toUpperCase(),
    });
    assert.deepEqual(match('/events/:id', '/events/42', { id: 'numeric' }), { id: '42' });
    assert.deepEqual(match('/payments', '/payments'), {});
    assert.equal(match('/payments', '/events'), undefined);
    assert.equal(match('/payments/:id', '/payments', { id: 'uuid' }), undefined);
  });

  it('refuse a parameter that is not of its shape: traversal, encoded slashes, other ids', () => {
    const crafted = [
      '..%2F..%2Fadmin%2Ftenants',
      '..',
      '.',
      '%2E%2E',
      `${PAYMENT}%2F..%2F..%2Fadmin`,
      `${PAYMENT}%3Fx=1`,
      `${PAYMENT}x`,
      ` ${PAYMENT}`,
      '%E0%A4%A', // not even decodable: must not throw
      '42',
      '',
    ];
    for (const segment of crafted) {
      assert.equal(match('/payments/:id', `/payments/${segment}`, { id: 'uuid' }), undefined, segment);
    }
    for (const segment of ['-1', '1e3', '4 2', '42%2F..', PAYMENT, '1'.repeat(20), '']) {
      assert.equal(match('/events/:id', `/events/${segment}`, { id: 'numeric' }), undefined, segment);
    }
  });

  it('never let a path of any characters through as a uuid or numeric id that is not one', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (segment) => {
        const uuid = match('/payments/:id', `/payments/${segment}`, { id: 'uuid' });
        if (uuid) assert.match(uuid.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
        const numeric = match('/events/:id', `/events/${segment}`, { id: 'numeric' });
        if (numeric) assert.match(numeric.id, /^[0-9]{1,19}$/);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('console API paths', () => {
  it('encode every value as exactly one segment', () => {
    assert.equal(apiPath`/v1/payments/${PAYMENT}/ledger`, `/v1/payments/${PAYMENT}/ledger`);
    assert.equal(apiPath`/v1/events/${42n}/retry`, '/v1/events/42/retry');
    assert.equal(apiPath`/v1/payments/${'../../admin/tenants'}`, '/v1/payments/..%2F..%2Fadmin%2Ftenants');
    assert.equal(apiPath`/v1/payments/${'a?b#c'}`, '/v1/payments/a%3Fb%23c');
    assert.equal(apiPath`/v1/payments/${'%2e%2e'}`, '/v1/payments/%252e%252e');
    assert.equal(apiPath`/v1/payments/${'a\\b'}`, '/v1/payments/a%5Cb');
  });

  it('refuse a value the browser would resolve away (empty, . or ..), before anything is called', () => {
    for (const value of ['', '.', '..']) {
      assert.throws(() => apiPath`/v1/payments/${value}/ledger`, /invariant/, JSON.stringify(value));
    }
  });

  it('are requested exactly as built, whatever the value: never another path of the API', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter((v) => v !== '.' && v !== '..'),
        (value) => {
          const path = apiPath`/v1/payments/${value}/ledger`;
          assert.equal(requested(path), path);
          const segments = path.split('/');
          assert.equal(segments.length, 5, path);
          assert.equal(decodeURIComponent(segments[3]!), value);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('are checked again where they are called: only /v1/ paths the browser keeps as written', () => {
    assert.equal(checkedApiPath('/v1/tenant/me'), '/v1/tenant/me');
    for (const path of [
      '/v1/payments/../../admin',
      '/v1/payments/%2e%2e/x',
      '/v1/./tenant/me',
      '/admin',
      'v1/tenant/me',
      '//evil.example/v1/x',
      '/v1/x?key=1',
      '/v1/x#y',
      '/v1/a\\..\\b',
    ]) {
      assert.throws(() => checkedApiPath(path), /invariant/, path);
    }
  });
});
