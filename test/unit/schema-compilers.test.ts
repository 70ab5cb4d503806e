import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lazyCompilers } from '../../src/http/schema-compilers.ts';
import { validatorCompiler } from '../../src/http/validation.ts';

const route = (schema: object) => ({ schema, method: 'POST', url: '/x', httpPart: 'body' }) as never;

describe('lazy schema compilers', () => {
  it('a validator compiles on its first call and reports its errors on the function Fastify holds', () => {
    let compiled = 0;
    const compilers = lazyCompilers((r) => {
      compiled += 1;
      return validatorCompiler(r);
    });
    const validate = compilers.validatorCompiler(
      route({ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }),
    ) as ((d: unknown) => boolean) & { errors?: unknown[] };
    assert.equal(compiled, 0);
    assert.equal(validate({ a: 1 }), true);
    assert.equal(validate({}), false);
    assert.equal((validate.errors as Array<{ keyword: string }>)[0]!.keyword, 'required');
    assert.equal(validate({ a: 2 }), true);
    assert.equal(compiled, 1);
  });

  it('warm compiles everything still pending, and stops when aborted', async () => {
    let compiled = 0;
    const compilers = lazyCompilers((r) => {
      compiled += 1;
      return validatorCompiler(r);
    });
    for (let i = 0; i < 5; i += 1) compilers.validatorCompiler(route({ type: 'string', maxLength: i + 1 }));
    const stop = new AbortController();
    stop.abort();
    await compilers.warm(stop.signal);
    assert.equal(compiled, 0);
    await compilers.warm();
    assert.equal(compiled, 5);
  });

  it('error statuses serialize with JSON.stringify; success bodies with their schema, lazily', () => {
    const build = compilers().compilersFactory.buildSerializer!({}, {}) as unknown as (r: {
      httpStatus: string;
      schema: object;
    }) => (d: unknown) => string;
    const error = build({ httpStatus: '404', schema: { type: 'object', properties: {} } });
    assert.equal(error({ error: { code: 'x' } }), '{"error":{"code":"x"}}');
    const ok = build({ httpStatus: '200', schema: { type: 'object', properties: { a: { type: 'string' } } } });
    assert.equal(ok({ a: 'y', secret: 'dropped' }), '{"a":"y"}');
  });
});

function compilers() {
  return lazyCompilers(validatorCompiler);
}
