// The rail adapter: the only thing a rail implementation does is translate between our payment and
// the provider's API. Shared code (timeouts, state machine, ledger, retries) lives outside it.
// Every call is keyed by OUR reference (the payment id), so a submit can be repeated safely and an
// unknown outcome is resolved by asking, never by sending again blindly.

import type { Instrument } from '../domain/instrument.ts';
import type { RailFailureReason } from '../domain/failure-reasons.ts';
import type { Doubt, RailEcho } from '../domain/rail-answer-check.ts';
import type { Bank } from './catalogue.ts';

/**
 * Thrown by `submit` only when the rail PROVABLY did not receive the transfer: the connection was
 * refused (or never opened) before a byte of the request was written. It is the one failure after
 * which the transfer may go to another rail. Anything else that goes wrong mid-send — a reset after
 * the request was written, a 5xx, a timeout — leaves the transfer's fate unknown, and it stays on this
 * rail until the rail says what happened.
 */
export class RailNotReceivedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RailNotReceivedError';
  }
}

/**
 * Thrown by an adapter whose call failed in the service's own database, not at the rail: the sandbox's
 * bank is tables of ours, so a lost connection, a restarting server or a full pool fails its calls
 * while nothing is wrong with the rail. Its circuit breaker does not count it (`isRailFailure`):
 * skipping the rail cannot help a payout whose own commit needs that same database, and an open
 * breaker would fail, as `instrument_unsupported`, payouts the database's return would have carried.
 * The transfer's fate is unknown, as after any error. `code` and `message` are the database's, so
 * whatever tells a database error by them (a 503, a log's code) still does.
 */
export class ServiceDatabaseError extends Error {
  readonly code: string | undefined;

  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'ServiceDatabaseError';
    const code = (cause as { code?: unknown } | null | undefined)?.code;
    this.code = typeof code === 'string' ? code : undefined;
  }
}

/**
 * Is a failed call the rail's own failure, which its circuit breaker counts (it refused, threw, did
 * not answer)? Everything but the service's database failing under it (ServiceDatabaseError).
 */
export function isRailFailure(error: unknown): boolean {
  return !(error instanceof ServiceDatabaseError);
}

/** Whether the rail answers right now (`health`): the circuit breaker's half-open probe, the console. */
export type RailHealth = { ok: true } | { ok: false; message: string };

export interface RailTransfer {
  /** Our reference: the payment id. Submitting the same reference twice creates one transfer. */
  reference: string;
  tenantId: string;
  mode: 'test' | 'live';
  instrument: Instrument;
  amountMinor: bigint;
  asset: 'BS';
  beneficiary: {
    fullName: string;
    nationalId: string;
    bankCode: string;
    accountNumber: string | null;
    phone: string | null;
  };
  sender: {
    nationalId: string;
    nationality: string;
    firstName: string;
    lastName: string;
    phone: string;
    email: string;
  };
}

/**
 * What the rail says about a transfer, at submission or when asked later. An adapter gives, in
 * `echo`, what the answer said the transfer was, verbatim; the answer checks (answer-check.ts) compare
 * it with what we sent before anyone believes the answer, and replace it with the amount it gives
 * (`amountMinor`) or with an `unconfirmed` answer that carries the `doubt`.
 */
export type RailStatus = (
  | { status: 'processing'; retryAfterMs?: number }
  | { status: 'settled'; bankReference: string; settledAt: Date }
  | { status: 'failed'; reason: RailFailureReason; message?: string }
  /** The rail answered but did not confirm whether it paid (it may still); `doubt`: why it is not believed. */
  | { status: 'unconfirmed'; retryAfterMs?: number; doubt?: Doubt }
  | { status: 'reversed'; bankReference: string; reason: string }
) & { echo?: RailEcho; amountMinor?: bigint };

export type RailLookup = RailStatus | { status: 'not_found' };

/**
 * A rail-side event we did not ask for: a transfer's outcome pushed to us, or a settled transfer
 * returned by the bank. Applied like the rail's answers; one that contradicts our records is recorded
 * as an anomaly instead, and it is acknowledged only once either is committed.
 */
export type RailNotification = {
  id: string;
  reference: string;
  /**
   * The tenant and mode the transfer was sent with (RailTransfer), when the rail gives them back: the
   * payment is then found by its primary key instead of by its id alone, which reads the whole table.
   */
  tenantId?: string;
  mode?: 'test' | 'live';
  /**
   * The program that asked for this notification, when it is ours to know rather than the rail's
   * echo: the sandbox's notifications are queued by a test key, so they belong to its tenant and test
   * mode even when they name a reference nobody has.
   */
  requestedBy?: { tenantId: string; mode: 'test' | 'live' };
  /**
   * What the notification said the transfer was, verbatim, as an adapter gives it: the answer checks
   * (answer-check.ts) replace it with `amountMinor`, or with a `doubt`, before anything reads it.
   */
  echo?: RailEcho;
  /** The amount the rail says moved, when it says one (set by the answer checks). */
  amountMinor?: bigint;
  /** Set when the notification fails the answer checks: it is not applied, this anomaly is opened. */
  doubt?: Doubt;
  occurredAt: Date;
} &
  /** `settledAt`: when the rail says the money arrived, when it says (else `occurredAt`). */
  (
    | { kind: 'settled'; bankReference: string; settledAt?: Date }
    | { kind: 'failed'; reason: string }
    /** The bank reference of the settlement returned, when the rail gives it. */
    | { kind: 'reversed'; reason: string; bankReference?: string }
  );

