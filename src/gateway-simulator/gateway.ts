// The simulated bank gateway's state: the transfers it received (from its journal), the scenario
// armed for a reference, and the outcome each transfer reaches. Pure bookkeeping: HTTP is server.ts.
import { randomInt } from 'node:crypto';
import { bankDayOf } from './bank-day.ts';
import type { GatewayStatementPage, GatewayTransfer, GatewayTransferRequest } from '../rails/http-bank/protocol.ts';
import { Journal, type JournalRecord, type PlannedOutcome, type RecordedOutcome } from './journal.ts';

/** What the gateway does with a transfer of one reference, armed before it is submitted. */
export type Scenario =
  { kind: 'settle' } | { kind: 'fail'; errorCode: string } | { kind: 'hang' } | { kind: 'processing' };

interface SimTransfer {
  reference: string;
  request: GatewayTransferRequest;
  receivedAt: number;
  /** When the planned outcome happens; null: it stays PROCESSING until the control API says otherwise. */
  settleAt: number | null;
  planned: PlannedOutcome;
  scenario: string;
  submissions: number;
  outcome: RecordedOutcome;
}

export type Submission =
  { kind: 'answer'; transfer: GatewayTransfer; created: boolean } | { kind: 'hang' } | { kind: 'conflict' };

function bankReference(): string {
  return String(randomInt(0, 1_000_000_000_000)).padStart(12, '0');
}

export class GatewayState {
  private readonly transfers = new Map<string, SimTransfer>();
  private readonly scenarios = new Map<string, Scenario>();

  constructor(
    private readonly journal: Journal,
    private readonly settleDelayMs: number,
    /** Told about every status change, to send its callback. */
    private readonly onOutcome: (transfer: GatewayTransfer) => void,
  ) {
    for (const record of Journal.load(journal.dir)) this.replay(record);
  }

  private replay(record: JournalRecord): void {
    if (record.t === 'transfer') {
      this.transfers.set(record.reference, {
        reference: record.reference,
        request: record.request as GatewayTransferRequest,
        receivedAt: record.receivedAt,
        settleAt: record.settleAt,
        planned: record.planned,
        scenario: record.scenario,
        submissions: 1,
        outcome: { status: 'PROCESSING', at: record.receivedAt },
      });
    } else {
      const transfer = this.transfers.get(record.reference);
      if (!transfer) return;
      if (record.t === 'submission') transfer.submissions += 1;
      else transfer.outcome = record.outcome;
    }
  }

  /** Arms `scenario` for a reference, or for every new transfer to a beneficiary (`nid:<national id>`). */
  arm(reference: string, scenario: Scenario): void {
    this.scenarios.set(reference, scenario);
  }

  /** A submit: a new transfer, or the same one again (counted, never a second transfer). */
  submit(request: GatewayTransferRequest, now: number): Submission {
    const known = this.transfers.get(request.reference);
    if (known) {
      if (
        known.request.amountMinor !== request.amountMinor ||
        known.request.beneficiary.nationalId !== request.beneficiary.nationalId
      )
        return { kind: 'conflict' };
      known.submissions += 1;
      this.journal.append({ t: 'submission', reference: known.reference });
      return { kind: 'answer', transfer: this.view(known), created: false };
    }
    const scenario =
      this.scenarios.get(request.reference) ?? this.scenarios.get(`nid:${request.beneficiary.nationalId}`);
    const planned: PlannedOutcome =
      scenario?.kind === 'fail' ? { status: 'REJECTED', errorCode: scenario.errorCode } : { status: 'SETTLED' };
    const immediate = scenario?.kind === 'settle' || scenario?.kind === 'fail';
    const settleAt = scenario?.kind === 'processing' ? null : immediate ? now : now + this.settleDelayMs;
    const transfer: SimTransfer = {
      reference: request.reference,
      request,
      receivedAt: now,
      settleAt,
      planned,
      scenario: scenario?.kind ?? 'default',
      submissions: 1,
      outcome: { status: 'PROCESSING', at: now },
    };
    this.journal.append({
      t: 'transfer',
      reference: transfer.reference,
      request,
      receivedAt: now,
      settleAt,
      planned,
      scenario: transfer.scenario,
    });
    this.transfers.set(transfer.reference, transfer);
    // An outcome decided at receipt is part of the answer (and is also called back).
    if (immediate) this.reachPlanned(transfer, now);
    if (scenario?.kind === 'hang') return { kind: 'hang' };
    return { kind: 'answer', transfer: this.view(transfer), created: true };
  }

