// Every adapter's answers are checked here against what we asked, before anything believes them: an
// answer about another reference, an amount or bank reference we cannot read, or (to a send) an amount
// other than the one we sent becomes `unconfirmed` with its doubt (the payment is asked about again,
// the doubt opens an anomaly); an answer that passes loses its echo and keeps the amount it gives, for
// the outcome decision to compare with the payment's. A notification (a callback) is checked the same
// way: one that fails carries its doubt, and the reaper opens that anomaly instead of applying it.
// The checks are pure (domain/rail-answer-check.ts).
import { checkEcho } from '../domain/rail-answer-check.ts';
import { passedThrough, type RailAdapter, type RailLookup, type RailNotification, type RailStatus } from './rail.ts';

/** One answer as the rest of the service may read it: checked against `asked`, without its echo. */
function checked<A extends RailLookup>(asked: { reference: string; amountMinor?: bigint }, answer: A): A | RailStatus {
  if (answer.status === 'not_found') return answer;
  const { echo, ...said } = answer as RailStatus;
  if (echo === undefined) return said;
  const result = checkEcho(asked, echo);
  if ('doubt' in result) return { status: 'unconfirmed', doubt: result.doubt };
  return result.amountMinor === undefined || said.status === 'unconfirmed'
    ? said
    : { ...said, amountMinor: result.amountMinor };
}

/** A notification as the reaper may read it: its echo checked into the amount it gives, or its doubt. */
function checkedNotification(notification: RailNotification): RailNotification {
  const { echo, ...said } = notification;
  if (echo === undefined) return said;
  const result = checkEcho({ reference: notification.reference }, echo);
  if ('doubt' in result) return { ...said, doubt: result.doubt };
  return result.amountMinor === undefined ? said : { ...said, amountMinor: result.amountMinor };
}

/** `rail`, each answer about a transfer checked against what was asked; every other call as it is. */
export function answerCheckedRail(rail: RailAdapter): RailAdapter {
  const lookupMany = rail.lookupMany?.bind(rail);
  return {
    ...passedThrough(rail),
    submit: async (transfer, signal) => checked(transfer, await rail.submit(transfer, signal)) as RailStatus,
    lookup: async (reference, mode) => checked({ reference }, await rail.lookup(reference, mode)),
    pendingNotifications: async (limit) => (await rail.pendingNotifications(limit)).map(checkedNotification),
    ...(lookupMany && {
      lookupMany: async (references: readonly string[], mode: 'test' | 'live') => {
        const answers = await lookupMany(references, mode);
        if (answers.length !== references.length)
          throw new Error(
            `rail ${rail.name} answered ${answers.length} of ${references.length} references in a bulk status`,
          );
        return answers.map((answer, i) => checked({ reference: references[i]! }, answer));
      },
    }),
  };
}
