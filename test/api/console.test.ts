// The operator console's routes: the built page and its files, with their security and cache
// headers; deep links answer the page; the routes stay out of the OpenAPI document.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CONSOLE_CSP, consoleRoutes } from '../../src/http/routes/console.ts';
import { assertEnvelope, client, startTestApp, type TestApp } from '../support/harness.ts';

describe('the operator console routes', () => {
  let t: TestApp;
  const built = mkdtempSync(path.join(tmpdir(), 'bds-console-'));
  const page = '<!doctype html><title>console</title><script type="module" src="/console/assets/app-ABC.js"></script>';

  before(async () => {
    mkdirSync(path.join(built, 'assets'));
    writeFileSync(path.join(built, 'index.html'), page);
    writeFileSync(path.join(built, 'assets', 'app-ABC.js'), 'console.log(1)');
    writeFileSync(path.join(built, 'assets', 'app-ABC.txt'), 'not served');
    // The app registers the real build (if any) at /console; this instance serves the fixture.
    t = await startTestApp({
      beforeReady: async (app) => {
        await app.register(async (scope) => consoleRoutes(scope as typeof app, built), { prefix: '/fixture' });
      },
    });
  });
  after(async () => t.close());

  const get = (url: string, headers?: Record<string, string>) => client(t.app).get(url, headers);

  it('serves the page at /console and at every deep link, with the strict headers and no key needed', async () => {
    for (const url of [
      '/fixture/console',
      '/fixture/console/',
      '/fixture/console/payments/1f0e',
      '/fixture/console/events?status=dead',
    ]) {
      const answer = await get(url);
      assert.equal(answer.status, 200, `${url}: ${answer.raw}`);
      assert.equal(answer.raw, page);
      assert.equal(answer.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(answer.headers['content-security-policy'], CONSOLE_CSP);
      assert.equal(answer.headers['x-content-type-options'], 'nosniff');
      assert.equal(answer.headers['x-frame-options'], 'DENY');
      assert.equal(answer.headers['referrer-policy'], 'no-referrer');
      assert.equal(answer.headers['cache-control'], 'no-cache');
    }
    assert.match(
      CONSOLE_CSP,
      /default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'/,
    );
  });

  it('serves the hashed files for good, answers 304 to a matching ETag, and 404 in the envelope for anything else', async () => {
    const script = await get('/fixture/console/assets/app-ABC.js');
    assert.equal(script.status, 200);
    assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(script.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(script.headers['content-security-policy'], CONSOLE_CSP);
    const again = await get('/fixture/console/assets/app-ABC.js', { 'if-none-match': String(script.headers.etag) });
    assert.equal(again.status, 304);
    assertEnvelope(assert, await get('/fixture/console/assets/app-XYZ.js'), 404, 'resource_not_found');
    assertEnvelope(assert, await get('/fixture/console/assets/app-ABC.txt'), 404, 'resource_not_found');
    assertEnvelope(assert, await get('/fixture/console/favicon.ico'), 404, 'resource_not_found');
  });

  it('a missing build is a 404 that says how to build it', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'bds-console-empty-'));
    const bare = await startTestApp({
      beforeReady: async (app) => {
        await app.register(async (scope) => consoleRoutes(scope as typeof app, path.join(empty, 'none')), {
          prefix: '/bare',
        });
      },
    });
    try {
      const answer = await client(bare.app).get('/bare/console');
      assertEnvelope(assert, answer, 404, 'resource_not_found');
      assert.match(answer.body.error.message, /npm run build/);
    } finally {
      await bare.close();
    }
  });

  it('is not in the OpenAPI document', async () => {
    const document = await get('/v1/openapi.json');
    assert.equal(document.status, 200);
    assert.deepEqual(
      Object.keys(document.body.paths).filter((p) => p.includes('console')),
      [],
    );
  });
});
