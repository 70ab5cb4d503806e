// The one way a test waits for something another process, a timer or a pool does: poll a probe,
// bounded, and fail saying what never happened. Never a fixed sleep: a sleep long enough on a busy
// machine is a waste on an idle one, and one short enough on an idle machine fails on a busy one.

export interface UntilOptions {
  /** The bound: past it, `until` throws. */
  timeoutMs?: number;
  /** Pause between two probes. */
  intervalMs?: number;
  /** More to say when the bound is reached (what was seen last: output, a row, a count). */
  detail?: () => string;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_INTERVAL_MS = 50;

/**
 * Resolves with the first value of `probe` that is neither undefined nor false (a probe answering a
 * yes/no question resolves with true); rejects with `<what>: not within <timeoutMs> ms` once the
 * bound has passed. An error thrown by the probe is not retried: it fails the wait.
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: UntilOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      const detail = options.detail?.();
      throw new Error(`${what}: not within ${timeoutMs} ms${detail ? `\n${detail}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
