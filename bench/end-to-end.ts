// A payroll measured end to end, however its payouts are submitted (one request each, or in
// batches): the service runs as users run it — every role at once (ROLE=all), or an api process plus
// a worker — with the sandbox rail at its default settle delay and a local receiver answering 200 as
// the tenant's webhook endpoint; the clock runs from the first request to the last `payment.settled`
// webhook in the receiver, and the CPU every process spent meanwhile is counted per payout.
import type { ChildProcess } from 'node:child_process';
import type pg from 'pg';
import { request } from 'undici';
import { describeComponentCpu, startComponentCpu, type ComponentCpuFigures, type ComponentCpuMeter } from './cpu.ts';
import { machineCpuSeconds, postmasterOf, processCpuSeconds, serverCpuSeconds } from './cpu-time.ts';
import type { LoadJob, LoadResult } from './load.ts';

/** Bound of the wait for every payout to settle and every webhook to arrive. */
const RESOLVE_TIMEOUT_MS = 10 * 60_000;
const POLL_MS = 100;
/** How often the wait for settlement and webhooks logs where it stands. */
const PROGRESS_MS = 2000;

export type Topology = 'all' | 'api+worker';

export interface PayrollContext {
  db: pg.Client;
  /** The bench database, direct (not through a pooler): where the service's connections are counted. */
  databaseUrl: string;
  env: Record<string, string>;
  /** The PgBouncer the service's DATABASE_URL goes through, when it does: its CPU is counted too. */
  poolerPid?: number;
  platformKey: string;
  receiverOrigin: string;
  ceilingPerS: number;
  sender: Record<string, string>;
  freePort(): Promise<number>;
  startService(env: Record<string, string>): ChildProcess;
  waitReady(url: string): Promise<void>;
  stop(child: ChildProcess): Promise<void>;
  load(job: LoadJob): Promise<LoadResult>;
  api(
    origin: string,
    key: string,
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<any>;
  seedQuotes(tenantId: string, count: number): Promise<string[]>;
  seedBeneficiaries(tenantId: string, count: number): Promise<string[]>;
  quiesce(): Promise<void>;
  rssMb(pid: number): number;
  log(line: string): void;
}

/** What every end-to-end run reports, whatever submitted its payouts. */
export interface EndToEndFigures {
  topology: Topology;
  payouts: number;
  seconds_to_all_settled: number;
  seconds_to_last_webhook: number;
  end_to_end_per_s: number;
  ceiling_throughput_per_s: number;
  end_to_end_ratio: number;
  rss_mb_after: Record<string, number>;
  /**
   * CPU milliseconds per payout from the first request to the last webhook: each service process,
   * and the whole PostgreSQL server (null when it runs on another machine). Null without /proc.
   */
  cpu_ms_per_payout: { service: Record<string, number>; postgres: number | null } | null;
  /** How busy the machine's cores were over the same span (100 = every core all the time). */
  machine_busy_pct: number | null;
  /** CPU seconds and payouts per CPU-second per component, and PostgreSQL connections (bench/cpu.ts); null without /proc. */
  cpu_by_component: ComponentCpuFigures | null;
}

type CpuFigures = Pick<EndToEndFigures, 'cpu_ms_per_payout' | 'machine_busy_pct'>;

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

function cpuPerPayout(before: CpuSnapshot, after: CpuSnapshot, payouts: number): CpuFigures {
  const perPayout = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : Number((((b - a) * 1000) / payouts).toFixed(3));
  const service: Record<string, number> = {};
  for (const [role, seconds] of Object.entries(after.service)) {
    const ms = perPayout(before.service[role], seconds);
    if (ms !== undefined) service[role] = ms;
  }
  const m0 = before.machine;
  const m1 = after.machine;
  return {
    cpu_ms_per_payout:
      Object.keys(service).length === 0
        ? null
        : { service, postgres: perPayout(before.postgres, after.postgres) ?? null },
    machine_busy_pct:
      m0 && m1 && m1.total > m0.total ? Math.round((100 * (m1.busy - m0.busy)) / (m1.total - m0.total)) : null,
  };
}

/** "service 1.21 ms (api 0.80, worker 0.41), PostgreSQL 1.52 ms; machine 94 % busy" */
export function describeCpu(cpu: CpuFigures): string {
  const c = cpu.cpu_ms_per_payout;
  if (!c) return 'not measured (no /proc)';
  const roles = Object.entries(c.service);
  const total = roles.reduce((sum, [, ms]) => sum + ms, 0);
  const service =
    roles.length > 1
      ? `service ${total.toFixed(2)} ms (${roles.map(([role, ms]) => `${role} ${ms.toFixed(2)}`).join(', ')})`
      : `service ${total.toFixed(2)} ms`;
  const postgres =
    c.postgres === null ? 'PostgreSQL not measured (another machine)' : `PostgreSQL ${c.postgres.toFixed(2)} ms`;
  return `${service}, ${postgres}${cpu.machine_busy_pct === null ? '' : `; machine ${cpu.machine_busy_pct} % busy`}`;
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
async function dumpMetrics(
  name: string,
  topology: Topology,
  processes: Running['processes'],
  metricsToken: string | undefined,
): Promise<void> {
  const dir = process.env.BENCH_METRICS_DIR;
  if (!dir) return;
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  for (const p of processes) {
    // /metrics is not public: the service runs with METRICS_TOKEN (bench/run.ts).
    const response = await request(`${p.origin}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    writeFileSync(`${dir}/${name}-${topology.replace('+', '-')}-${p.role}.prom`, await response.body.text());
  }
}

/** Starts the service as users run it: one ROLE=all process, or an api process and a worker. */
export async function startTopology(ctx: PayrollContext, topology: Topology): Promise<Running> {
  const port = await ctx.freePort();
  const origin = `http://127.0.0.1:${port}`;
  // Nothing of the earlier scenarios may compete for this run's workers: park their open payments
  // and set their undelivered events aside.
  // (A seeded history's open payments have no check time: they are left alone.)
  await ctx.db.query(
    `UPDATE payments SET next_check_at = 'infinity' WHERE status IN ('submitted', 'unknown') AND next_check_at < 'infinity'`,
  );
  await ctx.db.query(`UPDATE outbox_events SET status = 'published', published_at = now() WHERE status = 'pending'`);
  const processes: Running['processes'] = [];
  const common = { ...ctx.env, PORT: String(port) };
  if (topology === 'all') {
    processes.push({ role: 'all', child: ctx.startService({ ...common, ROLE: 'all' }), origin });
  } else {
    processes.push({ role: 'api', child: ctx.startService({ ...common, ROLE: 'api' }), origin });
    const workerPort = await ctx.freePort();
    processes.push({
      role: 'worker',
      child: ctx.startService({ ...common, ROLE: 'worker', PORT: String(workerPort) }),
      origin: `http://127.0.0.1:${workerPort}`,
    });
  }
  try {
    await ctx.waitReady(`${origin}/health/ready`);
  } catch (error) {
    for (const p of processes) await ctx.stop(p.child);
    throw error;
  }
  return { origin, processes };
}

export interface PayrollTenant {
  name: string;
  tenantId: string;
  /** The tenant's test-mode API key. */
  key: string;
  beneficiaryId: string;
}

/**
 * A tenant that can pay a payroll: funded far beyond any run (no limit rule is configured, so only
 * the instrument's per-payout cap applies), its webhook endpoint the local receiver, one beneficiary.
 */
export async function payrollTenant(ctx: PayrollContext, origin: string, name: string): Promise<PayrollTenant> {
  const tenant = await ctx.api(origin, ctx.platformKey, 'POST', '/v1/admin/tenants', { name });
  const key: string = (
    await ctx.api(origin, ctx.platformKey, 'POST', `/v1/admin/tenants/${tenant.id}/api-keys`, { mode: 'test' })
  ).key;
  await ctx.api(
    origin,
    ctx.platformKey,
    'POST',
    `/v1/admin/tenants/${tenant.id}/fundings`,
    { mode: 'test', asset: 'BS', amount: 9_000_000_000_000_000 },
    { 'idempotency-key': `funding-${name}` },
  );
  await ctx.api(origin, ctx.platformKey, 'PUT', `/v1/admin/tenants/${tenant.id}/webhook-endpoint`, {
    mode: 'test',
    url: `${ctx.receiverOrigin}/webhook`,
  });
  const [beneficiaryId] = await ctx.seedBeneficiaries(tenant.id, 1);
  return { name, tenantId: tenant.id as string, key, beneficiaryId: beneficiaryId! };
}

/** When every payout of the tenant was settled in the database, and when its last webhook arrived. */
async function awaitSettledAndNotified(
  ctx: PayrollContext,
  label: string,
  tenantId: string,
  payouts: number,
  startedMs: number,
): Promise<{ settledAtMs: number; lastWebhookAtMs: number }> {
  let settledAtMs: number | undefined;
  let lastWebhookAtMs: number | undefined;
  let settled = 0;
  let progressAtMs = Date.now();
  while (Date.now() - startedMs < RESOLVE_TIMEOUT_MS && (settledAtMs === undefined || lastWebhookAtMs === undefined)) {
    if (settledAtMs === undefined) {
      // Counted from the small unresolved index while the pipeline runs (counting the settled rows
      // read the tenant's whole payroll, 7 ms a poll on the measured server); the settled count is
      // checked once nothing is left unresolved.
      const { rows } = await ctx.db.query<{ n: string }>(
        `SELECT count(*) AS n FROM payments WHERE tenant_id = $1 AND status IN ('submitted', 'unknown')`,
        [tenantId],
      );
      settled = payouts - Number(rows[0]!.n);
      if (settled >= payouts) {
        settledAtMs = Date.now();
        const counted = await ctx.db.query<{ n: string }>(
          `SELECT count(*) AS n FROM payments WHERE tenant_id = $1 AND status = 'settled'`,
          [tenantId],
        );
        if (Number(counted.rows[0]!.n) !== payouts)
          throw new Error(
            `${label}: ${counted.rows[0]!.n} of ${payouts} payouts settled; the others failed or were never made`,
          );
      }
    }
    const received = await receiverState(ctx.receiverOrigin);
    if (received.settled >= payouts) lastWebhookAtMs = received.last_settled_at_ms;
    if (Date.now() - progressAtMs >= PROGRESS_MS) {
      progressAtMs = Date.now();
      ctx.log(
        `${label}: ${((progressAtMs - startedMs) / 1000).toFixed(0)} s: ${settled} settled, ${received.settled} webhooks received`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  if (settledAtMs === undefined || lastWebhookAtMs === undefined) {
    throw new Error(`${label}: not every payout settled and notified within ${RESOLVE_TIMEOUT_MS / 1000} s`);
  }
  return { settledAtMs, lastWebhookAtMs };
}

/** How one kind of payroll submits its payouts. */
export interface Submission<Prepared, Submitted> {
  /** Its name in logs, tenant names and metrics files: `payroll`, `payroll-batch`. */
  name: string;
  payouts: number;
  /** What is made before the clock starts (quotes, request bodies). */
  prepare(tenant: PayrollTenant): Promise<Prepared>;
  /** The timed submission, against the service at `origin`. */
  submit(origin: string, prepared: Prepared): Promise<Submitted>;
}

/**
 * One payroll, submitted by `submission` to the service in `topology`, from the first request to
 * the last webhook: earlier scenarios' open payments are set aside, the tenant is fresh.
 */
export async function runEndToEnd<P, S extends { cpuSeconds?: number }>(
  ctx: PayrollContext,
  topology: Topology,
  submission: Submission<P, S>,
): Promise<{ submitted: S; figures: EndToEndFigures }> {
  const label = `${submission.name} (${topology})`;
  const { origin, processes } = await startTopology(ctx, topology);
  let meter: ComponentCpuMeter | undefined;
  try {
    const tenant = await payrollTenant(ctx, origin, `bench-${submission.name}-${topology}`);
    const prepared = await submission.prepare(tenant);
    await ctx.quiesce();
    await request(`${ctx.receiverOrigin}/reset`, { method: 'POST' }).then((r) => r.body.dump());
    const { rows: backend } = await ctx.db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const postmasterPid = postmasterOf(backend[0]!.pid);

    const components = {
      service: processes.map((p) => ({ role: p.role, pid: p.child.pid! })),
      poolerPid: ctx.poolerPid,
    };
    meter = await startComponentCpu(components, ctx.databaseUrl);
    const cpuBefore = cpuSnapshot(processes, postmasterPid);
    const startedMs = Date.now();
    const submitted = await submission.submit(origin, prepared);
    const { settledAtMs, lastWebhookAtMs } = await awaitSettledAndNotified(
      ctx,
      label,
      tenant.tenantId,
      submission.payouts,
      startedMs,
    );
    const cpu = cpuPerPayout(cpuBefore, cpuSnapshot(processes, postmasterPid), submission.payouts);
    const byComponent = (await meter?.stop(submission.payouts, submitted.cpuSeconds)) ?? null;
    await dumpMetrics(submission.name, topology, processes, ctx.env.METRICS_TOKEN);
    const secondsToLastWebhook = (lastWebhookAtMs - startedMs) / 1000;
    const figures: EndToEndFigures = {
      topology,
      payouts: submission.payouts,
      seconds_to_all_settled: Number(((settledAtMs - startedMs) / 1000).toFixed(2)),
      seconds_to_last_webhook: Number(secondsToLastWebhook.toFixed(2)),
      end_to_end_per_s: Math.round(submission.payouts / secondsToLastWebhook),
      ceiling_throughput_per_s: Math.round(ctx.ceilingPerS),
      end_to_end_ratio: Number((submission.payouts / secondsToLastWebhook / ctx.ceilingPerS).toFixed(2)),
      rss_mb_after: Object.fromEntries(processes.map((p) => [p.role, ctx.rssMb(p.child.pid!)])),
      ...cpu,
      cpu_by_component: byComponent,
    };
    ctx.log(
      `${label}: all settled after ${figures.seconds_to_all_settled} s, last webhook after ${figures.seconds_to_last_webhook} s: ${figures.end_to_end_per_s}/s end to end (ratio ${figures.end_to_end_ratio})`,
    );
    if (cpu.cpu_ms_per_payout) ctx.log(`${label}: CPU per payout ${describeCpu(cpu)}`);
    if (byComponent) ctx.log(`${label}: ${describeComponentCpu(byComponent)}`);
    return { submitted, figures };
  } finally {
    await meter?.close();
    for (const p of processes) await ctx.stop(p.child);
  }
}
