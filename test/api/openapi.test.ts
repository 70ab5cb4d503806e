import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { client, startTestApp, type TestApp } from '../support/harness.ts';

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await startTestApp();
    doc = (await client(t.app).get('/v1/openapi.json')).body;
  });
  after(async () => {
    await t.close();
  });

  it('is OpenAPI 3.0.3 with the x-api-key security scheme, served without a key', () => {
    assert.equal(doc.openapi, '3.0.3');
    assert.deepEqual(doc.components.securitySchemes.ApiKeyAuth, {
      type: 'apiKey',
      in: 'header',
      name: 'x-api-key',
      description: 'bsk_test_…, bsk_live_… or bsk_platform_…',
    });
    assert.deepEqual(doc.security, [{ ApiKeyAuth: [] }]);
  });

  it('documents every error response of every authenticated operation with the envelope', () => {
    let operations = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (operation.security?.length === 0) continue;
        operations += 1;
        assert.ok(path.startsWith('/v1/'), `${path} is under /v1`);
        assert.ok(operation.operationId, `${method} ${path} has an operationId`);
        for (const status of ['401', '429', '500']) {
          assert.equal(
            operation.responses[status]?.content?.['application/json']?.schema?.$ref,
            '#/components/schemas/ErrorEnvelope',
            `${method} ${path} documents ${status}`,
          );
        }
      }
    }
    assert.ok(operations >= 6);
    assert.deepEqual(Object.keys(doc.components.schemas.ErrorEnvelope.properties.error.properties), ['type', 'code', 'message', 'request_id', 'meta']);
  });

  it('matches the committed openapi.json (generated, never hand-edited)', () => {
    const committed = JSON.parse(readFileSync('openapi.json', 'utf8'));
    assert.deepEqual(committed, doc);
  });
});
