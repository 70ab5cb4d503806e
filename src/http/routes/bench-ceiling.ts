import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import type { App } from '../types.ts';

/**
 * Benchmark ceiling (b) of `npm run bench`: the smallest payout-shaped transaction — insert a
 * payment, two ledger postings, update one hot balance row, insert an outbox row — through the same
 * pool, auth and HTTP stack as POST /v1/payouts. Registered only with BENCH_CEILING_ROUTE=on, on
 * tables the benchmark creates (bench_*); never part of the API.
 */
export async function benchCeilingRoute(app: App, db: Database): Promise<void> {
  app.post(
    '/bench/ceiling-transaction',
    { config: { scopes: ['payments:write'] }, schema: { hide: true } },
    async (request, reply) => {
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
    },
  );
}

export const BENCH_CEILING_TABLES = `
  CREATE TABLE IF NOT EXISTS bench_payments (id uuid PRIMARY KEY, tenant_id uuid NOT NULL, amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS bench_postings (payment_id uuid NOT NULL, account text NOT NULL, amount bigint NOT NULL, PRIMARY KEY (payment_id, account));
  CREATE TABLE IF NOT EXISTS bench_balances (id integer PRIMARY KEY, balance bigint NOT NULL);
  CREATE TABLE IF NOT EXISTS bench_outbox (id bigserial PRIMARY KEY, payment_id uuid NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  INSERT INTO bench_balances (id, balance) VALUES (1, 0) ON CONFLICT DO NOTHING;
`;
