import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../app.ts';
import type { Config } from '../config.ts';
import type { BootstrapStep } from '../services/bootstrap.ts';

export interface RunningWorkers {
  stop(): Promise<void>;
}

/** The background loops of the `worker` role (reaper, webhook dispatcher, daily close). */
export function startWorkers(_services: Services, _log: FastifyBaseLogger): RunningWorkers {
  const loops: Array<{ stop(): Promise<void> }> = [];
  return {
    async stop() {
      await Promise.all(loops.map((loop) => loop.stop()));
    },
  };
}

/** First-start steps contributed by features (sandbox funding, webhook endpoint). */
export function bootstrapSteps(_config: Config): BootstrapStep[] {
  return [];
}
