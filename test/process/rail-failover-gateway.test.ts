// Failover between two real gateways under load: the service (an API and a worker process on one
// PostgreSQL, as `npm start` runs them) pays live through two HTTP bank connectors, each a gateway
// simulator process; a routing rule makes gateway A the first choice. Mid-load A is SIGKILLed while
// it holds transfers it received but never answered: its breaker opens, new payouts go to gateway B,
// the payouts A held answer `unknown` and stay on A until it comes back (same port, same journal),
// then resolve by asking it; A carries new payouts again once its breaker closes. Afterwards every
// chaos invariant holds, and the gateways agree with the database: each payment received by exactly
// one gateway, once — the one it records.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { ChaosClient, type PayoutSpec } from '../support/chaos-client.ts';
import { connectorConfigOf, startGatewaySimulator, type GatewaySimulator } from '../support/gateway-simulator.ts';
import { ENGINE } from '../support/harness.ts';
import {
  call,
  failureReport,
  FAST_ENV,
  finishRun,
  paced,
  payoutMix,
  rows,
  setupTenant,
  withServices,
} from '../support/process-scenario.ts';
import { until } from '../support/until.ts';

const RAIL_A = 'banco-oeste';
/** Named to come first in the default order (connectors by name): only the routing rule puts A before it. */
const RAIL_B = 'banco-este';
const PAYOUTS = 240;
const CONCURRENCY = 12;
/** Payout i starts no earlier than i × PACE_MS: the load lasts about 17 s, through the kill and the restart. */
const PACE_MS = 70;
/** Payouts A receives and never answers, in flight when it dies. */
const HELD = 6;
/** A settles a transfer this long after receiving it: the held ones are still PROCESSING there when it dies. */
const A_SETTLE_DELAY_MS = 3_000;
/** Payouts gateway A carries before it is killed (the routing rule at work). */
const BEFORE_KILL_MIN = 20;
/** Payouts created after the kill that B must carry before A comes back. */
const FAILED_OVER_MIN = 30;
const TIMEOUT_MS = 115_000;
/** Each phase's wait on a loaded 2-core machine. */
const PHASE_BOUND_MS = 30_000;

interface Received {
  reference: string;
  submissions: number;
  scenario: string;
  receivedAt: string;
  status: string;
}

const heldOf = (received: Received[]) => received.filter((r) => r.scenario === 'hang').map((r) => r.reference);
const receivedBy = async (sim: GatewaySimulator) =>
  (await sim.control<{ data: Received[] }>('GET', '/_control/transfers')).data;

function railsFile(a: GatewaySimulator, b: GatewaySimulator): string {
  const file = path.join(a.dir, 'service-rails.json');
  // The rail timeout is long enough that the held sends are still waiting when A dies.
  const connectors = [
    connectorConfigOf(a, { name: RAIL_A, timeoutMs: 5_000 }),
    connectorConfigOf(b, { name: RAIL_B, timeoutMs: 5_000 }),
  ];
  writeFileSync(file, JSON.stringify({ connectors }), { mode: 0o600 });
  return file;
}

/** The gateways' view against the payments: one gateway per charged payment, the one it records, sent once. */
function gatewayViolations(payments: any[], atA: Received[], atB: Received[]): string[] {
  const violations: string[] = [];
  const fail = (what: string, offending: unknown[]) =>
    offending.length &&
    violations.push(`${what}: ${JSON.stringify(offending.slice(0, 15))} (${offending.length} in all)`);
  const a = new Map(atA.map((t) => [t.reference, t]));
  const b = new Map(atB.map((t) => [t.reference, t]));
  const ours = new Set(payments.map((p) => p.id as string));
  fail(
    'references received by both gateways',
    atA.filter((t) => b.has(t.reference)),
  );
  fail(
    'transfers a gateway was asked to send more than once',
    [...atA, ...atB].filter((t) => t.submissions !== 1),
  );
  fail(
    'transfers at a gateway for no payment of ours',
    [...atA, ...atB].filter((t) => !ours.has(t.reference)),
  );
  const misplaced = payments
    .filter((p) => p.funding_account !== null)
    .filter((p) =>
      p.rail === RAIL_A ? !a.has(p.id) || b.has(p.id) : p.rail === RAIL_B ? !b.has(p.id) || a.has(p.id) : true,
    )
    .map((p) => ({ id: p.id, rail: p.rail, atA: a.has(p.id), atB: b.has(p.id) }));
  fail('charged payments not received by exactly the gateway of the rail they record', misplaced);
  fail(
    'payments not settled (both gateways settle every transfer)',
    payments.filter((p) => p.status !== 'settled'),
  );
  return violations;
}

async function paymentsOf(pool: pg.Pool, tenantId: string) {
  return rows(pool, `SELECT id, rail, status, funding_account, created_at FROM payments WHERE tenant_id = $1`, [
    tenantId,
  ]);
}