export interface RailAdapter {
  /** How the rail is named in settings, routing rules, payments and metrics (`sandbox` is the sandbox's). */
  readonly name: string;
  /**
   * Optional: the modes this rail serves when the operator has not set them (the rails settings,
   * docs/rails.md); a connector's configuration gives them. Default: live (the sandbox: test).
   */
  readonly modes?: readonly ('test' | 'live')[];
  /**
   * Optional: how long after a submit this rail usually has the transfer's outcome. The reaper's first
   * question about a payout then comes soon after it instead of a whole reaper interval later, but
   * never before the payout path's own send has ended.
   */
  readonly resolvesWithinMs?: number;
  /**
   * Can this beneficiary receive through `instrument` right now? No money moves. `requested` is the
   * instrument the caller asked for (a sandbox trigger makes exactly that one unavailable).
   */
  instrumentAvailable(
    beneficiary: RailTransfer['beneficiary'],
    instrument: Instrument,
    requested: Instrument,
  ): Promise<boolean>;
  /** Idempotent by `transfer.reference`. May hang: the caller bounds it with a timeout. */
  submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus>;
  /** Status of a transfer by our reference; `not_found` if the rail never received it. */
  lookup(reference: string, mode: 'test' | 'live'): Promise<RailLookup>;
  /**
   * Optional: the status of many transfers in one call, one answer per reference in the same order.
   * A rail with a bulk status query implements it; the reaper then asks once per pass instead of once
   * per payment.
   */
  lookupMany?(references: readonly string[], mode: 'test' | 'live'): Promise<RailLookup[]>;
  /** Unacknowledged rail-side events, oldest first, at most `limit`. */
  pendingNotifications(limit: number): Promise<RailNotification[]>;
  acknowledgeNotification(id: string): Promise<void>;
  /** The banks this rail reaches through `instrument` (its published catalogue); may fail (an outage). */
  banks(instrument: Instrument): Promise<Bank[]>;
  /** Cheap and without side effects: does the rail answer? Never throws; bounded by `signal`. */
  health(signal: AbortSignal): Promise<RailHealth>;
  /**
   * Optional: the rail's statement of one Caracas day (YYYY-MM-DD): every transfer of ours that
   * reached a final state that day, as the bank records it, read as it is needed (a day may be
   * 100,000 lines). Throws RailStatementNotReady while the rail has not closed that day. The worker
   * pulls it daily and matches it against our payments (docs/rails.md).
   */
  statement?(day: string, signal: AbortSignal): AsyncIterable<RailStatementEntry>;
}

/**
 * One line of a rail's statement, verbatim as the rail wrote it (strings): the statement import reads
 * and checks every value, exactly as it does a file an operator posts.
 */
export interface RailStatementEntry {
  reference: string;
  /** `settled`, `failed` or `reversed` (or any word the statement import accepts for one of them). */
  status: string;
  amountMinor: string;
  /** Empty only on a failed line. */
  bankReference: string;
  valueDate: string;
}

/** The rail has not closed the day it was asked for: ask again later. */
export class RailStatementNotReady extends Error {
  constructor(day: string) {
    super(`the rail has no statement of ${day} yet`);
    this.name = 'RailStatementNotReady';
  }
}

/** What a wrapper of an adapter (mode guard, answer checks, observation) passes on unchanged. */
type PassedThrough = Pick<
  RailAdapter,
  | 'name'
  | 'modes'
  | 'resolvesWithinMs'
  | 'instrumentAvailable'
  | 'pendingNotifications'
  | 'acknowledgeNotification'
  | 'banks'
  | 'health'
  | 'statement'
>;

/**
 * The members of `rail` a wrapper passes on as they are: a wrapper spreads these and then gives the
 * calls it guards, checks or times (submit, lookup, lookupMany).
 */
export function passedThrough(rail: RailAdapter): PassedThrough {
  return {
    name: rail.name,
    ...(rail.modes !== undefined && { modes: rail.modes }),
    ...(rail.resolvesWithinMs !== undefined && { resolvesWithinMs: rail.resolvesWithinMs }),
    instrumentAvailable: (beneficiary, instrument, requested) =>
      rail.instrumentAvailable(beneficiary, instrument, requested),
    pendingNotifications: (limit) => rail.pendingNotifications(limit),
    acknowledgeNotification: (id) => rail.acknowledgeNotification(id),
    banks: (instrument) => rail.banks(instrument),
    health: (signal) => rail.health(signal),
    ...(rail.statement && { statement: (day: string, signal: AbortSignal) => rail.statement!(day, signal) }),
  };
}
