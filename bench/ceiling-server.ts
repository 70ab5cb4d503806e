// Ceiling (b) of `npm run bench`: the service's app (buildApp: the same pool, auth, hooks and HTTP
// stack as POST /v1/payouts) plus one route of the benchmark's own, the smallest payout-shaped
// transaction, on tables the benchmark creates (bench_*). It lives here, not in src/: the service never
// ships it. Configured from the environment like the service (DATABASE_URL, PORT, HOST, …); the
// database must already be migrated (the bench's service process does that).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { buildApp, loggerOptions } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import { openDatabase } from '../src/db/open.ts';
import type { App } from '../src/http/types.ts';

const BENCH_CEILING_TABLES = `
  CREATE TABLE IF NOT EXISTS bench_payments (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS bench_postings (payment_id uuid NOT NULL, account text NOT NULL, amount bigint NOT NULL, PRIMARY KEY (payment_id, account));
  CREATE TABLE IF NOT EXISTS bench_balances (id integer PRIMARY KEY, balance bigint NOT NULL);
  CREATE TABLE IF NOT EXISTS bench_outbox (id bigserial PRIMARY KEY, payment_id uuid NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  INSERT INTO bench_balances (id, balance) VALUES (1, 0) ON CONFLICT DO NOTHING;
`;

/**
 * Insert a payment, two ledger postings, update one hot balance row, insert an outbox row, in one
 * transaction: what one payout costs at minimum if each payout is its own transaction.
 */
function ceilingTransaction(db: Database) {
  return async function ceilingTransaction(request: FastifyRequest, reply: FastifyReply) {
    const id = randomUUID();
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO bench_payments (id, tenant_id, amount) VALUES ($1, $2, $3)', [id, request.auth!.tenantId, 1_010_000n]);
      await tx.query(
        `INSERT INTO bench_postings (payment_id, account, amount) VALUES ($1, 'prefunding', 1010000), ($1, 'in_flight', -1010000)`,
        [id],
      );
      await tx.query('UPDATE bench_balances SET balance = balance - 1010000 WHERE id = 1');
      await tx.query(`INSERT INTO bench_outbox (payment_id, payload) VALUES ($1, '{"amount":"1000000"}')`, [id]);
    });
    return reply.code(201).send({ id });
  };
}

/** POST /bench/ceiling-transaction: keyed like a payout (payments:write), hidden from the document. */
function ceilingTransactionRoute(app: App, db: Database): void {
  app.post('/bench/ceiling-transaction', { config: { scopes: ['payments:write'] }, schema: { hide: true } }, ceilingTransaction(db));
}

async function main(): Promise<void> {
  const config = loadConfig();
  const db = await openDatabase(config, { purpose: 'bench ceiling server' });
  await db.exec(BENCH_CEILING_TABLES);
  const { app } = await buildApp({ config, db, logger: loggerOptions(config.logLevel) });
  ceilingTransactionRoute(app, db);
  await app.listen({ port: config.port, host: config.host });
  process.on('SIGTERM', () => void app.close().then(() => db.close()).then(() => process.exit(0)));
}

await main();
