// An operator setting the senders payouts fall back on (steps 2 and 3 of sender resolution): each
// change and its audit row in one transaction. The row is locked first, so the audit row's `before`
// is what the change replaced. A customer row is step 7 of the lock order (db/commit/README.md): this
// transaction locks that one row and nothing else, so it never waits in a cycle with a payout batch.
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  lockCustomerSender,
  lockDefaultSender,
  setCustomerSender,
  setDefaultSender,
} from '../db/repositories/programs.ts';
import type { AuditActor } from '../domain/audit.ts';
import { validateSender, type Sender } from '../domain/sender.ts';
import { validationFailed } from '../domain/errors.ts';
import { customerTenant } from './customer-tenant.ts';
import type { Partition } from '../domain/partition.ts';

type Program = Partition;

/** The stored sender of a program or a customer: the tenant checked, the sender validated (normalised). */
export class SenderService {
  constructor(private readonly db: Database) {}

  /** Step 3 of sender resolution, for payouts with no sender block whose customer has none stored. */
  async setProgramDefault(program: Program, input: Record<string, unknown>, actor: AuditActor): Promise<Sender> {
    await customerTenant(this.db, program.tenantId);
    const sender = checkedSender(input);
    await this.db.transaction(async (tx) => {
      const before = await lockDefaultSender(tx, program.tenantId, program.mode);
      await setDefaultSender(tx, program.tenantId, program.mode, sender);
      await recordAudit(tx, {
        actor,
        action: 'default_sender.set',
        target: { type: 'program', id: program.tenantId, tenantId: program.tenantId, mode: program.mode },
        before: { sender: before },
        after: { sender },
      });
    });
    return sender;
  }

  /** Step 2 of sender resolution, for payouts with this customerId and no sender block. */
  async setCustomerStored(
    program: Program,
    customerId: string,
    input: Record<string, unknown>,
    actor: AuditActor,
  ): Promise<Sender> {
    await customerTenant(this.db, program.tenantId);
    const sender = checkedSender(input);
    await this.db.transaction(async (tx) => {
      const before = await lockCustomerSender(tx, program.tenantId, program.mode, customerId);
      await setCustomerSender(tx, program.tenantId, program.mode, customerId, sender);
      await recordAudit(tx, {
        actor,
        action: 'customer_sender.set',
        target: { type: 'customer', id: customerId, tenantId: program.tenantId, mode: program.mode },
        before: { sender: before },
        after: { sender },
      });
    });
    return sender;
  }
}

/** The sender as stored (normalised), or 400 validation_failed naming every field that is wrong. */
function checkedSender(input: Record<string, unknown>): Sender {
  const result = validateSender(input, 'sender');
  if (!result.ok) throw validationFailed(result.errors);
  return result.sender;
}
