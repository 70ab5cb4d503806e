// When a payout is sent, and when the reaper looks at it. The payout path sends right after its batch
// commits, within a window; after that only the reaper may send, so a payment is never sent by both.
// Every time here is counted from the batch's start (the payment's `created_at`). Pure.

/** What the schedule is made of (configuration). */
export interface SendTiming {
  /** The rail's hard timeout on one call. */
  railTimeoutMs: number;
  reaperIntervalMs: number;
}

/** The shortest send window (see `sendWindowMs`). */
const SEND_WINDOW_MIN_MS = 1_000;
/**
 * After the payout's answer should have been recorded, a retry with its key answers with the payment
 * as it stands (the request that held the key died or lost its connection after the commit).
 */
const ANSWER_MARGIN_MS = 5_000;

/**
 * The reaper's first question after the rail's usual resolution time comes this much later: the rail
 * counts from its receipt of the transfer, a little after our commit. Asked too early, the rail answers
 * "processing" and the next question waits a whole reaper interval.
 * @internal Exported for its tests, not used elsewhere.
 */
export const FIRST_LOOK_MARGIN_MS = 250;

/**
 * How long after its batch began the payout path may still ask the rail to send; later (a slow batch,
 * a stalled process) it leaves the send to the reaper, which sends a payment the rail has not heard of
 * only after this window plus the rail's timeout (`sendEndsMs`).
 */
export function sendWindowMs(timing: Pick<SendTiming, 'reaperIntervalMs'>): number {
  return Math.max(timing.reaperIntervalMs, SEND_WINDOW_MIN_MS);
}

/**
 * How long after its batch began the payout path's own send may still be running: until then a
 * transfer the rail has not heard of may be on its way, and only the payout path may send it.
 */
export function sendEndsMs(timing: SendTiming): number {
  return sendWindowMs(timing) + timing.railTimeoutMs;
}

/** How long after its batch began the payout holds its Idempotency-Key for its answer: its send, and a margin. */
export function keyHeldMs(timing: SendTiming): number {
  return sendEndsMs(timing) + ANSWER_MARGIN_MS;
}

/**
 * How long after its batch began the reaper first asks the rail about an accepted payout: as soon as
 * the rail usually has the outcome (`resolvesWithinMs`), so that a short sandbox settle delay is a
 * short wait, and at the latest one reaper interval after the payout path's send has ended. A look
 * that comes while the send may still be running only asks: it never sends (see Reaper.ask).
 */
export function firstLookMs(timing: SendTiming, resolvesWithinMs?: number): number {
  return lookAfterResolution(resolvesWithinMs, sendEndsMs(timing) + timing.reaperIntervalMs);
}

/**
 * When the reaper next asks about a payout the rail answered without an outcome (`unknown`): one
 * reaper interval later, or sooner when the rail usually has the outcome by then. The rail has the
 * transfer, so an early question is only a question.
 */
export function unknownRecheckMs(timing: Pick<SendTiming, 'reaperIntervalMs'>, resolvesWithinMs?: number): number {
  return lookAfterResolution(resolvesWithinMs, timing.reaperIntervalMs);
}

/** Just after the rail usually has the outcome, and never later than `latestMs`. */
function lookAfterResolution(resolvesWithinMs: number | undefined, latestMs: number): number {
  return resolvesWithinMs === undefined ? latestMs : Math.min(resolvesWithinMs + FIRST_LOOK_MARGIN_MS, latestMs);
}

/**
 * The reaper sends again a transfer the rail says it never received (or answered a send with an
 * unexpected 4xx, leaving its fate unknown) only at its first this-many questions, which follow the
 * per-payment backoff (1, 2, 4 … s at the defaults: about four minutes in all). After that it only
 * asks, and the payment's `resend_exhausted` anomaly asks a person to find out what happened.
 */
export const RESEND_QUESTIONS_MAX = 8;
