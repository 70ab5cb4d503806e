// A rail serves one mode, and no call of another mode's payment ever reaches it: a test payment can
// never reach a live endpoint, whatever a routing rule or a stored setting says. Every call that
// names a payment's mode (submit, lookup, bulk lookup) is checked here, before the adapter; one of
// another mode is refused as an invariant breach — nothing is sent.
import type { Mode } from '../domain/partition.ts';
import { passedThrough, type RailAdapter } from './rail.ts';

/** Thrown when a call would carry a payment of a mode its rail does not serve. */
class RailModeMismatch extends Error {
  constructor(rail: string, mode: string, serves: readonly Mode[]) {
    super(
      `invariant: a ${mode} payment was about to reach rail ${rail}, which serves ${serves.join(', ')} only; nothing was sent`,
    );
    this.name = 'RailModeMismatch';
  }
}

/** `rail`, each call of a payment checked against the modes it serves; every other call as it is. */
export function modeGuardedRail(rail: RailAdapter, serves: readonly Mode[]): RailAdapter {
  const check = (mode: string) => {
    if (!(serves as readonly string[]).includes(mode)) throw new RailModeMismatch(rail.name, mode, serves);
  };
  const lookupMany = rail.lookupMany?.bind(rail);
  return {
    ...passedThrough(rail),
    // The modes it serves are the ones it is guarded by, whatever the adapter says of itself.
    modes: serves,
    submit: async (transfer, signal) => {
      check(transfer.mode);
      return rail.submit(transfer, signal);
    },
    lookup: async (reference, mode) => {
      check(mode);
      return rail.lookup(reference, mode);
    },
    ...(lookupMany && {
      lookupMany: async (references: readonly string[], mode: Mode) => {
        check(mode);
        return lookupMany(references, mode);
      },
    }),
  };
}
