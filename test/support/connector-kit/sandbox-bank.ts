// The sandbox rail as a connector under test: its bank is its own state in our database, steered by
// the trigger national ids (docs/sandbox.md) and by the notifications a test can make it send. Its
// clock is a manual one: a transfer it has not decided stays open until `decide` moves the clock past
// the settle delay, so no case depends on how fast the machine is.
//
// The sandbox's catalogue is the shipped file and its state is our database: neither can go down, so
// `catalogueDown` and `unreachable` are absent and the kit reports those cases as skipped.

import type { Database } from '../../../src/db/database.ts';
import { findSandboxTransfer } from '../../../src/db/repositories/sandbox-rail.ts';
import { ManualClock } from '../clock.ts';
import type { RailFailureReason } from '../../../src/domain/failure-reasons.ts';
import type { RailTransfer } from '../../../src/rails/rail.ts';
import {
  newBankReference,
  queueSandboxNotification,
  SandboxRail,
  type SandboxNotice,
} from '../../../src/rails/sandbox-rail.ts';
import type { BankControl, BankNotice, BankScenario, ConnectorUnderTest } from './bank-control.ts';

/** Long enough that nothing the sandbox has not been told to decide settles during a case. */
const SANDBOX_KIT_SETTLE_DELAY_MS = 3_600_000;
/** The payout path's wait in the hang case: short, so the case is quick, and far above a real submit. */
const SANDBOX_KIT_RAIL_TIMEOUT_MS = 1_000;
/** A non-trigger national id: the default outcome (processing until the settle delay has passed). */
const ORDINARY_NATIONAL_ID = 'V12345678';

/** The trigger id for each failure the sandbox's own rules produce (docs/sandbox.md). */
const FAILURE_TRIGGERS: Partial<Record<RailFailureReason, string>> = {
  rail_rejected: 'V99990003',
  beneficiary_mismatch: 'V99990004',
  bank_unreachable: 'V99990005',
  invalid_destination_account: 'V99990006',
};

function triggerOf(scenario: BankScenario): string {
  switch (scenario.kind) {
    case 'settle':
      return 'V99990001';
    case 'hang':
      return 'V99990009';
    case 'processing':
      return ORDINARY_NATIONAL_ID;
    case 'fail': {
      const trigger = FAILURE_TRIGGERS[scenario.reason];
      if (!trigger) throw new Error(`the sandbox cannot be made to answer ${scenario.reason}`);
      return trigger;
    }
  }
}

class SandboxBank implements BankControl {
  readonly failureReasons = Object.keys(FAILURE_TRIGGERS) as RailFailureReason[];

  constructor(
    private readonly db: Database,
    private readonly clock: ManualClock,
    private readonly mode: 'test' | 'live',
  ) {}

  async arrange(transfer: RailTransfer, scenario: BankScenario): Promise<RailTransfer> {
    return { ...transfer, beneficiary: { ...transfer.beneficiary, nationalId: triggerOf(scenario) } };
  }

  async submissionsOf(reference: string): Promise<number> {
    return (await findSandboxTransfer(this.db, reference, this.mode))?.submissions ?? 0;
  }

  /** Queued at past, increasing times, so they are due now and handed out in the order given. */
  async notify(reference: string, notices: readonly BankNotice[], options: { times?: number } = {}): Promise<void> {
    const row = await findSandboxTransfer(this.db, reference, this.mode);
    if (!row) throw new Error(`the sandbox holds no transfer ${reference} to notify about`);
    const bankReference = row.bank_reference ?? newBankReference();
    const times = options.times ?? 1;
    const pushes = notices.flatMap((notice) => Array.from({ length: times }, () => notice));
    const now = this.clock.now().getTime();
    for (const [i, notice] of pushes.entries()) {
      const said: SandboxNotice =
        notice.kind === 'settled'
          ? { kind: 'settled', bankReference, amountMinor: row.amount_minor }
          : notice.kind === 'failed'
            ? { kind: 'failed', reason: notice.reason, amountMinor: row.amount_minor }
            : { kind: 'reversed', reason: notice.reason, bankReference, amountMinor: row.amount_minor };
      const at = new Date(now - (pushes.length - i));
      const id = await queueSandboxNotification(
        this.db,
        { tenantId: row.tenant_id, mode: row.mode },
        reference,
        said,
        at,
      );
      if (id === undefined) throw new Error(`the sandbox refused a notification about ${reference}: too many waiting`);
    }
  }

  /** The sandbox decides a transfer when its settle delay has passed: the clock moves there. */
  async decide(reference: string): Promise<void> {
    const row = await findSandboxTransfer(this.db, reference, this.mode);
    if (!row) throw new Error(`the sandbox holds no transfer ${reference} to decide`);
    if (row.settle_at > this.clock.now()) this.clock.set(row.settle_at);
  }
}

/** A fresh sandbox rail (test mode) and its bank over `db`, a migrated database the caller owns. */
export async function sandboxConnector(db: Database): Promise<ConnectorUnderTest> {
  const clock = new ManualClock(new Date());
  const adapter = new SandboxRail(db, clock, {
    settleDelayMs: SANDBOX_KIT_SETTLE_DELAY_MS,
    reverseDelayMs: SANDBOX_KIT_SETTLE_DELAY_MS,
  });
  return {
    adapter,
    bank: new SandboxBank(db, clock, 'test'),
    mode: 'test',
    railTimeoutMs: SANDBOX_KIT_RAIL_TIMEOUT_MS,
    // Nothing was started: the database is the caller's, and a hang ends when its call is aborted.
    close: async () => undefined,
  };
}
