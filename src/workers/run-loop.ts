import type { FastifyBaseLogger } from 'fastify';
import { InvariantError } from '../domain/assert.ts';

/**
 * What a pass says about the next one: true, go again at once (it filled its batch: more work is
 * probably waiting); false, sleep the loop's interval; a number, sleep that many milliseconds, at most
 * the interval (the pass knows when its next work falls due).
 */
export type PassOutcome = boolean | number;

export interface LoopOptions {
  name: string;
  intervalMs: number;
  /** One bounded pass. */
  runOnce: () => Promise<PassOutcome>;
  log: FastifyBaseLogger;
  errorBackoffMaxMs?: number;
  /** Counts every pass by result (bolivar_worker_passes_total). */
  metrics?: { workerPass(worker: string, ok: boolean): void };
}

/**
 * The longest pause after failed passes. Short, because the usual cause is a database restart: the
 * loops must pick up again within seconds of it coming back.
 */
const LOOP_ERROR_BACKOFF_MAX_MS = 5_000;

export interface RunningLoop {
  readonly name: string;
  /**
   * Settles when the loop has stopped: after `stop`, or rejected with the InvariantError a pass broke
   * (unless something awaits it, that rejection is unhandled and stops the process).
   */
  readonly ended: Promise<void>;
  stop(): Promise<void>;
}

/**
 * A worker loop: run a bounded pass, go again at once while passes come back full, sleep when idle
 * (the interval, or until the pass's next work is due if sooner), back off (doubling, capped) after an
 * error. `stop` lets the current pass finish.
 */
export function startLoop(options: LoopOptions): RunningLoop {
  const backoffMaxMs = options.errorBackoffMaxMs ?? LOOP_ERROR_BACKOFF_MAX_MS;
  let stopped = false;
  let wake: (() => void) | undefined;
  let failures = 0;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const done = (async () => {
    while (!stopped) {
      let outcome: PassOutcome = false;
      try {
        outcome = await options.runOnce();
        failures = 0;
        options.metrics?.workerPass(options.name, true);
      } catch (error) {
        if (error instanceof InvariantError) {
          // A bug, not a condition of the world: passing again would only repeat it. The loop's
          // promise rejects, unhandled, and the process stops (its supervisor starts it again).
          options.log.fatal(
            { worker: options.name, message: error.message },
            'worker pass broke an invariant; stopping',
          );
          throw error;
        }
        failures += 1;
        options.metrics?.workerPass(options.name, false);
        // Only the code and message: a driver error's detail may quote parameters.
        options.log.error(
          { worker: options.name, code: (error as { code?: string })?.code, message: (error as Error)?.message },
          'worker pass failed',
        );
      }
      if (stopped) break;
      if (failures > 0) await sleep(Math.min(options.intervalMs * 2 ** Math.min(failures, 20), backoffMaxMs));
      else if (outcome === false) await sleep(options.intervalMs);
      else if (outcome !== true) await sleep(Math.min(Math.max(outcome, 0), options.intervalMs));
    }
  })();

  return {
    name: options.name,
    ended: done,
    async stop() {
      stopped = true;
      wake?.();
      await done;
    },
  };
}
