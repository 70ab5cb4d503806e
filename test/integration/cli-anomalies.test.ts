// The operator CLI's anomaly commands (`npx bolivar anomalies …`), spawned as an operator runs them
// against a listening test server: the same answers as the admin API, failures in one line.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openAnomaly } from '../../src/db/repositories/anomalies.ts';
import { assertOneLine, bolivar, startCliTarget, type CliTarget } from '../support/cli.ts';
import { client } from '../support/harness.ts';

const REFERENCES = ['3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f', '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e70'];

describe('bolivar anomalies', () => {
  let target: CliTarget;
  before(async () => {
    target = await startCliTarget();
  });
  after(async () => {
    await target.close();
  });

  it('list, get and resolve are the admin API; resolving twice is the 409 in one line', async () => {
    const { t, env, cwd } = target;
    const admin = client(t.app, t.platformKey);
    const opened: string[] = [];
    for (const reference of REFERENCES) {
      const anomaly = await openAnomaly(t.db, {
        kind: 'unknown_reference',
        tenantId: null,
        mode: 'test',
        paymentId: null,
        ours: { payment: null },
        theirs: { reference, status: 'settled' },
        raw: { reference },
        dedupKey: `cli-test:${reference}`,
      });
      opened.push(anomaly.id);
    }
    const ok = async (args: string[]) => {
      const run = await bolivar(args, env, cwd);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      return JSON.parse(run.stdout);
    };
    const open = await ok([
      'anomalies',
      'list',
      '--status',
      'open',
      '--kind',
      'unknown_reference',
      '--mode',
      'test',
      '--all',
      '--limit',
      '1',
    ]);
    assert.deepEqual(open, {
      data: (await admin.get('/v1/admin/anomalies?status=open&kind=unknown_reference&mode=test')).body.data,
      has_more: false,
      next_cursor: null,
    });
    assert.deepEqual(new Set(open.data.map((a: { id: string }) => a.id)), new Set(opened));
    assert.deepEqual(
      await ok(['anomalies', 'get', '--anomaly', opened[0]!]),
      (await admin.get(`/v1/admin/anomalies/${opened[0]}`)).body,
    );

    const resolved = await ok([
      'anomalies',
      'resolve',
      '--anomaly',
      opened[0]!,
      '--note',
      'No such transfer at the bank: the rail sent a stray notification.',
    ]);
    assert.equal(resolved.status, 'resolved');
    assert.equal(resolved.resolvedBy, (await admin.get('/v1/tenant/me')).body.apiKeyId);
    assert.deepEqual(
      (await admin.get('/v1/admin/anomalies?status=open&mode=test')).body.data.map((a: { id: string }) => a.id),
      [opened[1]],
    );

    const again = await bolivar(['anomalies', 'resolve', '--anomaly', opened[0]!, '--note', 'again'], env, cwd);
    assert.equal(again.code, 1);
    assertOneLine(again, /^bolivar: 409 anomaly_already_resolved: /);
    const noNote = await bolivar(['anomalies', 'resolve', '--anomaly', opened[1]!], env, cwd);
    assert.equal(noNote.code, 2);
    assertOneLine(noNote, /anomalies resolve: --note is required/);
    assert.equal((await admin.get(`/v1/admin/anomalies/${opened[1]}`)).body.status, 'open', 'nothing sent');
  });
});