  /**
   * The statement of a Caracas day as the bank's own record has it (never the lies the control API
   * arms): each transfer whose final outcome came that day, by reference.
   */
  statementOf(day: string): GatewayStatementPage['entries'] {
    const entries: GatewayStatementPage['entries'] = [];
    for (const transfer of this.transfers.values()) {
      const o = transfer.outcome;
      if (o.status !== 'SETTLED' && o.status !== 'REJECTED' && o.status !== 'RETURNED') continue;
      if (bankDayOf(new Date(o.at)) !== day) continue;
      entries.push({
        reference: transfer.reference,
        status: o.status,
        amountMinor: transfer.request.amountMinor,
        ...(o.bankReference === undefined ? {} : { bankReference: o.bankReference }),
        valueDate: day,
      });
    }
    return entries.sort((a, b) => (a.reference < b.reference ? -1 : a.reference > b.reference ? 1 : 0));
  }

  find(reference: string): GatewayTransfer | undefined {
    const transfer = this.transfers.get(reference);
    return transfer && this.view(transfer);
  }

  /** The beneficiary's national id of a transfer it received: scenarios and lies may be armed by it (`nid:…`). */
  nationalIdOf(reference: string): string | undefined {
    return this.transfers.get(reference)?.request.beneficiary.nationalId;
  }

  submissionsOf(reference: string): number {
    return this.transfers.get(reference)?.submissions ?? 0;
  }

  get size(): number {
    return this.transfers.size;
  }

  /** Every transfer received, in the order received: what a test compares with the payments it made. */
  received(): Array<{
    reference: string;
    submissions: number;
    scenario: string;
    receivedAt: string;
    status: GatewayTransfer['status'];
  }> {
    return [...this.transfers.values()].map((t) => ({
      reference: t.reference,
      submissions: t.submissions,
      scenario: t.scenario,
      receivedAt: new Date(t.receivedAt).toISOString(),
      status: t.outcome.status,
    }));
  }

  /** Transfers whose planned outcome is due reach it (journaled, then called back). */
  settleDue(now: number): void {
    for (const transfer of this.transfers.values()) {
      if (transfer.outcome.status === 'PROCESSING' && transfer.settleAt !== null && transfer.settleAt <= now)
        this.reachPlanned(transfer, now);
    }
  }

  /**
   * The control API's say: the transfer's status becomes `outcome` whatever it was (a held transfer
   * settles; a settled one is later reported failed — a status that contradicts itself). False for an
   * unknown reference.
   */
  record(reference: string, outcome: Omit<RecordedOutcome, 'at' | 'bankReference'>, now: number): boolean {
    const transfer = this.transfers.get(reference);
    if (!transfer) return false;
    const kept =
      transfer.outcome.bankReference ??
      (outcome.status === 'SETTLED' || outcome.status === 'RETURNED' ? bankReference() : undefined);
    this.change(transfer, { ...outcome, at: now, ...(kept === undefined ? {} : { bankReference: kept }) });
    return true;
  }

  private reachPlanned(transfer: SimTransfer, now: number): void {
    const outcome: RecordedOutcome =
      transfer.planned.status === 'SETTLED'
        ? { status: 'SETTLED', at: now, bankReference: bankReference() }
        : { status: 'REJECTED', at: now, errorCode: transfer.planned.errorCode };
    this.change(transfer, outcome);
  }

  private change(transfer: SimTransfer, outcome: RecordedOutcome): void {
    this.journal.append({ t: 'outcome', reference: transfer.reference, outcome });
    transfer.outcome = outcome;
    this.onOutcome(this.view(transfer));
  }

  /** A transfer as the protocol writes it. */
  private view(transfer: SimTransfer): GatewayTransfer {
    const o = transfer.outcome;
    return {
      reference: transfer.reference,
      status: o.status,
      amountMinor: transfer.request.amountMinor,
      metadata: transfer.request.metadata,
      ...(o.bankReference === undefined ? {} : { bankReference: o.bankReference }),
      ...(o.status === 'SETTLED' || o.status === 'RETURNED' ? { settledAt: new Date(o.at).toISOString() } : {}),
      ...(o.errorCode === undefined ? {} : { errorCode: o.errorCode }),
      ...(o.returnReason === undefined ? {} : { returnReason: o.returnReason }),
    };
  }
}
