import { passedThrough, RailNotReceivedError, type RailAdapter } from './rail.ts';

export interface RailObserver {
  railCall(rail: string, operation: 'submit' | 'lookup', outcome: string, seconds: number): void;
}

/**
 * The rail with every submit and lookup timed and counted by what it answered. A submit the caller
 * abandons (its signal aborts at the rail timeout) counts as `timeout` at that moment; whatever the
 * rail says later is not counted again.
 */
export function observedRail(rail: RailAdapter, observer: RailObserver): RailAdapter {
  const timed = <T extends { status: string }>(
    operation: 'submit' | 'lookup',
    call: () => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> => {
    const startedAt = performance.now();
    let counted = false;
    const count = (outcome: string) => {
      if (counted) return;
      counted = true;
      observer.railCall(rail.name, operation, outcome, (performance.now() - startedAt) / 1000);
    };
    const onAbort = () => count('timeout');
    signal?.addEventListener('abort', onAbort, { once: true });
    return call().then(
      (answer) => {
        signal?.removeEventListener('abort', onAbort);
        count(answer.status);
        return answer;
      },
      (error: unknown) => {
        signal?.removeEventListener('abort', onAbort);
        count(signal?.aborted ? 'timeout' : error instanceof RailNotReceivedError ? 'not_received' : 'error');
        throw error;
      },
    );
  };
  const lookupMany = rail.lookupMany?.bind(rail);
  return {
    ...passedThrough(rail),
    submit: (transfer, signal) => timed('submit', () => rail.submit(transfer, signal), signal),
    lookup: (reference, mode) => timed('lookup', () => rail.lookup(reference, mode)),
    // Each answer of a bulk lookup counts as one lookup, timed by the call that brought it.
    ...(lookupMany && {
      lookupMany: async (references: readonly string[], mode: 'test' | 'live') => {
        const startedAt = performance.now();
        try {
          const answers = await lookupMany(references, mode);
          const seconds = (performance.now() - startedAt) / 1000;
          for (const answer of answers) observer.railCall(rail.name, 'lookup', answer.status, seconds);
          return answers;
        } catch (error) {
          const seconds = (performance.now() - startedAt) / 1000;
          for (let i = 0; i < references.length; i += 1) observer.railCall(rail.name, 'lookup', 'error', seconds);
          throw error;
        }
      },
    }),
  };
}
