// Ceiling (b) of `npm run bench`: the smallest payout-shaped transaction behind a plain HTTP server
// that shares none of the service's code — Fastify and a node-postgres pool of the service's default
// size (DB_POOL_SIZE, 20), a key checked against the one it was given, and one route that inserts a
// payment, two postings, updates one hot balance row and inserts an outbox row in one transaction, on
// tables of its own (bench_*). What one payout costs at minimum when each payout is its own
// transaction, measured the way the service is (same machine, same load generator, same database);
// a change to the service never moves it.
//
//   DATABASE_URL=postgres://… PORT=… CEILING_API_KEY=… node --import tsx bench/ceiling-server.ts
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';

/** The service's default DB_POOL_SIZE: the ceiling gets the connections a service process gets. */
const POOL_SIZE = 20;

const TABLES = `
  CREATE TABLE IF NOT EXISTS bench_payments (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS bench_postings (payment_id uuid NOT NULL, account text NOT NULL, amount bigint NOT NULL, PRIMARY KEY (payment_id, account));
  CREATE TABLE IF NOT EXISTS bench_balances (id integer PRIMARY KEY, balance bigint NOT NULL);
  CREATE TABLE IF NOT EXISTS bench_outbox (id bigserial PRIMARY KEY, payment_id uuid NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  INSERT INTO bench_balances (id, balance) VALUES (1, 0) ON CONFLICT DO NOTHING;
`;

const databaseUrl = process.env.DATABASE_URL;
const apiKey = process.env.CEILING_API_KEY;
if (!databaseUrl || !apiKey) {
  process.stderr.write('ceiling server: set DATABASE_URL and CEILING_API_KEY\n');
  process.exit(2);
}
const tenantId = randomUUID();
const pool = new pg.Pool({ connectionString: databaseUrl, max: POOL_SIZE });
await pool.query(TABLES);

const app = Fastify({ logger: false });
app.get('/health/ready', async () => ({ status: 'ready' }));
app.post('/bench/ceiling-transaction', async (request, reply) => {
  if (request.headers['x-api-key'] !== apiKey) return reply.code(401).send({ error: { code: 'unauthorized' } });
  const id = randomUUID();
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO bench_payments (id, tenant_id, amount) VALUES ($1, $2, $3)', [
      id,
      tenantId,
      '1010000',
    ]);
    await client.query(
      `INSERT INTO bench_postings (payment_id, account, amount) VALUES ($1, 'prefunding', 1010000), ($1, 'in_flight', -1010000)`,
      [id],
    );
    await client.query('UPDATE bench_balances SET balance = balance - 1010000 WHERE id = 1');
    await client.query(`INSERT INTO bench_outbox (payment_id, payload) VALUES ($1, '{"amount":"1000000"}')`, [id]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  return reply.code(201).send({ id });
});
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST ?? '127.0.0.1' });
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
