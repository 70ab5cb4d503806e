// The payroll behind PgBouncer in transaction pooling mode (docs/pooler.md): the same payroll, in the
// same topologies, with the service's DATABASE_URL going through a PgBouncer the bench starts in front
// of its database (DATABASE_POOLER=transaction, DATABASE_DIRECT_URL the database itself), set beside
// the direct payroll of the same run.
import { pgbouncerBinary, startPgBouncer } from '../test/support/pgbouncer.ts';
import { describeComponentCpu } from './cpu.ts';
import type { PayrollContext, Topology } from './end-to-end.ts';
import { runPayroll, type PayrollFigures } from './payroll.ts';

/** PgBouncer's server connections to the bench database: the default_pool_size of docs/pooler.md. */
const POOLER_POOL_SIZE = 20;

export interface PooledPayrollFigures extends PayrollFigures {
  pooler: { pool_mode: 'transaction'; default_pool_size: number };
  /**
   * This run over the direct payroll of the same topology in the same bench run (null when that did
   * not run): submit throughput, end to end, and payouts per PostgreSQL CPU-second (below 1: each
   * payout costs PostgreSQL more behind the pooler).
   */
  ratio_to_direct: {
    submit_throughput: number;
    end_to_end: number;
    postgres_payouts_per_cpu_second: number | null;
  } | null;
}

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? null : Number((a / b).toFixed(2));

function besideDirect(pooled: PayrollFigures, direct: PayrollFigures | undefined): PooledPayrollFigures {
  const perCpu = (f: PayrollFigures) => f.cpu_by_component?.payouts_per_cpu_second.postgres;
  return {
    ...pooled,
    pooler: { pool_mode: 'transaction', default_pool_size: POOLER_POOL_SIZE },
    ratio_to_direct: direct
      ? {
          submit_throughput: ratio(pooled.submit_throughput_per_s, direct.submit_throughput_per_s) ?? 0,
          end_to_end: ratio(pooled.end_to_end_per_s, direct.end_to_end_per_s) ?? 0,
          postgres_payouts_per_cpu_second: ratio(perCpu(pooled), perCpu(direct)),
        }
      : null,
  };
}

/**
 * Runs the payroll behind a PgBouncer of its own in each topology; the PgBouncer is stopped at the
 * end, whatever happened. A string (why) when it cannot run: no pgbouncer binary on this machine.
 */
export async function runPooledPayrolls(
  ctx: PayrollContext,
  topologies: readonly Topology[],
  payouts: number,
  direct: Record<string, PayrollFigures>,
): Promise<Record<string, PooledPayrollFigures> | string> {
  if (!pgbouncerBinary()) {
    const why = 'skipped: pgbouncer is not installed (not on PATH, not /usr/sbin/pgbouncer)';
    ctx.log(`payroll-pooler: ${why}`);
    return why;
  }
  const dbName = decodeURIComponent(new URL(ctx.databaseUrl).pathname.slice(1));
  const bouncer = await startPgBouncer(ctx.databaseUrl, dbName, { poolSize: POOLER_POOL_SIZE });
  ctx.log(
    `payroll-pooler: PgBouncer (pid ${bouncer.pid}, transaction mode, default_pool_size ${POOLER_POOL_SIZE}) at ${bouncer.url}`,
  );
  try {
    const pooled: PayrollContext = {
      ...ctx,
      poolerPid: bouncer.pid,
      env: {
        ...ctx.env,
        DATABASE_URL: bouncer.url,
        DATABASE_POOLER: 'transaction',
        DATABASE_DIRECT_URL: ctx.databaseUrl,
      },
    };
    const figures: Record<string, PooledPayrollFigures> = {};
    for (const topology of topologies)
      figures[topology] = besideDirect(await runPayroll(pooled, topology, payouts, 'payroll-pooler'), direct[topology]);
    return figures;
  } catch (error) {
    ctx.log(`payroll-pooler: PgBouncer's log:\n${bouncer.log()}`);
    throw error;
  } finally {
    await bouncer.stop();
  }
}

/** One summary line, the direct payroll's figures beside it as ratios. */
export function describePooledPayroll(p: PooledPayrollFigures): string {
  const r = p.ratio_to_direct;
  const vs = (x: number | null | undefined) => (r && x !== null && x !== undefined ? ` (pooler/direct ${x})` : '');
  return (
    `payroll behind PgBouncer (${p.topology}, ${p.payouts} payouts, c64, transaction mode, pool ${p.pooler.default_pool_size}): ` +
    `submit ${p.submit_throughput_per_s}/s${vs(r?.submit_throughput)} (p50 ${p.submit_p50_ms} ms, p99 ${p.submit_p99_ms} ms, errors ${p.errors}); ` +
    `last webhook ${p.seconds_to_last_webhook} s → ${p.end_to_end_per_s}/s end to end${vs(r?.end_to_end)}` +
    (p.cpu_by_component
      ? `; ${describeComponentCpu(p.cpu_by_component)}${r?.postgres_payouts_per_cpu_second ? `; PostgreSQL payouts per CPU-second pooler/direct ${r.postgres_payouts_per_cpu_second}` : ''}`
      : '')
  );
}
