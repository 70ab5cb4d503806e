// The payroll scenario: what an integrator paying a payroll measures. The service runs as users run
// it — every role at once (ROLE=all), or an api process plus a worker — with the sandbox rail at its
// default settle delay and a local receiver answering 200 as the tenant's webhook endpoint. One
// tenant submits N payouts (pre-created quotes, one beneficiary, default outcome) at concurrency 64;
// the clock runs from the first request to the last `payment.settled` webhook in the receiver.
import type { ChildProcess } from 'node:child_process';
import type pg from 'pg';
import { request } from 'undici';
import { machineCpuSeconds, postmasterOf, processCpuSeconds, serverCpuSeconds } from './cpu-time.ts';
import type { LoadJob, LoadResult, ScenarioFigures } from './load.ts';

/** Bound of the wait for every payout to settle and every webhook to arrive. */
const RESOLVE_TIMEOUT_MS = 10 * 60_000;
const POLL_MS = 100;
/** How often the wait for settlement and webhooks logs where it stands. */
const PROGRESS_MS = 2000;
const CONCURRENCY = 64;

export interface PayrollContext {
  db: pg.Client;
  env: Record<string, string>;
  platformKey: string;
  receiverOrigin: string;
  ceilingPerS: number;
  sender: Record<string, string>;
  freePort(): Promise<number>;
  startService(env: Record<string, string>): ChildProcess;
  waitReady(url: string): Promise<void>;
  stop(child: ChildProcess): Promise<void>;
  load(job: LoadJob): Promise<LoadResult>;
  api(origin: string, key: string, method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, headers?: Record<string, string>): Promise<any>;
  seedQuotes(tenantId: string, count: number): Promise<string[]>;
  seedBeneficiaries(tenantId: string, count: number): Promise<string[]>;
  quiesce(): Promise<void>;
  rssMb(pid: number): number;
  log(line: string): void;
}

export interface PayrollFigures {
  topology: 'all' | 'api+worker';
  payouts: number;
  submit_throughput_per_s: number;
  submit_p50_ms: number;
  submit_p99_ms: number;
  errors: number;
  statuses: Record<string, number>;
  seconds_to_all_settled: number;
  seconds_to_last_webhook: number;
  end_to_end_per_s: number;
  ceiling_throughput_per_s: number;
  submit_ratio: number;
  end_to_end_ratio: number;
  rss_mb_after: Record<string, number>;
  /**
   * CPU milliseconds per payout from the first request to the last webhook: each service process,
   * and the whole PostgreSQL server (null when it runs on another machine). Null without /proc.
   */
  cpu_ms_per_payout: { service: Record<string, number>; postgres: number | null } | null;
  /** How busy the machine's cores were over the same span (100 = every core all the time). */
  machine_busy_pct: number | null;
}

/** A snapshot of the CPU time used so far by the service processes, the database server and the machine. */
interface CpuSnapshot {
  service: Record<string, number | undefined>;
  postgres: number | undefined;
  machine: { busy: number; total: number } | undefined;
}

function cpuSnapshot(processes: Running['processes'], postmasterPid: number | undefined): CpuSnapshot {
  return {
    service: Object.fromEntries(processes.map((p) => [p.role, processCpuSeconds(p.child.pid!)])),
    postgres: postmasterPid === undefined ? undefined : serverCpuSeconds(postmasterPid),
    machine: machineCpuSeconds(),
  };
}

function cpuPerPayout(before: CpuSnapshot, after: CpuSnapshot, payouts: number): Pick<PayrollFigures, 'cpu_ms_per_payout' | 'machine_busy_pct'> {
  const perPayout = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : Number((((b - a) * 1000) / payouts).toFixed(3)));
  const service: Record<string, number> = {};
  for (const [role, seconds] of Object.entries(after.service)) {
    const ms = perPayout(before.service[role], seconds);
    if (ms !== undefined) service[role] = ms;
  }
  const m0 = before.machine;
  const m1 = after.machine;
  return {
    cpu_ms_per_payout: Object.keys(service).length === 0 ? null : { service, postgres: perPayout(before.postgres, after.postgres) ?? null },
    machine_busy_pct: m0 && m1 && m1.total > m0.total ? Math.round((100 * (m1.busy - m0.busy)) / (m1.total - m0.total)) : null,
  };
}

