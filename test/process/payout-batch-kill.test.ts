// A process SIGKILLed while it records a payout batch of 1,000 items: some of its payments are
// committed, the answer was never sent, the batch is left `receiving` under its 15 s lease. After a
// restart the same key and body (409 idempotency_request_in_progress until the lease passes) must
// complete THAT batch: every item listed once, each reference paid at most once, the payments made
// before the kill answered by reference, never made again. A retry with a new key pays nothing twice.
// Then everything resolves and the invariants of the chaos runs hold (ledger, events, rail, keys).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChaosClient, type PayoutSpec } from '../support/chaos-client.ts';
import { ENGINE } from '../support/harness.ts';
import {
  call,
  failureReport,
  FAST_ENV,
  finishRun,
  payoutMix,
  rows,
  setupTenant,
  waitFor,
  withServices,
} from '../support/process-scenario.ts';

const ITEMS = 1_000;
/** The batch's lease (services/payout-batches.ts) plus room for the restart and a loaded machine. */
const TAKE_OVER_WAIT_MS = 15_000 + 25_000;
/**
 * The kill comes once this many payments of the batch are committed: more than its first transaction
 * (a lone job) and its second (up to 128 payouts), so that many paid items must be answered by
 * reference on the retry, and well before the last of its ~8 transactions.
 */
const KILL_AT_PAYMENTS = 130;
/** The key an item's reference stands for (services/payout-batch-items.ts itemKeyOf). */
const itemKey = (reference: string) => `payout-batch-item\t${reference}`;

/** A batch item paying `spec` (its key is the reference), quoted at submission. */
function itemOf(spec: PayoutSpec): Record<string, unknown> {
  const { quoteId: _none, ...payout } = ChaosClient.bodyOf(spec, '');
  return { reference: spec.key, deliver: { asset: 'BS', amount: spec.deliver }, ...payout };
}

