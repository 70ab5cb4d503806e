// The SDK's admin resources for running the service day to day, against the real service: rails and
// their routing rules, rail statements (posted as text or as a stream, listed, read, pulled),
// reconciliation runs, anomalies and the audit trail. Each reaches its route and answers its body.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Bolivar, BolivarError } from '../../sdk/src/index.ts';
import { businessDate } from '../../src/domain/caracas-time.ts';
import { openAnomaly } from '../../src/db/repositories/anomalies.ts';
import { ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout } from '../support/payouts.ts';

describe(`the SDK's admin operations against the service, on ${ENGINE}`, () => {
  let t: TestApp;
  let admin: Bolivar['admin'];

  before(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    admin = new Bolivar({
      apiKey: t.platformKey,
      baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
    }).admin;
  });

  after(async () => {
    await t.close();
  });

  it('rails: list, update; routes: create (amounts as bigint or string), list, delete', async () => {
    const rails = await admin.rails.list();
    assert.deepEqual(
      rails.data.map((r) => r.name),
      ['sandbox'],
    );
    assert.deepEqual((await admin.rails.update('sandbox', { instruments: ['pago_movil'] })).instruments, [
      'pago_movil',
    ]);
    assert.deepEqual(
      (await admin.rails.update('sandbox', { instruments: ['pago_movil', 'transferencia'], enabled: true }))
        .instruments,
      ['pago_movil', 'transferencia'],
    );

    const rule = await admin.rails.routes.create({
      priority: 7,
      rail: 'sandbox',
      bankCode: '0134',
      minAmount: 100n,
      maxAmount: '900',
    });
    assert.deepEqual([rule.rail, rule.bankCode, rule.minAmount, rule.maxAmount], ['sandbox', '0134', '100', '900']);
    assert.deepEqual(
      (await admin.rails.routes.list()).data.map((r) => r.id),
      [rule.id],
    );
    assert.equal((await admin.rails.routes.delete(rule.id)).id, rule.id);
    assert.deepEqual((await admin.rails.routes.list()).data, []);

    const ghost = await admin.rails.routes.create({ priority: 1, rail: 'ghost' }).catch((e: unknown) => e);
    assert.ok(
      ghost instanceof BolivarError && ghost.status === 404 && ghost.code === 'resource_not_found',
      String(ghost),
    );
    await assert.rejects(
      admin.rails.routes.create({ priority: 1, rail: 'sandbox', minAmount: 1.5 }),
      /minAmount: not an integer/,
    );
  });

  it('rail statements: import as text and as a stream (the same statement), list, get with its mismatches, pull', async () => {
    const tenant = await fundedTenant(t);
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
    assert.equal(made.body.status, 'settled', made.raw);
    const { rows } = await t.db.query<{ settled_at: Date; bank_reference: string; payout_amount: bigint }>(
      `SELECT settled_at, bank_reference, payout_amount FROM payments WHERE id = $1`,
      [made.body.id],
    );
    const day = businessDate(rows[0]!.settled_at);
    const unknown = randomUUID();
    const csv = `Referencia,bank_reference,amount,status,value_date\n${made.body.id},${rows[0]!.bank_reference},${rows[0]!.payout_amount},settled,${day}\n${unknown},1,5,settled,${day}\n`;

    const imported = await admin.rails.statements.import('sandbox', csv, { day, columns: 'reference:Referencia' });
    assert.equal(imported.counts.matched, 1);
    assert.equal(imported.counts.unknown_reference, 1);
    const stream = new Blob([csv]).stream();
    assert.deepEqual(
      await admin.rails.statements.import('sandbox', stream, { day, columns: 'reference:Referencia' }),
      imported,
      'the same file: the stored statement',
    );

    assert.deepEqual((await admin.rails.statements.listPage('sandbox', { limit: 1 })).data, [imported]);
    assert.deepEqual(await admin.rails.statements.list('sandbox').toArray(), [imported]);
    const shown = await admin.rails.statements.get('sandbox', imported.id, { limit: 1 });
    assert.equal(shown.id, imported.id);
    assert.deepEqual(
      shown.mismatches.data.map((m) => [m.result, m.reference]),
      [['unknown_reference', unknown]],
    );

    const malformed = await admin.rails.statements
      .import('sandbox', `reference,bank_reference,amount,status,value_date\n${made.body.id},1,1.5,settled,${day}\n`, {
        day,
      })
      .catch((e: unknown) => e);
    assert.ok(
      malformed instanceof BolivarError && malformed.status === 400 && malformed.code === 'statement_malformed',
      String(malformed),
    );
    const pulled = await admin.rails.statements
      .pull('sandbox', { day: businessDate(new Date()) })
      .catch((e: unknown) => e);
    assert.ok(
      pulled instanceof BolivarError &&
        pulled.code === 'validation_failed' &&
        /gives no statement/.test(pulled.message),
      String(pulled),
    );
  });

  it('reconciliation: start, list page by page, get', async () => {
    const { tenantId } = await fundedTenant(t);
    const started = await admin.reconciliation.start({ tenantId, mode: 'test' });
    assert.equal(started.total, 1);
    assert.deepEqual(
      started.data.map((r) => [r.tenantId, r.mode]),
      [[tenantId, 'test']],
    );
    await t.services.reconciliation.drain();
    await admin.reconciliation.start({ tenantId, mode: 'test', scope: 'incremental' });
    await t.services.reconciliation.drain();

    const first = await admin.reconciliation.listPage({ tenantId, mode: 'test', limit: 1 });
    assert.equal(first.data.length, 1);
    assert.equal(first.has_more, true);
    const all = await admin.reconciliation.list({ tenantId, limit: 1 }).toArray();
    assert.equal(all.length, 2);
    const run = await admin.reconciliation.get(started.data[0]!.id);
    assert.deepEqual([run.id, run.status, run.clean, run.discrepancies], [started.data[0]!.id, 'completed', true, []]);
    const missing = await admin.reconciliation.get(randomUUID()).catch((e: unknown) => e);
    assert.ok(missing instanceof BolivarError && missing.status === 404, String(missing));
  });

  it('anomalies: list, get, resolve; resolving twice is the 409', async () => {
    const opened: string[] = [];
    for (const reference of [randomUUID(), randomUUID()]) {
      const anomaly = await openAnomaly(t.db, {
        kind: 'unknown_reference',
        tenantId: null,
        mode: 'test',
        paymentId: null,
        ours: { payment: null },
        theirs: { reference, status: 'settled' },
        raw: { reference },
        dedupKey: `sdk-test:${reference}`,
      });
      opened.push(anomaly.id);
    }
    const open = await admin.anomalies
      .list({ status: 'open', kind: 'unknown_reference', mode: 'test', limit: 1 })
      .toArray();
    assert.deepEqual(new Set(open.map((a) => a.id)), new Set(opened));
    assert.equal((await admin.anomalies.listPage({ status: 'open', mode: 'test', limit: 1 })).has_more, true);
    assert.equal((await admin.anomalies.get(opened[0]!)).id, opened[0]);

    const resolved = await admin.anomalies.resolve(opened[0]!, { note: 'No such transfer at the bank.' });
    assert.equal(resolved.status, 'resolved');
    const again = await admin.anomalies.resolve(opened[0]!, { note: 'again' }).catch((e: unknown) => e);
    assert.ok(
      again instanceof BolivarError && again.status === 409 && again.code === 'anomaly_already_resolved',
      String(again),
    );
  });

  it('audit: what the platform key did, narrowed and paged', async () => {
    const tenant = await admin.tenants.create({ name: 'Audited' });
    await admin.tenants.update(tenant.id, { feeBps: 75 });
    const trail = await admin.audit.listPage({ tenantId: tenant.id });
    assert.deepEqual(
      trail.data.map((r) => r.action),
      ['tenant.update', 'tenant.create'],
    );
    assert.deepEqual(await admin.audit.list({ tenantId: tenant.id, limit: 1 }).toArray(), trail.data);
    const refused = await admin.audit.listPage({ actorKeyId: 'not-an-id' }).catch((e: unknown) => e);
    assert.ok(refused instanceof BolivarError && refused.code === 'validation_failed', String(refused));
  });
});