async function receiverState(origin: string): Promise<{ settled: number; last_settled_at_ms: number }> {
  const response = await request(`${origin}/received`);
  return (await response.body.json()) as { settled: number; last_settled_at_ms: number };
}

interface Running {
  origin: string;
  processes: Array<{ role: string; child: ChildProcess; origin: string }>;
}

/**
 * BENCH_METRICS_DIR=dir: after a payroll run, each process's /metrics (batch sizes and durations per
 * lane, rail calls, deliveries, worker passes) is written there, to see where the time went.
 */
async function dumpMetrics(topology: string, processes: Running['processes'], metricsToken: string | undefined): Promise<void> {
  const dir = process.env.BENCH_METRICS_DIR;
  if (!dir) return;
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  for (const p of processes) {
    // /metrics is not public: the service runs with METRICS_TOKEN (bench/run.ts).
    const response = await request(`${p.origin}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    writeFileSync(`${dir}/payroll-${topology.replace('+', '-')}-${p.role}.prom`, await response.body.text());
  }
}

/** Starts the service as users run it: one ROLE=all process, or an api process and a worker. */
async function startTopology(ctx: PayrollContext, topology: 'all' | 'api+worker'): Promise<Running> {
  const port = await ctx.freePort();
  const origin = `http://127.0.0.1:${port}`;
  // Nothing of the earlier scenarios may compete for this run's workers: park their open payments
  // and set their undelivered events aside.
  await ctx.db.query(`UPDATE payments SET next_check_at = 'infinity' WHERE status IN ('submitted', 'unknown')`);
  await ctx.db.query(`UPDATE outbox_events SET status = 'published', published_at = now() WHERE status = 'pending'`);
  const processes: Running['processes'] = [];
  const common = { ...ctx.env, PORT: String(port) };
  if (topology === 'all') {
    processes.push({ role: 'all', child: ctx.startService({ ...common, ROLE: 'all' }), origin });
  } else {
    processes.push({ role: 'api', child: ctx.startService({ ...common, ROLE: 'api' }), origin });
    const workerPort = await ctx.freePort();
    processes.push({ role: 'worker', child: ctx.startService({ ...common, ROLE: 'worker', PORT: String(workerPort) }), origin: `http://127.0.0.1:${workerPort}` });
  }
  try {
    await ctx.waitReady(`${origin}/health/ready`);
  } catch (error) {
    for (const p of processes) await ctx.stop(p.child);
    throw error;
  }
  return { origin, processes };
}

/** A funded tenant whose endpoint is the local receiver, one beneficiary, and `count` open quotes. */
async function payrollTenant(ctx: PayrollContext, origin: string, name: string, count: number) {
  const tenant = await ctx.api(origin, ctx.platformKey, 'POST', '/v1/admin/tenants', { name });
  const key: string = (await ctx.api(origin, ctx.platformKey, 'POST', `/v1/admin/tenants/${tenant.id}/api-keys`, { mode: 'test' })).key;
  await ctx.api(origin, ctx.platformKey, 'POST', `/v1/admin/tenants/${tenant.id}/fundings`, { mode: 'test', asset: 'BS', amount: 9_000_000_000_000_000 }, { 'idempotency-key': `funding-${name}` });
  await ctx.api(origin, ctx.platformKey, 'PUT', `/v1/admin/tenants/${tenant.id}/webhook-endpoint`, { mode: 'test', url: `${ctx.receiverOrigin}/webhook` });
  const [beneficiaryId] = await ctx.seedBeneficiaries(tenant.id, 1);
  const quotes = await ctx.seedQuotes(tenant.id, count);
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const requests = quotes.map((quoteId, i) => ({
    method: 'POST' as const, path: '/v1/payouts', headers: { ...headers, 'idempotency-key': `${name}-${i}` },
    body: JSON.stringify({ quoteId, method: 'pago_movil', beneficiaryId, sender: ctx.sender }),
  }));
  return { tenantId: tenant.id as string, requests };
}

export async function runPayroll(ctx: PayrollContext, topology: 'all' | 'api+worker', payouts: number): Promise<PayrollFigures> {
  const { origin, processes } = await startTopology(ctx, topology);
  try {
    const { tenantId, requests } = await payrollTenant(ctx, origin, `bench-payroll-${topology}`, payouts);
    await ctx.quiesce();
    await request(`${ctx.receiverOrigin}/reset`, { method: 'POST' }).then((r) => r.body.dump());
    const { rows: backend } = await ctx.db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const postmasterPid = postmasterOf(backend[0]!.pid);

    const cpuBefore = cpuSnapshot(processes, postmasterPid);
    const startedMs = Date.now();
    const submitted = await ctx.load({ origin, concurrency: CONCURRENCY, warmupMs: 0, durationMs: 0, drain: true, expectStatus: [201], requests });
    ctx.log(`payroll (${topology}): ${payouts} submitted at ${Math.round(submitted.throughputPerS)}/s, p99 ${submitted.p99Ms.toFixed(1)} ms, errors ${submitted.errors} ${JSON.stringify(submitted.statuses)}`);

    let settledAtMs: number | undefined;
    let lastWebhookAtMs: number | undefined;
    let settled = 0;
    let progressAtMs = Date.now();
    while (Date.now() - startedMs < RESOLVE_TIMEOUT_MS && (settledAtMs === undefined || lastWebhookAtMs === undefined)) {
      if (settledAtMs === undefined) {
        // Counted from the small unresolved index while the pipeline runs (counting the settled rows
        // read the tenant's whole payroll, 7 ms a poll on the measured server); the settled count is
        // checked once nothing is left unresolved.
        const { rows } = await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM payments WHERE tenant_id = $1 AND status IN ('submitted', 'unknown')`, [tenantId]);
        settled = payouts - Number(rows[0]!.n);
        if (settled >= payouts) {
          settledAtMs = Date.now();
          const counted = await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM payments WHERE tenant_id = $1 AND status = 'settled'`, [tenantId]);
          if (Number(counted.rows[0]!.n) !== payouts) throw new Error(`payroll (${topology}): ${counted.rows[0]!.n} of ${payouts} payouts settled; the others failed`);
        }
      }
      const received = await receiverState(ctx.receiverOrigin);
      if (received.settled >= payouts) lastWebhookAtMs = received.last_settled_at_ms;
      if (Date.now() - progressAtMs >= PROGRESS_MS) {
        progressAtMs = Date.now();
        ctx.log(`payroll (${topology}): ${((progressAtMs - startedMs) / 1000).toFixed(0)} s: ${settled} settled, ${received.settled} webhooks received`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    if (settledAtMs === undefined || lastWebhookAtMs === undefined) {
      throw new Error(`payroll (${topology}): not every payout settled and notified within ${RESOLVE_TIMEOUT_MS / 1000} s`);
    }
    const cpu = cpuPerPayout(cpuBefore, cpuSnapshot(processes, postmasterPid), payouts);
    await dumpMetrics(topology, processes, ctx.env.METRICS_TOKEN);
    const secondsToLastWebhook = (lastWebhookAtMs - startedMs) / 1000;
    const figures: PayrollFigures = {
      topology,
      payouts,
      submit_throughput_per_s: Math.round(submitted.throughputPerS),
      submit_p50_ms: Number(submitted.p50Ms.toFixed(2)),
      submit_p99_ms: Number(submitted.p99Ms.toFixed(2)),
      errors: submitted.errors,
      statuses: submitted.statuses,
      seconds_to_all_settled: Number(((settledAtMs - startedMs) / 1000).toFixed(2)),
      seconds_to_last_webhook: Number(secondsToLastWebhook.toFixed(2)),
      end_to_end_per_s: Math.round(payouts / secondsToLastWebhook),
      ceiling_throughput_per_s: Math.round(ctx.ceilingPerS),
      submit_ratio: Number((submitted.throughputPerS / ctx.ceilingPerS).toFixed(2)),
      end_to_end_ratio: Number((payouts / secondsToLastWebhook / ctx.ceilingPerS).toFixed(2)),
      rss_mb_after: Object.fromEntries(processes.map((p) => [p.role, ctx.rssMb(p.child.pid!)])),
      ...cpu,
    };
    ctx.log(
      `payroll (${topology}): all settled after ${figures.seconds_to_all_settled} s, last webhook after ${figures.seconds_to_last_webhook} s: ` +
        `${figures.end_to_end_per_s}/s end to end (ratio ${figures.end_to_end_ratio}; submit ratio ${figures.submit_ratio})`,
    );
    if (cpu.cpu_ms_per_payout) ctx.log(`payroll (${topology}): CPU per payout ${describeCpu(cpu)}`);
    return figures;
  } finally {
    for (const p of processes) await ctx.stop(p.child);
  }
}

/** "service 1.21 ms (api 0.80, worker 0.41), PostgreSQL 1.52 ms; machine 94 % busy" */
export function describeCpu(cpu: Pick<PayrollFigures, 'cpu_ms_per_payout' | 'machine_busy_pct'>): string {
  const c = cpu.cpu_ms_per_payout;
  if (!c) return 'not measured (no /proc)';
  const roles = Object.entries(c.service);
  const total = roles.reduce((sum, [, ms]) => sum + ms, 0);
  const service = roles.length > 1 ? `service ${total.toFixed(2)} ms (${roles.map(([role, ms]) => `${role} ${ms.toFixed(2)}`).join(', ')})` : `service ${total.toFixed(2)} ms`;
  const postgres = c.postgres === null ? 'PostgreSQL not measured (another machine)' : `PostgreSQL ${c.postgres.toFixed(2)} ms`;
  return `${service}, ${postgres}${cpu.machine_busy_pct === null ? '' : `; machine ${cpu.machine_busy_pct} % busy`}`;
}

export interface SoakFigures extends ScenarioFigures {
  topology: 'api+worker';
  seconds: number;
  warmup_seconds: number;
  /** Per process: RSS every 10 s from the start of the warm-up, and growth from its end to the end. */
  rss: Record<string, { mb_samples: number[]; mb_before: number; mb_after: number; growth: number; growth_second_half: number }>;
}

const RSS_SAMPLE_MS = 10_000;

/**
 * Memory over a long run, in the payroll setup: an api process and a worker settling and notifying
 * what the api accepts, payouts at concurrency 64 for `seconds` after a warm-up.
 */
export async function runSoak(ctx: PayrollContext, seconds: number, warmupMs: number, payoutsPerS: number): Promise<SoakFigures> {
  const { origin, processes } = await startTopology(ctx, 'api+worker');
  try {
    const { requests } = await payrollTenant(ctx, origin, 'bench-soak', Math.ceil((seconds + warmupMs / 1000) * payoutsPerS));
    await ctx.quiesce();
    const samples = new Map(processes.map((p) => [p.role, [ctx.rssMb(p.child.pid!)]]));
    const sampler = setInterval(() => {
      for (const p of processes) samples.get(p.role)!.push(ctx.rssMb(p.child.pid!));
    }, RSS_SAMPLE_MS);
    const result = await ctx.load({ origin, concurrency: CONCURRENCY, warmupMs, durationMs: seconds * 1000, expectStatus: [201], requests });
    clearInterval(sampler);
    const rss: SoakFigures['rss'] = {};
    for (const p of processes) {
      const series = samples.get(p.role)!;
      series.push(ctx.rssMb(p.child.pid!));
      const before = series[Math.min(series.length - 1, Math.round(warmupMs / RSS_SAMPLE_MS))]!;
      const after = series.at(-1)!;
      const half = series[Math.floor((Math.round(warmupMs / RSS_SAMPLE_MS) + series.length - 1) / 2)]!;
      rss[p.role] = {
        mb_samples: series,
        mb_before: before,
        mb_after: after,
        growth: Number(((after - before) / before).toFixed(3)),
        growth_second_half: Number(((after - half) / half).toFixed(3)),
      };
    }
    const figures: SoakFigures = {
      topology: 'api+worker',
      seconds,
      warmup_seconds: warmupMs / 1000,
      throughput_per_s: Math.round(result.throughputPerS),
      p50_ms: Number(result.p50Ms.toFixed(2)),
      p99_ms: Number(result.p99Ms.toFixed(2)),
      errors: result.errors,
      ceiling_throughput_per_s: Math.round(ctx.ceilingPerS),
      ratio: Number((result.throughputPerS / ctx.ceilingPerS).toFixed(2)),
      rss,
    };
    ctx.log(
      `soak (api+worker): ${figures.throughput_per_s}/s for ${seconds} s, errors ${figures.errors}; ` +
        Object.entries(rss).map(([role, r]) => `${role} RSS ${r.mb_samples.join(' ')} MB, growth ${(100 * r.growth).toFixed(1)} %`).join('; '),
    );
    return figures;
  } finally {
    for (const p of processes) await ctx.stop(p.child);
  }
}
