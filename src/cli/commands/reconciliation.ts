// Reconciliation: queue runs that prove the books now, follow them to their end (--wait), read them back.
import { CliError, type Command } from '../command.ts';
import { given, int, text } from '../flags.ts';
import { ask, type Admin } from '../service.ts';

/** `reconcile --wait`: how often it reads a run again, and how long it waits by default. */
const RECONCILE_POLL_MS = 1_000;
const RECONCILE_WAIT_DEFAULT_S = 600;
/** Exit code of `reconcile --wait` when a run found discrepancies or did not complete. */
const EXIT_NOT_CLEAN = 3;

/** Reads a run until it has ended (completed, failed or abandoned), up to `deadline`. */
async function runWhenEnded(id: string, deadline: number, timeoutS: number): Promise<unknown> {
  for (;;) {
    const run = await ask((admin) => admin.reconciliation.get(id));
    if (run.status !== 'queued' && run.status !== 'running') return run;
    if (Date.now() + RECONCILE_POLL_MS > deadline) {
      throw new CliError(
        `run ${id} is still ${run.status} after ${timeoutS} s; see it later with: bolivar reconciliation show --run ${id}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RECONCILE_POLL_MS));
  }
}

const RECONCILE: Command = {
  name: 'reconcile',
  summary: 'Reconcile the books now (POST /v1/admin/reconciliation/runs)',
  details:
    'Queues a run for one tenant (one mode, or both) or, without --tenant, for every tenant and mode with books, and prints\n' +
    'the runs. A run proves the whole history; --incremental proves what was written since the last completed run, as\n' +
    'the schedule does. With --wait it follows each run until it ends and prints each with its discrepancies; it then exits 0 when\n' +
    `every run completed clean, ${EXIT_NOT_CLEAN} when one found discrepancies, failed or was abandoned.`,
  flags: {
    tenant: {
      type: 'string',
      value: 'ID',
      description: 'only this tenant (default: every tenant and mode with books)',
    },
    mode: { type: 'string', value: 'test|live', description: 'only this mode (default: both)' },
    incremental: {
      type: 'boolean',
      description: 'prove only what was written since the last completed run (default: the whole history)',
    },
    wait: { type: 'boolean', description: 'follow the runs until they end' },
    'timeout-s': {
      type: 'string',
      value: 'N',
      description: `with --wait, give up after N seconds (default ${RECONCILE_WAIT_DEFAULT_S})`,
    },
  },
  run: async (v) => {
    const timeoutS = int(v['timeout-s'], 'timeout-s') ?? RECONCILE_WAIT_DEFAULT_S;
    const started = await ask((admin) =>
      admin.reconciliation.start({
        tenantId: text(v.tenant),
        mode: text(v.mode),
        scope: v.incremental ? 'incremental' : undefined,
      }),
    );
    if (!v.wait) return started;
    const deadline = Date.now() + timeoutS * 1000;
    const data: unknown[] = [];
    for (const { id } of started.data) data.push(await runWhenEnded(id, deadline, timeoutS));
    return { data, total: started.total };
  },
  exitCode: (result) => {
    const runs = (result as { data: Array<{ status: string; clean?: boolean | null }> }).data;
    return runs.some((r) => r.status !== 'queued' && r.status !== 'running' && r.clean !== true) ? EXIT_NOT_CLEAN : 0;
  },
};

export const RECONCILIATION_COMMANDS: Command[] = [
  RECONCILE,
  {
    name: 'reconciliation list',
    summary: 'List reconciliation runs, newest first (GET /v1/admin/reconciliation/runs)',
    details: 'Prints one page with has_more and next_cursor; pass next_cursor as --cursor for the next one.',
    flags: {
      tenant: { type: 'string', value: 'ID', description: "only this tenant's runs" },
      mode: { type: 'string', value: 'test|live', description: 'only runs of this mode' },
      status: {
        type: 'string',
        value: 'STATUS',
        description: 'only runs in this status: queued, running, completed, failed or abandoned',
      },
      limit: { type: 'string', value: 'N', description: 'page size, 1 to 100 (default 25)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the next_cursor of the previous page' },
    },
    run: (v) => {
      const query: Parameters<Admin['reconciliation']['listPage']>[0] = {
        tenantId: text(v.tenant),
        mode: text(v.mode),
        status: text(v.status),
        cursor: text(v.cursor),
        limit: int(v.limit, 'limit'),
      };
      return ask((admin) => admin.reconciliation.listPage(query));
    },
  },
  {
    name: 'reconciliation show',
    summary: 'Show a reconciliation run with its discrepancies (GET /v1/admin/reconciliation/runs/{id})',
    flags: {
      run: {
        type: 'string',
        value: 'ID',
        required: true,
        description: 'the run id (reconcile and reconciliation list print it)',
      },
    },
    run: (v) => ask((admin) => admin.reconciliation.get(given(v.run))),
  },
];
