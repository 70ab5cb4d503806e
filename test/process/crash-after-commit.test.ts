// A process SIGKILLed right after a payout's batch committed, while its rail call hangs (V99990009,
// SANDBOX_RAIL_TIMEOUT_MS=5000): the key's answer was never recorded and the client never got one.
// After a restart the same key and body must answer 201 with THAT payment (after 409
// idempotency_request_in_progress while the key is still held), a different body 409
// idempotency_key_reused; the payment resolves once, and its quote names it alone.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChaosClient } from '../support/chaos-client.ts';
import { ENGINE } from '../support/harness.ts';
import { call, rows, setupTenant, waitFor, withServices } from '../support/process-scenario.ts';

const RAIL_TIMEOUT_MS = 5_000;
/**
 * The payout path calls the rail only within REAPER_INTERVAL_MS of its batch's start (later, the
 * reaper sends it); the batch statement alone can take ~0.5 s here (see the report on JIT), so the
 * window is made wide enough for the rail call to be made, and to hang, every time.
 */
const REAPER_INTERVAL_MS = 2_000;
/** How long the batch holds the key for the answer (domain/send-schedule.ts keyHeldMs: window + rail timeout + 5 s margin). */
const KEY_HOLD_MS = REAPER_INTERVAL_MS + RAIL_TIMEOUT_MS + 5_000;

const post = (base: string, apiKey: string, url: string, body: unknown, headers: Record<string, string> = {}) =>
  call(base, apiKey, 'POST', url, body, headers);

