// DATABASE_POOLER=transaction, seen from PostgreSQL: no statement is prepared under a name, no setting
// is a startup option (a session's defaults stay the server's), every transaction and every statement
// run on its own carries the service's settings as SET LOCAL, and the work that needs a session of its
// own (migrations' advisory lock) goes to DATABASE_DIRECT_URL. Then the same through a real PgBouncer in
// transaction pooling mode, when it is installed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../support/pgbouncer.ts';

const STATEMENT_TIMEOUT_MS = 1234;
const LOCK_TIMEOUT_MS = 567;
/** What withConnection's direct connection calls itself, so that the test can tell where it went. */
const DIRECT_APP = 'bds-direct-probe';

function pooled(url: string, directUrl: string | undefined): PostgresDatabase {
  return new PostgresDatabase(url, 4, {
    pooler: 'transaction',
    directUrl,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    lockTimeoutMs: LOCK_TIMEOUT_MS,
  });
}

function withApplicationName(url: string, name: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/** The settings a statement runs with, and the session defaults a RESET would go back to. */
const SETTINGS_SQL = `SELECT current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout,
        current_setting('jit') AS jit, current_setting('synchronous_commit') AS synchronous_commit,
        current_setting('idle_in_transaction_session_timeout') AS idle,
        (SELECT reset_val FROM pg_settings WHERE name = 'statement_timeout') AS session_statement_timeout,
        (SELECT count(*)::int FROM pg_prepared_statements) AS prepared, $1::int AS probe`;

interface Settings {
  statement_timeout: string;
  lock_timeout: string;
  jit: string;
  synchronous_commit: string;
  idle: string;
  session_statement_timeout: string;
  prepared: number;
}

function assertService(settings: Settings | undefined, synchronousCommit: 'on' | 'off'): void {
  assert.ok(settings);
  assert.equal(settings.statement_timeout, `${STATEMENT_TIMEOUT_MS}ms`);
  assert.equal(settings.lock_timeout, `${LOCK_TIMEOUT_MS}ms`);
  assert.equal(settings.idle, '30s');
  assert.equal(settings.jit, 'off');
  assert.equal(settings.synchronous_commit, synchronousCommit);
}

describe(
  'DATABASE_POOLER=transaction',
  { skip: ENGINE !== 'postgres' ? 'PostgreSQL only: the embedded engine has no pooler' : false },
  () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase({ empty: true });
    });
    after(async () => {
      await database.drop();
    });

    it('sets every setting per transaction and prepares nothing by name', async () => {
      const db = pooled(database.url!, undefined);
      try {
        const alone = (await db.query<Settings>(SETTINGS_SQL, [1])).rows[0];
        assertService(alone, 'on');
        // Nothing of the service's is the session's own: a pooler would hand the session to others.
        assert.equal(alone!.session_statement_timeout, '0');
        assert.equal(alone!.prepared, 0);
        assertService((await db.query<Settings>(SETTINGS_SQL, [1], { plan: 'keyed' })).rows[0], 'on');
        assertService((await db.transaction((tx) => tx.query<Settings>(SETTINGS_SQL, [2]))).rows[0], 'on');
        assertService(
          (await db.transaction((tx) => tx.query<Settings>(SETTINGS_SQL, [2]), { commit: true, seqScans: false }))
            .rows[0],
          'on',
        );
        assertService((await db.relaxed.query<Settings>(SETTINGS_SQL, [3])).rows[0], 'off');
        assert.equal((await db.query<Settings>(SETTINGS_SQL, [4])).rows[0]!.prepared, 0);
        // The settings take no snapshot: a transaction may still choose its isolation (the reconciliation's reads do).
        const isolation = await db.transaction(async (tx) => {
          await tx.exec('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
          return (await tx.query<{ level: string }>(`SELECT current_setting('transaction_isolation') AS level`))
            .rows[0]!.level;
        });
        assert.equal(isolation, 'repeatable read');
      } finally {
        await db.close();
      }
    });

    it('bounds a statement run on its own by DB_STATEMENT_TIMEOUT_MS', async () => {
      const db = pooled(database.url!, undefined);
      try {
        await assert.rejects(db.query('SELECT pg_sleep(5)'), /statement timeout/);
        await assert.rejects(db.exec('SELECT pg_sleep(5)'), /statement timeout/);
        await assert.rejects(db.relaxed.query('SELECT pg_sleep($1)', [5]), /statement timeout/);
      } finally {
        await db.close();
      }
    });

    it('runs session work on DATABASE_DIRECT_URL, and refuses it without one', async () => {
      const without = pooled(database.url!, undefined);
      try {
        await assert.rejects(
          without.withConnection(async () => undefined),
          /DATABASE_DIRECT_URL/,
        );
      } finally {
        await without.close();
      }
      const db = pooled(database.url!, withApplicationName(database.url!, DIRECT_APP));
      try {
        const seen = await db.withConnection((conn) =>
          conn.query<{ app: string }>(`SELECT current_setting('application_name') AS app`),
        );
        assert.equal(seen.rows[0]!.app, DIRECT_APP);
      } finally {
        await db.close();
      }
    });

    describe(
      'through PgBouncer (pool_mode=transaction)',
      { skip: pgbouncerBinary() === undefined ? 'pgbouncer is not installed' : false },
      () => {
        let bouncer: PgBouncer;
        let db: PostgresDatabase;
        before(async () => {
          bouncer = await startPgBouncer(process.env.DATABASE_URL!, new URL(database.url!).pathname.slice(1), {
            poolSize: 2,
          });
          db = pooled(bouncer.url, database.url!);
        });
        after(async () => {
          await db.close();
          await bouncer.stop();
        });

        it('migrates over the direct connection and serves statements and transactions through the pooler', async () => {
          await migrate(db);
          assert.deepEqual((await migrate(db)).applied, []);
          // More concurrent work than the pooler's two server connections: each transaction keeps its own settings.
          const all = await Promise.all(
            Array.from({ length: 12 }, (_, i) =>
              i % 3 === 0
                ? db.query<Settings>(SETTINGS_SQL, [i])
                : i % 3 === 1
                  ? db.transaction((tx) => tx.query<Settings>(SETTINGS_SQL, [i]))
                  : db.relaxed.query<Settings>(SETTINGS_SQL, [i]),
            ),
          );
          all.forEach((result, i) => assertService(result.rows[0], i % 3 === 2 ? 'off' : 'on'));
          assert.ok(all.every((result) => result.rows[0]!.prepared === 0));
          await assert.rejects(db.query('SELECT pg_sleep(5)'), /statement timeout/);
        });
      },
    );
  },
);
