// What a rail says about a transfer is believed only once it is checked against what we sent: the
// one place every adapter's answers (to a send, to a question, in a bulk answer) and every rail
// notification pass through before an outcome is decided. An answer that fails a check says nothing
// certain: it is read as "not confirmed" (the payment is asked about again, its money stays held) and
// carries a doubt — the anomaly an operator sees. Pure; no I/O.
import type { AnomalyKind, Evidence } from './anomalies.ts';

/**
 * A bank reference we store and show: letters, digits and hyphens (never a formula, a tag or a path).
 * @internal Exported for its tests, not used elsewhere.
 */
export const BANK_REFERENCE_PATTERN = /^[A-Za-z0-9-]{1,64}$/;

/** An amount as the rail must write it: a decimal string of minor units, digits only. */
const AMOUNT_PATTERN = /^[0-9]{1,19}$/;

/**
 * How far ahead of our clock a rail's settlement time may be (its clock and ours drift), and how far
 * before we sent the transfer: beyond either, the time is the rail's mistake, not the transfer's.
 * @internal Exported for its tests, not used elsewhere.
 */
export const RAIL_CLOCK_SKEW_MS = 5 * 60_000;

/** Why an answer is not believed: the anomaly it opens, with what the rail said. */
export interface Doubt {
  kind: AnomalyKind;
  theirs: Evidence;
}

/** What the rail said the transfer was, verbatim (any JSON type), for the checks. */
export interface RailEcho {
  /** The reference the answer is about; absent when the rail's answer does not repeat it. */
  reference?: unknown;
  /** The amount the answer gives, as written; absent when it gives none. */
  amountMinor?: unknown;
  /** The bank reference the answer gives, as written. */
  bankReference?: unknown;
}

const shown = (value: unknown): string =>
  (typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))).slice(0, 200);

/** The amount an echo gives: undefined when none, a Doubt when it is not a decimal string of minor units. */
function amountOfEcho(echo: RailEcho): bigint | undefined | Doubt {
  const raw = echo.amountMinor;
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string' || !AMOUNT_PATTERN.test(raw))
    return { kind: 'unreadable_answer', theirs: { field: 'amountMinor', value: shown(raw) } };
  return BigInt(raw);
}

/**
 * The checks an answer about `asked` must pass, in order: it is about our reference; its amount is
 * readable (and ours, when `amountMinor` — what we sent — is known here); its bank reference is a plain
 * one. Returns the amount it gives (to be compared with the payment's by the outcome decision when not
 * known here), or the first doubt.
 */
export function checkEcho(
  asked: { reference: string; amountMinor?: bigint },
  echo: RailEcho,
): { amountMinor?: bigint } | { doubt: Doubt } {
  if (echo.reference !== undefined && echo.reference !== asked.reference) {
    return {
      doubt: { kind: 'reference_mismatch', theirs: { asked: asked.reference, answeredAbout: shown(echo.reference) } },
    };
  }
  const amount = amountOfEcho(echo);
  if (typeof amount === 'object') return { doubt: amount };
  if (amount !== undefined && asked.amountMinor !== undefined && amount !== asked.amountMinor) {
    return { doubt: { kind: 'amount_mismatch', theirs: { amount: amount.toString() } } };
  }
  if (
    echo.bankReference !== undefined &&
    (typeof echo.bankReference !== 'string' || !BANK_REFERENCE_PATTERN.test(echo.bankReference))
  ) {
    return {
      doubt: { kind: 'unreadable_answer', theirs: { field: 'bankReference', value: shown(echo.bankReference) } },
    };
  }
  return amount === undefined ? {} : { amountMinor: amount };
}

/**
 * The settlement time we record: the rail's, when it falls between the transfer's start (less the
 * skew) and now (plus the skew); otherwise our own time, and the doubt that says why.
 */
export function settledAtOf(theirs: Date, sentAt: Date, now: Date): { settledAt: Date; doubt?: Doubt } {
  const t = theirs.getTime();
  if (!Number.isNaN(t) && t <= now.getTime() + RAIL_CLOCK_SKEW_MS && t >= sentAt.getTime() - RAIL_CLOCK_SKEW_MS)
    return { settledAt: theirs };
  return {
    settledAt: now,
    doubt: { kind: 'implausible_settled_at', theirs: { settledAt: Number.isNaN(t) ? null : theirs.toISOString() } },
  };
}