describe(
  'a process killed after the payout committed, before it answered',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs a PostgreSQL server (DATABASE_URL): the process is killed and restarted on a shared database'
        : false,
  },
  () => {
    it('answers the retry with the committed payment, once, and resolves it once', { timeout: 110_000 }, async (t) => {
      const env = {
        DB_POOL_SIZE: '6',
        SANDBOX_RAIL_TIMEOUT_MS: String(RAIL_TIMEOUT_MS),
        SANDBOX_SETTLE_DELAY_MS: '500',
        REAPER_INTERVAL_MS: String(REAPER_INTERVAL_MS),
        DISPATCHER_INTERVAL_MS: '50',
        WEBHOOK_BACKOFF_SCALE: '0.01',
        QUOTE_TTL_SECONDS: '600',
      };
      await withServices([{ role: 'all' }], env, async ({ pool, receiver, platformKey, cluster }) => {
        const base = cluster.baseUrl(0);
        const context = () => `\n${cluster!.report(40)}`;
        const tenant = await setupTenant(base, platformKey, { funding: 1_000_000_000n, webhookUrl: receiver.url() });

        const quote = await post(base, tenant.apiKey, '/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 } });
        assert.equal(quote.status, 201, quote.text);
        const key = `crash-${randomUUID()}`;
        const body = ChaosClient.bodyOf({ key, nationalId: 'V99990009', deliver: 1_000_000 }, quote.json.id);

        // The payout: its batch commits, then the rail call hangs for RAIL_TIMEOUT_MS.
        const sentAt = Date.now();
        const first = post(base, tenant.apiKey, '/v1/payouts', body, { 'idempotency-key': key }).then(
          (r) => ({ answered: true as const, status: r.status, text: r.text, ms: Date.now() - sentAt }),
          (error: Error) => ({
            answered: false as const,
            error: String((error.cause as Error)?.message ?? error.message),
            ms: Date.now() - sentAt,
          }),
        );
        const committed = await waitFor(
          20_000,
          async () => {
            const found = await rows(pool, `SELECT id FROM payments WHERE tenant_id = $1 AND quote_id = $2`, [
              tenant.tenantId,
              quote.json.id,
            ]);
            return { done: found.length > 0, detail: `${found.length} payments` };
          },
          5,
        );
        assert.ok(committed.done, `the payment was never committed: ${committed.detail}${context()}`);
        await cluster.kill(0, 'SIGKILL');
        const killedAt = Date.now();
        const firstOutcome = await first;
        t.diagnostic(
          `payment committed ${committed.ms} ms after the request; killed ${killedAt - sentAt} ms after it; first request: ${JSON.stringify(firstOutcome)}`,
        );
        assert.equal(
          firstOutcome.answered,
          false,
          `the first request must not have been answered (the rail hangs ${RAIL_TIMEOUT_MS} ms after the commit): ${JSON.stringify(firstOutcome)}`,
        );

        const [payment] = await rows(
          pool,
          `SELECT id, status, quote_id FROM payments WHERE tenant_id = $1 AND quote_id = $2`,
          [tenant.tenantId, quote.json.id],
        );
        const [keyRow] = await rows(
          pool,
          `SELECT status, payment_id, locked_until, response_status, response_body FROM idempotency_keys WHERE tenant_id = $1 AND key = $2`,
          [tenant.tenantId, key],
        );
        assert.equal(keyRow?.payment_id, payment.id, `the key names the committed payment: ${JSON.stringify(keyRow)}`);
        assert.equal(
          keyRow.status,
          'in_progress',
          `precondition: at the kill the payout is in its rail call, its answer not recorded yet; the key is ${JSON.stringify(keyRow)}${context()}`,
        );
        const transfersAtKill = await rows(
          pool,
          `SELECT reference, submissions FROM sandbox_rail_transfers WHERE reference = $1`,
          [payment.id],
        );
        t.diagnostic(
          `at the kill: payment ${payment.id} ${payment.status}, key ${JSON.stringify(keyRow)}, rail transfer ${transfersAtKill.length ? 'recorded' : 'not recorded'}`,
        );

        await cluster.restart(0);

        // The same key and body, retried as a client does: 409 in progress (the key is held), then 201.
        const retries: string[] = [];
        let answer: Awaited<ReturnType<typeof post>> | undefined;
        const retried = await waitFor(
          KEY_HOLD_MS + 20_000,
          async () => {
            try {
              const r = await post(base, tenant.apiKey, '/v1/payouts', body, { 'idempotency-key': key });
              retries.push(
                `${Date.now() - killedAt}ms ${r.status}${r.json?.error?.code ? `:${r.json.error.code}` : ''}`,
              );
              const retryable =
                r.status === 503 || (r.status === 409 && r.json?.error?.code === 'idempotency_request_in_progress');
              if (!retryable) answer = r;
              return { done: !retryable, detail: r.text };
            } catch (error) {
              retries.push(`${Date.now() - killedAt}ms ${(error as Error).message}`);
              return { done: false, detail: (error as Error).message };
            }
          },
          250,
        );
        t.diagnostic(
          `retries after the kill: ${retries.length > 12 ? [...retries.slice(0, 4), '…', ...retries.slice(-4)].join(', ') : retries.join(', ')}`,
        );
        assert.ok(
          retried.done && answer,
          `the retry never got a final answer: ${retried.detail}\n${retries.join('\n')}${context()}`,
        );
        assert.equal(
          answer.status,
          201,
          `the retry with the same key and body answers 201: ${answer.text}\n${retries.join('\n')}${context()}`,
        );
        assert.equal(answer.json.id, payment.id, `the retry answers with the committed payment: ${answer.text}`);
        assert.equal(answer.headers.get('idempotent-replayed'), 'true', 'the retry is marked as a replay');
        assert.ok(!retries.some((r) => / 500/.test(r)), `no 500 while retrying: ${retries.join(', ')}`);

        const reused = await post(
          base,
          tenant.apiKey,
          '/v1/payouts',
          { ...body, beneficiary: { ...(body.beneficiary as object), fullName: 'Otra Persona' } },
          { 'idempotency-key': key },
        );
        assert.equal(reused.status, 409, reused.text);
        assert.equal(reused.json?.error?.code, 'idempotency_key_reused', reused.text);

        const resolved = await waitFor(30_000, async () => {
          const [p] = await rows(pool, `SELECT status FROM payments WHERE tenant_id = $1 AND id = $2`, [
            tenant.tenantId,
            payment.id,
          ]);
          const [e] = await rows(
            pool,
            `SELECT count(*) FILTER (WHERE status <> 'published')::int AS unpublished FROM outbox_events WHERE tenant_id = $1`,
            [tenant.tenantId],
          );
          return {
            done: p.status === 'settled' && e.unpublished === 0,
            detail: `payment ${p.status}, ${e.unpublished} events not published`,
          };
        });
        assert.ok(resolved.done, `the payment resolves as settled: ${resolved.detail}${context()}`);

        const again = await post(base, tenant.apiKey, '/v1/payouts', body, { 'idempotency-key': key });
        assert.equal(again.status, 201, again.text);
        assert.equal(again.json.id, payment.id, 'a later retry still names the same payment');

        const payments = await rows(pool, `SELECT id, status, quote_id FROM payments WHERE tenant_id = $1`, [
          tenant.tenantId,
        ]);
        assert.deepEqual(
          payments.map((p) => p.id),
          [payment.id],
          `one payment in all: ${JSON.stringify(payments)}`,
        );
        const [q] = await rows(pool, `SELECT payment_id, consumed_at FROM quotes WHERE tenant_id = $1 AND id = $2`, [
          tenant.tenantId,
          quote.json.id,
        ]);
        assert.equal(q.payment_id, payment.id, `the quote was consumed by that payment: ${JSON.stringify(q)}`);
        const events = await rows(
          pool,
          `SELECT event_type, status FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2`,
          [tenant.tenantId, payment.id],
        );
        assert.deepEqual(events, [{ event_type: 'payment.settled', status: 'published' }], 'exactly one outcome event');
        const transfers = await rows(pool, `SELECT submissions FROM sandbox_rail_transfers WHERE reference = $1`, [
          payment.id,
        ]);
        assert.deepEqual(transfers, [{ submissions: 1 }], 'the rail was asked to send it once');
        const entries = await rows(
          pool,
          `SELECT kind FROM ledger_transactions WHERE tenant_id = $1 AND payment_id = $2 ORDER BY kind`,
          [tenant.tenantId, payment.id],
        );
        assert.deepEqual(
          entries.map((e) => e.kind),
          ['payout', 'payout_settlement'],
        );
        const unbalanced = await rows(
          pool,
          `SELECT transaction_id FROM ledger_postings GROUP BY tenant_id, transaction_id, asset HAVING sum(amount) <> 0`,
        );
        assert.deepEqual(unbalanced, []);
        assert.deepEqual(cluster.unexpectedExits(), [], context());
      });
    });
  },
);