describe(
  'a process killed while it records a payout batch',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs a PostgreSQL server (DATABASE_URL): the process is killed and restarted on a shared database'
        : false,
  },
  () => {
    it(
      'completes the batch on the retry with the same key, paying each reference at most once',
      { timeout: 115_000 },
      async (t) => {
        const testStarted = Date.now();
        await withServices(
          [{ role: 'all' }],
          { DB_POOL_SIZE: '8', ...FAST_ENV },
          async ({ pool, receiver, platformKey, cluster, dbname }) => {
            const base = cluster.baseUrl(0);
            const context = () => `\n${cluster.report(40)}`;
            const customerIds = [randomUUID(), randomUUID()];
            const tenant = await setupTenant(base, platformKey, {
              funding: 1_000_000_000_000n,
              webhookUrl: receiver.url(),
              customerIds,
              limitRules: true,
            });
            const specs = payoutMix(ITEMS, {
              prefix: `kill-${randomUUID().slice(0, 8)}`,
              customerIds,
              outcomes: [
                'V99990001',
                'plain',
                'V99990002',
                'V99990003',
                'below_floor',
                'V99990004',
                'plain',
                'V99990005',
                'V99990006',
                'V99990007',
                'V99990008',
                'plain',
                'V99990009',
              ],
            });
            const body = { items: specs.map(itemOf) };
            const key = `batch-${randomUUID()}`;
            const post = (k: string) =>
              call(base, tenant.apiKey, 'POST', '/v1/payout-batches', body, { 'idempotency-key': k });

            // The batch; killed once some of its payments are committed, before its answer.
            const sentAt = Date.now();
            const first = post(key).then(
              (r) => ({ answered: true as const, status: r.status, text: r.text.slice(0, 300) }),
              (error: Error) => ({
                answered: false as const,
                error: String((error.cause as Error)?.message ?? error.message),
              }),
            );
            const committed = await waitFor(
              30_000,
              async () => {
                const [p] = await rows(
                  pool,
                  `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1 AND batch_id IS NOT NULL`,
                  [tenant.tenantId],
                );
                return { done: p.n >= KILL_AT_PAYMENTS, detail: `${p.n} payments of the batch` };
              },
              5,
            );
            assert.ok(committed.done, `no payment of the batch was committed: ${committed.detail}${context()}`);
            await cluster.kill(0, 'SIGKILL');
            const killedAt = Date.now();
            const firstOutcome = await first;
            const [atKill] = await rows(
              pool,
              `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1 AND batch_id IS NOT NULL`,
              [tenant.tenantId],
            );
            const [batchRow] = await rows(
              pool,
              `SELECT id, status FROM payout_batches WHERE tenant_id = $1 AND idempotency_key = $2`,
              [tenant.tenantId, key],
            );
            t.diagnostic(
              `first payment ${committed.ms} ms after the request; killed ${killedAt - sentAt} ms after it with ${atKill.n} of ${ITEMS} payments; batch ${JSON.stringify(batchRow)}; first request: ${JSON.stringify(firstOutcome)}`,
            );
            assert.equal(
              firstOutcome.answered,
              false,
              `precondition: the kill came before the answer: ${JSON.stringify(firstOutcome)}`,
            );
            assert.equal(
              batchRow?.status,
              'receiving',
              `precondition: the batch was still recording its items: ${JSON.stringify(batchRow)}`,
            );

            await cluster.restart(0);

            // The same key and body, as a client retries: 409 while the lease holds, then the batch.
            const retries: string[] = [];
            let answer: Awaited<ReturnType<typeof post>> | undefined;
            const retried = await waitFor(
              TAKE_OVER_WAIT_MS,
              async () => {
                const r = await post(key);
                retries.push(
                  `${Date.now() - killedAt}ms ${r.status}${r.json?.error?.code ? `:${r.json.error.code}` : ''}`,
                );
                const retryable =
                  r.status === 503 || (r.status === 409 && r.json?.error?.code === 'idempotency_request_in_progress');
                if (!retryable) answer = r;
                return { done: !retryable, detail: r.text.slice(0, 300) };
              },
              500,
            );
            t.diagnostic(
              `retries after the kill: ${retries.length > 8 ? [...retries.slice(0, 3), '…', ...retries.slice(-3)].join(', ') : retries.join(', ')}`,
            );
            assert.ok(
              retried.done && answer,
              `the retry never got a final answer: ${retried.detail}\n${retries.join('\n')}${context()}`,
            );
            assert.equal(answer.status, 201, `${answer.text.slice(0, 500)}\n${retries.join('\n')}`);
            assert.equal(
              answer.headers.get('idempotent-replayed'),
              'true',
              'the retry completes the batch its key names',
            );
            assert.ok(!retries.some((r) => / 500/.test(r)), `no 500 while retrying: ${retries.join(', ')}`);
            const batch = answer.json;
            assert.equal(batch.id, batchRow.id);
            assert.equal(batch.status, 'processing');

            // Every item once, in order; each paid once; the batch's payments are exactly its paid items'.
            assert.deepEqual(
              batch.items.map((i: any) => i.index),
              specs.map((_, n) => n),
            );
            assert.deepEqual(
              batch.items.map((i: any) => i.reference),
              specs.map((s) => s.key),
            );
            const refused = batch.items.filter((i: any) => i.paymentId === null);
            assert.deepEqual(refused, [], 'nothing refused: ample funds and limits');
            const paid = batch.items.map((i: any) => i.paymentId as string);
            assert.equal(new Set(paid).size, ITEMS, 'one payment per item');
            const ofBatch = await rows(pool, `SELECT id FROM payments WHERE tenant_id = $1 AND batch_id = $2`, [
              tenant.tenantId,
              batch.id,
            ]);
            assert.deepEqual(
              ofBatch.map((p) => p.id).sort(),
              [...paid].sort(),
              'the payments of the batch are those its items name',
            );
            const [all] = await rows(pool, `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1`, [
              tenant.tenantId,
            ]);
            assert.equal(all.n, ITEMS, 'no payment beyond one per reference');

            // A retry with a new key answers every reference with its payment and pays nothing.
            const again = await post(`batch-${randomUUID()}`);
            assert.equal(again.status, 201, again.text.slice(0, 500));
            assert.notEqual(again.json.id, batch.id);
            assert.deepEqual(
              again.json.items.map((i: any) => i.paymentId),
              paid,
            );
            const [after] = await rows(pool, `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1`, [
              tenant.tenantId,
            ]);
            assert.equal(after.n, ITEMS, 'the new key paid nothing');

            // The chaos runs' invariants, each item standing for one key (its reference's) and its payment.
            const client = new ChaosClient({ endpoints: () => cluster.httpBaseUrls(), apiKey: tenant.apiKey });
            const quoteOf = new Map(
              (await rows(pool, `SELECT id, quote_id FROM payments WHERE tenant_id = $1`, [tenant.tenantId])).map(
                (p) => [p.id as string, p.quote_id as string],
              ),
            );
            specs.forEach((spec, n) => {
              const paymentId = paid[n]!;
              client.records.set(itemKey(spec.key), {
                spec: { ...spec, key: itemKey(spec.key) },
                quoteId: quoteOf.get(paymentId),
                quoteAnswers: [],
                answers: [],
                paymentIds: new Set([paymentId, again.json.items[n].paymentId]),
                final: { status: 201, paymentId, paymentStatus: batch.items[n].status, body: batch.items[n] },
                serverErrors: [],
                startedAt: 0,
                finishedAt: 0,
              });
            });
            const result = await finishRun({
              name: 'payout-batch-kill',
              cluster,
              pool,
              tenant,
              client,
              receiver,
              settleTimeoutMs: Math.max(10_000, Math.min(60_000, 105_000 - (Date.now() - testStarted))),
              adminUrl: process.env.DATABASE_URL!,
              dbname,
            });
            t.diagnostic(result.summary);
            assert.deepEqual(result.violations, [], failureReport(result, cluster));
          },
        );
      },
    );
  },
);
