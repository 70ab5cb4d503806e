import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../app.ts';
import type { Config } from '../config.ts';
import { postEntry } from '../db/repositories/ledger.ts';
import { fundingEntry } from '../domain/ledger.ts';
import type { BootstrapStep } from '../services/bootstrap.ts';
import { DailyCloseWorker } from './daily-close.ts';
import { Reaper } from './reaper.ts';
import { startLoop, type RunningLoop } from './run-loop.ts';

export interface RunningWorkers {
  stop(): Promise<void>;
}

const DAILY_CLOSE_INTERVAL_MS = 60_000;

/** The background loops of the `worker` role: reaper and daily close (webhook dispatch follows). */
export function startWorkers(services: Services, log: FastifyBaseLogger): RunningWorkers {
  const { config } = services;
  const reaper = new Reaper(services.db, services.clock, services.rails, services.outcomes, {
    intervalMs: config.reaperIntervalMs,
    railTimeoutMs: config.sandboxRailTimeoutMs,
  });
  const close = new DailyCloseWorker(services.treasury, log);
  const loops: RunningLoop[] = [
    startLoop({ name: 'reaper', intervalMs: config.reaperIntervalMs, runOnce: () => reaper.runOnce(), log }),
    startLoop({ name: 'daily-close', intervalMs: DAILY_CLOSE_INTERVAL_MS, runOnce: () => close.runOnce(), log }),
  ];
  return {
    async stop() {
      await Promise.all(loops.map((loop) => loop.stop()));
    },
  };
}

/** Sandbox money for the bootstrap tenant: 1,000,000,000.00 Bs of test-mode prefunding. */
export const SANDBOX_PREFUNDING_MINOR = 100_000_000_000n;

/** First-start steps contributed by features: the sandbox tenant is prefunded (test mode). */
export function bootstrapSteps(_config: Config): BootstrapStep[] {
  return [
    async (tx, sandbox) => {
      await postEntry(tx, { tenantId: sandbox.tenantId, mode: 'test' }, fundingEntry('BS', SANDBOX_PREFUNDING_MINOR));
    },
  ];
}
