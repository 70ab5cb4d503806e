import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { migrate, loadMigrations } from '../../src/db/migrate.ts';
import {
  CLAIM_DUE_EVENTS_SQL,
  claimDueEvents,
  claimDueEventsParams,
  type DueEventsClaim,
} from '../../src/db/repositories/events.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { until } from '../support/until.ts';

describe(`database layer on ${ENGINE}`, () => {
  let database: TestDatabase;
  before(async () => {
    // No schema yet: this file applies the migrations itself.
    database = await createTestDatabase({ empty: true });
  });
  after(async () => {
    await database.drop();
  });

  it('applies every migration once and records it', async () => {
    const first = await migrate(database.db);
    assert.equal(first.applied.length, loadMigrations().length);
    const second = await migrate(database.db);
    assert.deepEqual(second.applied, []);
    const { rows } = await database.db.query<{ version: number }>(
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    assert.deepEqual(
      rows.map((r) => r.version),
      loadMigrations().map((m) => m.version),
    );
  });

  it('maps int8 to bigint and numeric to exact strings on both engines', async () => {
    const { rows } = await database.db.query<{ big: bigint; exact: string }>(
      'SELECT $1::bigint + 1 AS big, 920.375::numeric AS exact',
      [9007199254740993n],
    );
    assert.equal(rows[0]!.big, 9007199254740994n);
    assert.equal(rows[0]!.exact, '920.375');
  });

  it('rolls a transaction back when its work throws', async () => {
    await database.db.query('CREATE TABLE IF NOT EXISTS tx_probe (v int)');
    await assert.rejects(
      database.db.transaction(async (tx) => {
        await tx.query('INSERT INTO tx_probe VALUES (1)');
        throw new Error('boom');
      }),
      /boom/,
    );
    const { rowCount } = await database.db.query('SELECT * FROM tx_probe');
    assert.equal(rowCount, 0);
  });

  it('refuses an unbalanced ledger transaction at commit, whatever the code did', async () => {
    const tenant = '00000000-0000-4000-8000-0000000000d1';
    const entry = '00000000-0000-4000-8000-0000000000d2';
    await database.db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'ledger probe')`, [tenant]);
    await assert.rejects(
      database.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO ledger_transactions (tenant_id, mode, id, kind) VALUES ($1, 'test', $2, 'funding')`,
          [tenant, entry],
        );
        await tx.query(
          `INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
           VALUES ($1, $2, 'test', 'BS', 'treasury', 5), ($1, $2, 'test', 'BS', 'prefunding', -4)`,
          [tenant, entry],
        );
      }),
      /unbalanced in BS/,
    );
    await assert.rejects(
      database.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO ledger_transactions (tenant_id, mode, id, kind) VALUES ($1, 'test', $2, 'funding')`,
          [tenant, entry],
        );
      }),
      /has 0 postings/,
    );
    const { rowCount } = await database.db.query('SELECT 1 FROM ledger_transactions WHERE id = $1', [entry]);
    assert.equal(rowCount, 0);
  });

  it('reports affected row counts for updates', async () => {
    await database.db.query('INSERT INTO tx_probe VALUES (1), (2), (3)');
    const result = await database.db.query('UPDATE tx_probe SET v = v + 1 WHERE v > 1');
    assert.equal(result.rowCount, 2);
  });

  it('runs a keyed statement and commits what it writes, on either engine', async () => {
    await database.db.query('CREATE TABLE IF NOT EXISTS keyed_probe (id int PRIMARY KEY, v text)');
    const { rows } = await database.db.query<{ id: number }>(
      `INSERT INTO keyed_probe SELECT * FROM unnest($1::int[], $2::text[]) RETURNING id`,
      [
        [1, 2],
        ['a', 'b'],
      ],
      { plan: 'keyed' },
    );
    assert.deepEqual(rows.map((r) => r.id).sort(), [1, 2]);
    await database.db.relaxed.query(`UPDATE keyed_probe SET v = 'c' WHERE id = ANY($1::int[])`, [[2]], {
      plan: 'keyed',
    });
    const after = await database.db.query<{ v: string }>('SELECT v FROM keyed_probe ORDER BY id');
    assert.deepEqual(
      after.rows.map((r) => r.v),
      ['a', 'c'],
    );
  });
});

describe(
  'keyed statements on PostgreSQL',
  { skip: ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL)' : false },
  () => {
    let database: TestDatabase;
    let db: PostgresDatabase;
    before(async () => {
      database = await createTestDatabase();
      // One connection per pool: every statement below runs on the same session as the one before.
      db = new PostgresDatabase(database.url!, 1);
    });
    after(async () => {
      await db.close();
      await database.drop();
    });

    const SETTINGS = `SELECT current_setting('enable_seqscan') AS seqscan, current_setting('plan_cache_mode') AS plans, $1::int AS probe`;

    for (const pool of ['main', 'relaxed'] as const) {
      it(`on the ${pool} pool: no table scans and the generic plan, for that statement only`, async () => {
        const q = pool === 'main' ? db : db.relaxed;
        const keyed = await q.query<{ seqscan: string; plans: string }>(SETTINGS, [1], { plan: 'keyed' });
        assert.deepEqual({ ...keyed.rows[0] }, { seqscan: 'off', plans: 'force_generic_plan', probe: 1 });
        const plain = await q.query<{ seqscan: string; plans: string }>(SETTINGS, [2]);
        assert.deepEqual(
          { ...plain.rows[0] },
          { seqscan: 'on', plans: 'auto', probe: 2 },
          'the session keeps its own settings',
        );
      });

      it(`on the ${pool} pool: planned once per connection, never again at each call`, async () => {
        const q = pool === 'main' ? db : db.relaxed;
        const sql = `SELECT count(*) AS n FROM unnest($1::int[]) AS v(x) /* ${pool} plan probe */`;
        for (let i = 0; i < 8; i += 1) await q.query(sql, [[i, i + 1]], { plan: 'keyed' });
        const { rows } = await q.query<{ generic: string; custom: string }>(
          `SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements WHERE statement LIKE '%' || $1 || ' plan probe%' AND statement NOT LIKE '%pg_prepared_statements%'`,
          [pool],
        );
        assert.deepEqual(rows, [{ generic: '8', custom: '0' }]);
      });

      it(`on the ${pool} pool: a failing keyed statement fails with its own error and leaves the connection usable`, async () => {
        const q = pool === 'main' ? db : db.relaxed;
        await assert.rejects(
          q.query(`SELECT 1 / $1::int AS x`, [0], { plan: 'keyed' }),
          (error: { code?: string }) => error.code === '22012',
        );
        const plain = await q.query<{ seqscan: string; plans: string }>(SETTINGS, [3]);
        assert.deepEqual({ ...plain.rows[0] }, { seqscan: 'on', plans: 'auto', probe: 3 }, 'its transaction is over');
      });
    }

    for (const pool of ['main', 'relaxed'] as const) {
      it(`on the ${pool} pool: a queue claim also never sorts, for that statement only`, async () => {
        const q = pool === 'main' ? db : db.relaxed;
        const sql = `SELECT current_setting('enable_seqscan') AS seqscan, current_setting('plan_cache_mode') AS plans, current_setting('enable_sort') AS sort, $1::int AS probe`;
        const claim = await q.query(sql, [1], { plan: 'queue-head' });
        assert.deepEqual({ ...claim.rows[0] }, { seqscan: 'off', plans: 'force_generic_plan', sort: 'off', probe: 1 });
        const plain = await q.query(sql, [2]);
        assert.deepEqual({ ...plain.rows[0] }, { seqscan: 'on', plans: 'auto', sort: 'on', probe: 2 });
      });
    }

    it('a keyed transaction forbids table scans for itself only', async () => {
      const setting = (q: { query: typeof db.query }) =>
        q.query<{ enable_seqscan: string }>('SHOW enable_seqscan').then((r) => r.rows[0]!.enable_seqscan);
      assert.equal(await db.transaction((tx) => setting(tx), { seqScans: false }), 'off');
      assert.equal(await db.transaction((tx) => setting(tx)), 'on');
      assert.equal(await setting(db), 'on');
    });

    it('a keyed transaction runs generic plans too', async () => {
      const { rows } = await db.transaction(
        (tx) => tx.query<{ plans: string }>(`SELECT current_setting('plan_cache_mode') AS plans`),
        { seqScans: false },
      );
      assert.equal(rows[0]!.plans, 'force_generic_plan');
    });
  },
);

describe(
  'the webhook claim on PostgreSQL, planned while the queue looked empty',
  { skip: ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL)' : false },
  () => {
    const OUTBOX = 3000;
    const DUE = 2500;
    const LOOK_AHEAD = 400;
    const LIMIT = 100;
    let database: TestDatabase;
    let db: PostgresDatabase;
    const tenant = '00000000-0000-4000-8000-00000000c1a1';
    before(async () => {
      database = await createTestDatabase();
      await migrate(database.db);
      // One connection per pool: the claim's plan, cached on the relaxed pool's connection, is the one explained.
      db = new PostgresDatabase(database.url!, 1);
      await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'claim probe')`, [tenant]);
      await db.query(
        `INSERT INTO webhook_endpoints (tenant_id, mode, url, origin, secret, created_at, updated_at)
       VALUES ($1, 'test', 'http://127.0.0.1:9/hooks', 'http://127.0.0.1:9', 'whsec_' || repeat('p', 32), now(), now())`,
        [tenant],
      );
      await db.query('ANALYZE outbox_events');
    });
    after(async () => {
      await db.close();
      await database.drop();
    });

    const claim = (): DueEventsClaim => ({
      now: new Date(),
      leaseUntil: new Date(Date.now() + 60_000),
      leaseToken: randomUUID(),
      limit: LIMIT,
      originMax: LIMIT,
      inFlight: [],
      scanMax: LOOK_AHEAD,
    });

    /** The rows of outbox_events each scan of the claim's cached plan read, running it once (EXPLAIN ANALYZE EXECUTE). */
    async function scansOfCachedClaim(): Promise<Array<{ index: string; read: number }>> {
      const named = await db.relaxed.query<{ name: string }>(
        'SELECT name FROM pg_prepared_statements WHERE statement = $1',
        [CLAIM_DUE_EVENTS_SQL],
      );
      assert.equal(named.rows.length, 1, 'the claim is a prepared statement of this connection');
      // EXECUTE takes its arguments as literals (a parameter of the message would not reach them).
      const literal = (value: unknown): string =>
        value instanceof Date
          ? `'${value.toISOString()}'`
          : Array.isArray(value)
            ? `'{${value.map((v) => JSON.stringify(String(v))).join(',')}}'`
            : `'${String(value)}'`;
      const { rows } = await db.relaxed.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, unknown> }> }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${named.rows[0]!.name}(${claimDueEventsParams(claim()).map(literal).join(', ')})`,
        [],
        { plan: 'queue-head' },
      );
      const scans: Array<{ index: string; read: number }> = [];
      const walk = (node: Record<string, unknown>): void => {
        if (node['Relation Name'] === 'outbox_events' && /Scan/.test(String(node['Node Type']))) {
          scans.push({
            index: String(node['Index Name'] ?? node['Node Type']),
            read:
              (Number(node['Actual Rows']) + Number(node['Rows Removed by Filter'] ?? 0)) *
              Number(node['Actual Loops']),
          });
        }
        for (const child of (node['Plans'] as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
      };
      walk(rows[0]!['QUERY PLAN'][0]!.Plan);
      return scans;
    }

    function assertReadsItsLookAheadOnly(scans: Array<{ index: string; read: number }>): void {
      const read = scans.reduce((sum, scan) => sum + scan.read, 0);
      // The look-ahead in index order, then one key probe per pick to lock it and one to lease it.
      assert.ok(read <= LOOK_AHEAD + 2 * LIMIT + 20, `rows of outbox_events read: ${read} (${JSON.stringify(scans)})`);
      assert.equal(scans[0]?.index, 'outbox_due', JSON.stringify(scans));
    }

    it('a plan made on an empty outbox walks the queue in order once it is thousands deep', async () => {
      assert.deepEqual(await claimDueEvents(db.relaxed, claim()), []);
      await db.query(
        `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status, attempts, next_attempt_at)
       SELECT $1, 'test', 'payment.settled', 'payment', gen_random_uuid(), '{}', '{}', 'pending', 0, now() - interval '1 second'
         FROM generate_series(1, $2::int)`,
        [tenant, DUE],
      );
      assertReadsItsLookAheadOnly(await scansOfCachedClaim());
    });

    it('a plan made from statistics that know of no pending event does too', async () => {
      await db.query(`UPDATE outbox_events SET status = 'published', published_at = now(), attempts = 1`);
      await db.query(
        `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status, attempts, published_at, next_attempt_at)
       SELECT $1, 'test', 'payment.settled', 'payment', gen_random_uuid(), '{}', '{}', 'published', 1, now(), now() - interval '1 hour'
         FROM generate_series(1, $2::int)`,
        [tenant, OUTBOX - DUE],
      );
      // ANALYZE also makes the connection plan the claim again, from these statistics.
      await db.query('ANALYZE outbox_events');
      await db.query(
        `UPDATE outbox_events SET status = 'pending', published_at = NULL, attempts = 0, locked_until = NULL, lease_token = NULL, next_attempt_at = now() - interval '1 second'
        WHERE id IN (SELECT id FROM outbox_events ORDER BY id LIMIT $1)`,
        [DUE],
      );
      assertReadsItsLookAheadOnly(await scansOfCachedClaim());
    });

    it('claims the first due events, in order, and skips them at the next claim', async () => {
      const first = await claimDueEvents(db.relaxed, claim());
      const second = await claimDueEvents(db.relaxed, claim());
      assert.equal(first.length, LIMIT);
      assert.equal(second.length, LIMIT);
      const ids = [...first, ...second].map((row) => row.id);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
        'in the order of the queue',
      );
      assert.equal(new Set(ids).size, 2 * LIMIT, 'never the same event twice');
    });
  },
);

describe(
  'connection lifetime',
  { skip: ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL)' : false },
  () => {
    it('a connection older than maxLifetimeSeconds is replaced, so its cached plans are made again', async () => {
      const database = await createTestDatabase();
      const db = new PostgresDatabase(database.url!, 1, { maxLifetimeSeconds: 1 });
      try {
        const backend = async () => (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const first = await backend();
        assert.equal(await backend(), first, 'the same connection while it is young');
        // Past its lifetime the connection is closed when it is next released: a later query gets another.
        await until('a new connection once the lifetime has passed', async () => (await backend()) !== first, {
          timeoutMs: 10_000,
          intervalMs: 100,
        });
      } finally {
        await db.close();
        await database.drop();
      }
    });
  },
);

describe(
  'migrations from several processes at once',
  { skip: ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL)' : false },
  () => {
    it('two pools migrating one empty database apply each migration exactly once', async () => {
      const database = await createTestDatabase();
      const other = new PostgresDatabase(database.url!, 2);
      try {
        const [a, b] = await Promise.all([migrate(database.db), migrate(other)]);
        assert.equal(a.applied.length + b.applied.length, loadMigrations().length);
        assert.ok(a.applied.length === 0 || b.applied.length === 0, 'one process did all the work, the other waited');
      } finally {
        await other.close();
        await database.drop();
      }
    });
  },
);
