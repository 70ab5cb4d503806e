// V99990009 (the rail call times out) answers `201 unknown`, without `totalDebited`, whatever the
// sandbox settle delay: with a short one the reaper, running meanwhile, asks the rail and settles the
// payment while the payout path is still waiting for the rail's timeout, and the answer must not
// depend on that race. The reaper resolves the payment afterwards, once.
import assert from 'node:assert/strict';
import pino from 'pino';
import { describe, it } from 'node:test';
import { startLoop } from '../../src/workers/run-loop.ts';
import { startTestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, reaperOf } from '../support/payouts.ts';
import { waitFor } from '../support/process-scenario.ts';

/** The default SANDBOX_RAIL_TIMEOUT_MS: how long the payout path waits for the hanging rail. */
const RAIL_TIMEOUT_MS = 2_000;
/** Bound of the wait for the reaper to settle the payment after the answer. */
const SETTLED_WITHIN_MS = 15_000;

for (const settleDelay of ['0', '300', undefined]) {
  const label = settleDelay === undefined ? 'the default settle delay' : `SANDBOX_SETTLE_DELAY_MS=${settleDelay}`;
  describe(`V99990009 with ${label} and the reaper running`, () => {
    it(
      'answers 201 unknown without totalDebited; the reaper settles it afterwards, once',
      { timeout: 60_000 },
      async (t) => {
        const app = await startTestApp({
          env: settleDelay === undefined ? {} : { SANDBOX_SETTLE_DELAY_MS: settleDelay },
        });
        const reaper = reaperOf(app);
        const loop = startLoop({
          name: 'reaper',
          intervalMs: app.config.reaperIntervalMs,
          runOnce: () => reaper.runOnce(),
          log: pino({ level: 'silent' }),
        });
        try {
          assert.equal(app.config.sandboxRailTimeoutMs, RAIL_TIMEOUT_MS);
          const { api } = await fundedTenant(app);
          const started = Date.now();
          const made = await payout(api, { beneficiary: beneficiary('V99990009') });
          const answeredMs = Date.now() - started;
          assert.equal(made.status, 201, made.raw);
          assert.equal(made.body.status, 'unknown', made.raw);
          assert.equal('totalDebited' in made.body, false, made.raw);
          assert.equal(made.body.bankReference, null, made.raw);
          assert.ok(answeredMs >= RAIL_TIMEOUT_MS, `answered after the rail's timeout (${answeredMs} ms)`);
          const atAnswer = (await api.get(`/v1/payments/${made.body.id}`)).body.status;
          t.diagnostic(`answered after ${answeredMs} ms; the payment was ${atAnswer} by then`);

          const settled = await waitFor(SETTLED_WITHIN_MS, async () => {
            const status = (await api.get(`/v1/payments/${made.body.id}`)).body.status;
            return { done: status === 'settled', detail: status };
          });
          assert.ok(settled.done, `the reaper settles it: ${settled.detail}`);
          const { rows } = await app.db.query<{ event_type: string }>(
            'SELECT event_type FROM outbox_events WHERE aggregate_id = $1',
            [made.body.id],
          );
          assert.deepEqual(
            rows.map((r) => r.event_type),
            ['payment.settled'],
          );
        } finally {
          await loop.stop();
          await app.close();
        }
      },
    );
  });
}