describe(
  'failover between two gateways under load',
  {
    skip:
      ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): several processes share one database' : false,
  },
  () => {
    // long function: one scenario told in order — set-up, load, kill, failover, restart, resolution, checks
    it(
      'the breaker opens, new payouts go to B, the held ones stay unknown on A and resolve when it is back; nothing doubled or lost',
      { timeout: TIMEOUT_MS },
      async (t) => {
        const testStarted = Date.now();
        const [simA, simB] = await Promise.all([
          startGatewaySimulator({ settleDelayMs: A_SETTLE_DELAY_MS }),
          startGatewaySimulator({ settleDelayMs: 100 }),
        ]);
        try {
          const env = {
            ...FAST_ENV,
            DB_POOL_SIZE: '8',
            RAILS_FILE: railsFile(simA, simB),
            SANDBOX_RAIL_TIMEOUT_MS: '5000',
            RAIL_BREAKER_OPEN_MS: '3000',
            REAPER_INTERVAL_MS: '1000',
            // While A is down its payments' questions fail: the reaper keeps asking, at most a second apart.
            REAPER_BACKOFF_MAX_MS: '1000',
            REAPER_CHECK_ATTEMPTS_MAX: '1000',
          };
          await withServices(
            [{ role: 'api' }, { role: 'worker' }],
            env,
            async ({ dbname, pool, platformKey, cluster }) => {
              const api = cluster.baseUrl(0);
              for (const [sim, rail] of [
                [simA, RAIL_A],
                [simB, RAIL_B],
              ] as const)
                await sim.control('POST', '/_control/callbacks', { url: `${api}/v1/rails/${rail}/callbacks` });
              const rule = await call(api, platformKey, 'POST', '/v1/admin/rails/routes', {
                priority: 10,
                rail: RAIL_A,
                mode: 'live',
              });
              assert.equal(rule.status, 201, rule.text);
              // Live mode refuses a webhook endpoint on loopback: the outcome events are checked in the outbox (one
              // per final payment), not delivered.
              const customerIds = Array.from({ length: 3 }, () => randomUUID());
              const tenant = await setupTenant(api, platformKey, {
                funding: 1_000_000_000_000n,
                customerIds,
                limitRules: true,
                mode: 'live',
                name: 'Remesas Dos Bancos',
              });
              const prefix = `failover-${randomUUID().slice(0, 8)}`;
              const specs = payoutMix(PAYOUTS, { prefix, customerIds, outcomes: ['plain'] });
              const held: PayoutSpec[] = Array.from({ length: HELD }, (_, i) => ({
                key: `${prefix}-held-${i}`,
                nationalId: `V3190000${i}`,
                deliver: 750_000,
              }));
              const client = new ChaosClient({
                endpoints: () => cluster.httpBaseUrls(),
                apiKey: tenant.apiKey,
                deadlinePerPayoutMs: 60_000,
              });

              const load = paced(specs, CONCURRENCY, PACE_MS, (spec) => client.payout(spec));
              await until(
                `gateway A received ${BEFORE_KILL_MIN} payouts`,
                async () => (await receivedBy(simA)).length >= BEFORE_KILL_MIN,
                { timeoutMs: PHASE_BOUND_MS, intervalMs: 100 },
              );
              for (const spec of held)
                await simA.control('POST', `/_control/scenarios/nid:${spec.nationalId}`, { kind: 'hang' });
              const heldRuns = held.map((spec) => client.payout(spec));
              await until(
                'gateway A holds every held payout',
                async () => (await receivedBy(simA)).filter((r) => r.scenario === 'hang').length === HELD,
                { timeoutMs: PHASE_BOUND_MS, intervalMs: 25 },
              );
              const killedAt = Date.now();
              await simA.stop('SIGKILL');

              const railA = async () =>
                (await call(api, platformKey, 'GET', '/v1/admin/rails')).json.data.find(
                  (r: { name: string }) => r.name === RAIL_A,
                );
              const openSeen = await until(
                "gateway A's breaker open in the API process",
                async () => {
                  const rail = await railA();
                  return rail?.breaker.state === 'open' && rail;
                },
                { timeoutMs: PHASE_BOUND_MS, intervalMs: 50 },
              );
              const afterKill = async () => (await receivedBy(simB)).filter((r) => Date.parse(r.receivedAt) > killedAt);
              await until(
                `gateway B carried ${FAILED_OVER_MIN} payouts made after the kill`,
                async () => (await afterKill()).length >= FAILED_OVER_MIN,
                { timeoutMs: PHASE_BOUND_MS, intervalMs: 100 },
              );
              const failedOver = (await railA())?.counts.failovers ?? 0;
              const downMs = Date.now() - killedAt;
              const restartedAt = Date.now();
              await simA.restart();
              const upAt = Date.now();

              await until(
                'the held payouts settled on A',
                async () => {
                  const [n] = await rows(
                    pool,
                    `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status = 'settled'`,
                    [tenant.tenantId, heldOf(await receivedBy(simA))],
                  );
                  return n.n === HELD;
                },
                { timeoutMs: PHASE_BOUND_MS, intervalMs: 100 },
              );
              const heldResolvedMs = Date.now() - upAt;
              await Promise.all([load, ...heldRuns]);
              const loadMs = Date.now() - testStarted;
              await until(
                'every payment final',
                async () => {
                  const [open] = await rows(
                    pool,
                    `SELECT count(*) FILTER (WHERE status NOT IN ('settled', 'failed', 'reversed'))::int AS open, count(*)::int AS n FROM payments WHERE tenant_id = $1`,
                    [tenant.tenantId],
                  );
                  return open.open === 0 && open.n === PAYOUTS + HELD;
                },
                { timeoutMs: Math.max(10_000, TIMEOUT_MS - 30_000 - (Date.now() - testStarted)), intervalMs: 100 },
              );
              const resolvedMs = Date.now() - upAt;

              const atA = await receivedBy(simA);
              const atB = await receivedBy(simB);
              const payments = await paymentsOf(pool, tenant.tenantId);
              const heldAtA = heldOf(atA);
              const heldTransitions = await rows(
                pool,
                `SELECT p.id, p.rail, p.status, (SELECT max(t.created_at) FROM payment_transitions t WHERE t.tenant_id = p.tenant_id AND t.payment_id = p.id AND t.to_status = 'settled') AS settled_at
             FROM payments p WHERE p.tenant_id = $1 AND p.id = ANY($2::uuid[])`,
                [tenant.tenantId, heldAtA],
              );
              const heldAnswers = held.map((spec) => client.records.get(spec.key)?.final?.paymentStatus);

              const result = await finishRun({
                name: 'rail-failover',
                cluster,
                pool,
                tenant,
                client,
                settleTimeoutMs: 20_000,
                adminUrl: process.env.DATABASE_URL!,
                dbname,
                checkOutcomes: false,
                sandboxRail: false,
                published: false,
              });
              const violations = [...result.violations, ...gatewayViolations(payments, atA, atB)];
              const bBeforeKill = atB.filter((r) => Date.parse(r.receivedAt) <= killedAt);
              if (bBeforeKill.length)
                violations.push(
                  `gateway B received payouts before A died (the rule puts A first): ${JSON.stringify(bBeforeKill.slice(0, 5))}`,
                );
              if (failedOver < 1)
                violations.push('no payout failed over from A (a refused connection) before the breaker skipped it');
              if (heldAtA.length !== HELD) violations.push(`gateway A holds ${heldAtA.length} transfers, not ${HELD}`);
              if (heldAnswers.some((s) => s !== 'unknown'))
                violations.push(`the held payouts answered ${JSON.stringify(heldAnswers)}, not all unknown`);
              const wrongHeld = heldTransitions.filter(
                (p) =>
                  p.rail !== RAIL_A ||
                  p.status !== 'settled' ||
                  !(p.settled_at instanceof Date) ||
                  p.settled_at.getTime() < restartedAt,
              );
              if (wrongHeld.length)
                violations.push(`held payouts not settled on A after it came back: ${JSON.stringify(wrongHeld)}`);

              // Once A answers again its breaker's probe closes it, and the rule sends payouts to A again.
              const aAfterRestart = atA.filter((r) => Date.parse(r.receivedAt) > upAt).length;
              if (aAfterRestart < 1)
                violations.push('gateway A carried no payout after it came back (its breaker never closed)');
              const bAfterKill = atB.filter((r) => Date.parse(r.receivedAt) > killedAt).length;
              const summary =
                `payouts ${payments.length}: gateway A ${atA.length} (${heldAtA.length} held in flight when killed, ${aAfterRestart} after it came back), gateway B ${atB.length} (${bAfterKill} after the kill); ` +
                `A down ${downMs} ms, restarted in ${upAt - restartedAt} ms; breaker seen open (after ${openSeen.breaker.failures} failures), ${failedOver} payouts failed over from A; ` +
                `held payouts settled ${heldResolvedMs} ms after A was back; load done at ${loadMs} ms; every payment final ${resolvedMs} ms after A was back (the load went on meanwhile); ${result.summary}`;
              t.diagnostic(summary);
              assert.deepEqual(
                violations,
                [],
                failureReport({ ...result, violations, summary }, cluster, `gateway A output:\n${simA.output()}`),
              );
            },
          );
        } finally {
          await simA.close();
          await simB.close();
        }
      },
    );
  },
);
