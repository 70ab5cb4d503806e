// A process SIGKILLed after it stored an anomaly and before the rail heard its acknowledgement. The
// test holds the rail's notification rows locked (the sandbox rail's own table, on the shared
// database), so the acknowledgement waits; once the anomaly rows are committed the process is killed
// at that instant, the rows are released and the process restarted. The rail hands the notifications
// out again, and each anomaly is still stored exactly once, then acknowledged. Both paths: a
// contradiction of a payment (written by the outcome commit) and a reference nobody has (written by
// the reaper itself).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINE } from '../support/harness.ts';
import { call, rows, setupTenant, waitFor, withServices } from '../support/process-scenario.ts';

/** Bound of each wait on the processes (a reaper pass, a restart). */
const WAIT_MS = 30_000;
/** Tries at catching the process between storing and acknowledging (see the loop). */
const ATTEMPTS_MAX = 5;

const SENDER = {
  nationalId: 'V11222333',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '04121234567',
  email: 'ana@example.com',
};

describe(
  'a process killed between storing an anomaly and acknowledging it to the rail',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs a PostgreSQL server (DATABASE_URL): the process is killed and restarted on a shared database'
        : false,
  },
  () => {
    it('stores each anomaly exactly once after the restart, then acknowledges it', { timeout: 110_000 }, async (t) => {
      const env = { DB_POOL_SIZE: '6', REAPER_INTERVAL_MS: '200', SANDBOX_SETTLE_DELAY_MS: '500' };
      await withServices([{ role: 'all' }], env, async ({ pool, platformKey, cluster }) => {
        const base = cluster.baseUrl(0);
        const context = () => `\n${cluster.report(40)}`;
        const tenant = await setupTenant(base, platformKey, { funding: 1_000_000_000n });
        const api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) =>
          call(base, tenant.apiKey, method, url, body, headers);

        // A payout that fails at once (V99990004), then two notifications: it settled after all, and a
        // transfer nobody has. The test can lock a notification only once it exists, so a reaper pass
        // may handle one in between: that attempt proves nothing and is made again, with new ones.
        const payments: string[] = [];
        let caught = false;
        for (let attempt = 1; attempt <= ATTEMPTS_MAX && !caught; attempt++) {
          const quote = await api('POST', '/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 } });
          assert.equal(quote.status, 201, quote.text);
          const beneficiary = {
            fullName: 'María Pérez',
            nationalId: 'V99990004',
            bankCode: '0102',
            phone: '04141234567',
          };
          const made = await api(
            'POST',
            '/v1/payouts',
            { quoteId: quote.json.id, method: 'pago_movil', sender: SENDER, beneficiary },
            { 'idempotency-key': `anomaly-crash-${attempt}` },
          );
          assert.equal(made.status, 201, made.text);
          assert.equal(made.json.status, 'failed');
          payments.push(made.json.id);

          const holder = await pool.connect();
          try {
            await holder.query('BEGIN');
            const contradiction = await api('POST', '/v1/sandbox/rail-notifications', {
              paymentId: made.json.id,
              status: 'settled',
            });
            const stray = await api('POST', '/v1/sandbox/rail-notifications', { status: 'reversed' });
            assert.equal(contradiction.status, 202, contradiction.text);
            assert.equal(stray.status, 202, stray.text);
            const noticeIds = [contradiction.json.id, stray.json.id].map((id: string) => id.replace(/^notice:/, ''));
            // Their acknowledgements wait for these locks: the kill comes between the commit and the ack.
            const locked = await holder.query(
              `SELECT id FROM sandbox_rail_notifications WHERE id = ANY($1::uuid[]) FOR UPDATE`,
              [noticeIds],
            );
            assert.equal(locked.rowCount, 2);
            const [waiting] = await rows(
              pool,
              `SELECT count(*)::int AS n FROM sandbox_rail_notifications WHERE id = ANY($1::uuid[]) AND acknowledged_at IS NULL`,
              [noticeIds],
            );
            if (waiting.n !== 2) {
              t.diagnostic(
                `attempt ${attempt}: a reaper pass acknowledged a notification before the test locked it; again`,
              );
              continue;
            }

            const stored = await waitFor(
              WAIT_MS,
              async () => {
                const found = await rows(
                  pool,
                  `SELECT kind FROM anomalies WHERE raw->>'id' = ANY($1::text[]) ORDER BY kind`,
                  [[contradiction.json.id, stray.json.id]],
                );
                return { done: found.length === 2, detail: JSON.stringify(found) };
              },
              50,
            );
            assert.ok(
              stored.done,
              `both anomalies are committed before any acknowledgement: ${stored.detail}${context()}`,
            );
            const [still] = await rows(
              pool,
              `SELECT count(*)::int AS n FROM sandbox_rail_notifications WHERE id = ANY($1::uuid[]) AND acknowledged_at IS NULL`,
              [noticeIds],
            );
            assert.equal(still.n, 2, 'neither is acknowledged yet');
            await cluster.kill(0, 'SIGKILL');
            caught = true;
            t.diagnostic(
              `attempt ${attempt}: anomalies stored ${stored.ms} ms after the notifications; process killed before acknowledging`,
            );
          } finally {
            await holder.query('ROLLBACK');
            holder.release();
          }
        }
        assert.ok(caught, `in ${ATTEMPTS_MAX} attempts the process was never caught between storing and acknowledging`);

        await cluster.restart(0);
        const acknowledged = await waitFor(WAIT_MS, async () => {
          const [left] = await rows(
            pool,
            `SELECT count(*)::int AS n FROM sandbox_rail_notifications WHERE tenant_id = $1 AND acknowledged_at IS NULL`,
            [tenant.tenantId],
          );
          return { done: left.n === 0, detail: `${left.n} not acknowledged` };
        });
        assert.ok(acknowledged.done, `the restarted process acknowledges both: ${acknowledged.detail}${context()}`);

        // Each attempt's pair is stored exactly once: one contradiction per payment, one stray each.
        const anomalies = await rows(
          pool,
          `SELECT kind, tenant_id, payment_id FROM anomalies ORDER BY kind, payment_id`,
        );
        assert.deepEqual(
          anomalies,
          [
            ...payments
              .map((id) => ({ kind: 'settled_after_failed', tenant_id: tenant.tenantId, payment_id: id }))
              .sort((a, b) => a.payment_id.localeCompare(b.payment_id)),
            ...payments.map(() => ({ kind: 'unknown_reference', tenant_id: tenant.tenantId, payment_id: null })),
          ],
          'each stored exactly once',
        );
        for (const id of payments) {
          const [payment] = await rows(pool, `SELECT status FROM payments WHERE id = $1`, [id]);
          assert.equal(payment.status, 'failed', 'the payment is as it was');
          const events = await rows(pool, `SELECT event_type FROM outbox_events WHERE aggregate_id = $1`, [id]);
          assert.deepEqual(events, [{ event_type: 'payment.failed' }]);
        }
        const listed = await call(base, platformKey, 'GET', '/v1/admin/anomalies?status=open&mode=all');
        assert.equal(listed.json.data.length, 2 * payments.length, listed.text);
        assert.deepEqual(cluster.unexpectedExits(), [], context());
      });
    });
  },
);
