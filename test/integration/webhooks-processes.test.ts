import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { insertOutboxEvent } from '../support/outbox.ts';
import { insertTenant } from '../../src/db/repositories/tenants.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { setWebhookEndpoint } from '../../src/services/webhook-endpoints.ts';
import { TENANT_DEFAULTS } from '../../src/services/tenants.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { answer, dispatcherFor, TestReceiver } from '../support/webhooks.ts';
import { until } from '../support/until.ts';

interface Child {
  process: ChildProcessWithoutNullStreams;
  output(): string;
  ready: Promise<void>;
  exited: Promise<number | null>;
}

function startDispatcher(url: string, env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/dispatcher-process.ts'], {
    env: { ...process.env, DATABASE_URL: url, ...env },
  });
  let output = '';
  let resolveReady: () => void;
  const ready = new Promise<void>((resolve) => (resolveReady = resolve));
  child.stdout.on('data', (chunk) => {
    output += chunk;
    if (output.includes('ready\n')) resolveReady();
  });
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { process: child, output: () => output, ready, exited };
}

async function seed(db: TestDatabase['db'], url: string, count: number): Promise<string> {
  const tenantId = randomUUID();
  await insertTenant(db, tenantId, { ...TENANT_DEFAULTS, name: 'Multi' });
  await setWebhookEndpoint(db, { tenantId, mode: 'test', url, at: new Date() });
  for (let i = 0; i < count; i += 1) {
    await insertOutboxEvent(db, {
      tenantId,
      mode: 'test',
      type: 'payment.settled',
      paymentId: randomUUID(),
      payload: { n: i },
      at: new Date(Date.now() - 1000),
    });
  }
  return tenantId;
}

describe(
  'several dispatcher processes on one PostgreSQL',
  { skip: ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): PGlite is one process' : false },
  () => {
    let database: TestDatabase;
    const receivers: TestReceiver[] = [];
    before(async () => {
      database = await createTestDatabase();
      await migrate(database.db);
    });
    after(async () => {
      for (const r of receivers) await r.close();
      await database.drop();
    });

    it('two processes deliver every attempt exactly once between them', async () => {
      const receiver = await TestReceiver.start();
      receivers.push(receiver);
      // First attempt of every event fails, the second succeeds: two attempts per event to share out.
      receiver.behaviour = (request, response) => {
        setTimeout(
          () => answer(request.headers['x-delivery-attempt'] === '1' ? 500 : 200)(request, response),
          Math.floor(Math.random() * 4),
        );
      };
      const EVENTS = 300;
      await seed(database.db, receiver.url(), EVENTS);

      const children = [startDispatcher(database.url!), startDispatcher(database.url!)];
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.process.stdin.write('go\n');
      const codes = await Promise.all(children.map((c) => c.exited));
      assert.deepEqual(codes, [0, 0], children.map((c) => c.output()).join('\n'));

      const pairs = receiver.requests.map((r) => `${r.headers['x-event-id']}#${r.headers['x-delivery-attempt']}`);
      assert.equal(pairs.length, EVENTS * 2);
      assert.equal(new Set(pairs).size, pairs.length, 'no attempt was delivered twice');
      const sent = children.map((c) => Number(/sent (\d+)/.exec(c.output())?.[1]));
      assert.equal(sent[0]! + sent[1]!, EVENTS * 2);
      assert.ok(sent[0]! > 0 && sent[1]! > 0, `both processes delivered (${sent.join(' + ')})`);

      const { rows } = await database.db.query<{ status: string; attempts: number; n: bigint }>(
        `SELECT status, attempts, count(*)::bigint AS n FROM outbox_events GROUP BY status, attempts`,
      );
      assert.deepEqual(rows, [{ status: 'published', attempts: 2, n: BigInt(EVENTS) }]);
      const deliveries = await database.db.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM webhook_deliveries`);
      assert.equal(deliveries.rows[0]!.n, BigInt(EVENTS * 2));
      await database.db.query('DELETE FROM webhook_deliveries');
      await database.db.query('DELETE FROM outbox_events');
    });

    it('a dispatcher process killed mid-batch loses nothing: another one redelivers once the lease expires', async () => {
      const receiver = await TestReceiver.start();
      receivers.push(receiver);
      receiver.behaviour = receiver.hang();
      const EVENTS = 20;
      await seed(database.db, receiver.url(), EVENTS);

      const doomed = startDispatcher(database.url!, {
        DISPATCH_FOREVER: '1',
        WEBHOOK_TIMEOUT_MS: '1000',
        LEASE_MARGIN_MS: '500',
        DISPATCH_BATCH: '20',
        WEBHOOK_CONCURRENCY: '20',
      });
      await doomed.ready;
      doomed.process.stdin.write('go\n');
      await until('the whole batch in flight', () => receiver.requests.length >= EVENTS, {
        timeoutMs: 10_000,
        intervalMs: 10,
      });
      assert.equal(receiver.requests.length, EVENTS, 'the whole batch is in flight');
      doomed.process.kill('SIGKILL');
      await doomed.exited;

      receiver.behaviour = answer(200);
      receiver.releaseHanging();
      const survivor = dispatcherFor(database.db, systemClock, { timeoutMs: 1000, backoffScale: 0, concurrency: 20 });
      await survivor.dispatchDue();
      const early = await database.db.query<{ status: string }>(`SELECT status FROM outbox_events`);
      assert.ok(
        early.rows.every((r) => r.status === 'pending'),
        'nothing recorded by the dead process, nothing taken before its lease ends',
      );

      // Once the dead process's lease (WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS) has run out, the survivor takes its events.
      const pending = async () =>
        (
          await database.db.query<{ n: bigint }>(
            `SELECT count(*)::bigint AS n FROM outbox_events WHERE status = 'pending'`,
          )
        ).rows[0]!.n;
      await until(
        'the survivor redelivers every event',
        async () => {
          await survivor.dispatchDue();
          return (await pending()) === 0n;
        },
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      await survivor.close();

      const { rows } = await database.db.query<{ status: string; attempts: number }>(
        `SELECT status, attempts FROM outbox_events`,
      );
      assert.equal(rows.length, EVENTS);
      assert.ok(
        rows.every((r) => r.status === 'published' && r.attempts === 1),
        JSON.stringify(rows),
      );
      const ids = receiver.eventIds();
      assert.equal(ids.length, EVENTS * 2, 'each event arrived twice: from the killed process, then redelivered');
      assert.ok(
        receiver.requests.every((r) => r.headers['x-delivery-attempt'] === '1'),
        'the same attempt, redelivered',
      );
      assert.equal(new Set(ids).size, EVENTS);
    });
  },
);
