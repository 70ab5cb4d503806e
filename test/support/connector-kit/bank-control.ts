// The bank behind an adapter under test, as the connector kit drives it. An adapter is tested against
// a bank the test can steer: the sandbox rail's own state (its trigger ids), or the gateway simulator
// (its fault switches). Each adapter's test supplies one of these beside its factory.

import type { RailFailureReason } from '../../../src/domain/failure-reasons.ts';
import type { RailAdapter, RailTransfer } from '../../../src/rails/rail.ts';

/** What the bank does with one transfer when it is submitted. */
export type BankScenario =
  | { kind: 'settle' }
  | { kind: 'fail'; reason: RailFailureReason }
  /** Received and recorded, but the answer to the submit never comes (past any timeout). */
  | { kind: 'hang' }
  /** Accepted; the outcome stays open until the bank is told (`settle` in a later step, or never). */
  | { kind: 'processing' };

/**
 * How a bank lies about one reference, as real integrations do: every answer about it (send, status,
 * bulk, callback) has these fields replaced, and a bulk answer leaves it out or gives it twice.
 */
export interface BankLie {
  with?: Record<string, unknown>;
  bulk?: 'omit' | 'duplicate';
}

/** A notification the bank pushes about a transfer it holds. */
export type BankNotice =
  { kind: 'settled' } | { kind: 'failed'; reason: RailFailureReason } | { kind: 'reversed'; reason: string };

export interface BankControl {
  /** The failure reasons this bank can be made to answer; the kit checks each of them. */
  readonly failureReasons: readonly RailFailureReason[];
  /**
   * The transfer to submit so that the bank plays `scenario` for it: the sandbox rewrites the
   * beneficiary to a trigger id; the simulator arms the scenario for this reference and returns it as is.
   */
  arrange(transfer: RailTransfer, scenario: BankScenario): Promise<RailTransfer>;
  /** How many times the bank received a submit of this reference (a duplicate counts; a lookup never). */
  submissionsOf(reference: string): Promise<number>;
  /**
   * Makes the bank push `notices` about `reference`, in this order, each `times` times (1 by default):
   * the kit asks for duplicates and for orders that contradict the transfer's history.
   */
  notify(reference: string, notices: readonly BankNotice[], options?: { times?: number }): Promise<void>;
  /**
   * Makes the bank reach now the outcome arranged for `reference` when it left the transfer pending at
   * the submit (the sandbox moves its clock past its settle delay); it never changes that outcome.
   * Absent when the bank decides on its own: the kit then asks the adapter until it has, bounded.
   */
  decide?(reference: string): Promise<void>;
  /** Takes the bank's catalogue down (or back up); absent when the bank's catalogue cannot fail. */
  catalogueDown?(down: boolean): Promise<void>;
  /**
   * Makes the bank lie about `reference` from now on (BankLie); absent when its answers are our own
   * records (the sandbox), which cannot disagree with what we sent.
   */
  lie?(reference: string, lie: BankLie): Promise<void>;
  /** Makes the bank answer that no day's statement is ready (or ready again); absent when it cannot. */
  statementNotReady?(on: boolean): Promise<void>;
  /** Sets how many entries a page of the bank's statement holds; absent when the bank does not page. */
  statementPageSize?(size: number): Promise<void>;
  /** Makes the whole bank unreachable (or reachable again); absent when the bank cannot be down. */
  unreachable?(down: boolean): Promise<void>;
}

/** An adapter and the bank behind it, fresh for a kit run; `close` stops whatever the factory started. */
export interface ConnectorUnderTest {
  adapter: RailAdapter;
  bank: BankControl;
  /** The mode the adapter serves (the transfers the kit makes carry it). */
  mode: 'test' | 'live';
  /** The rail timeout the kit bounds submits with; the hang scenario must outlast it. */
  railTimeoutMs: number;
  close(): Promise<void>;
}
