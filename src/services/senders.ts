// An operator setting the senders payouts fall back on (steps 2 and 3 of sender resolution): each
// change and its audit row in one transaction. The row is locked first, so the audit row's `before`
// is what the change replaced. A customer row is step 7 of the lock order (db/commit/README.md): this
// transaction locks that one row and nothing else, so it never waits in a cycle with a payout batch.
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { lockCustomerSender, lockDefaultSender, setCustomerSender, setDefaultSender } from '../db/repositories/programs.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Sender } from '../domain/sender.ts';
import type { Partition } from '../domain/partition.ts';

type Program = Partition;

export async function setProgramDefaultSender(db: Database, program: Program, sender: Sender, actor: AuditActor): Promise<void> {
  await db.transaction(async (tx) => {
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
}

export async function setCustomerStoredSender(db: Database, program: Program, customerId: string, sender: Sender, actor: AuditActor): Promise<void> {
  await db.transaction(async (tx) => {
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
}
