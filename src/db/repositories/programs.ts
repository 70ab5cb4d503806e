import type { Sender } from '../../domain/sender.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';

export async function setDefaultSender(db: Queryable, tenantId: string, mode: Mode, sender: Sender): Promise<void> {
  await db.query(
    `INSERT INTO programs (tenant_id, mode, default_sender) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id, mode) DO UPDATE SET default_sender = EXCLUDED.default_sender, updated_at = now()`,
    [tenantId, mode, JSON.stringify(sender)],
  );
}

export async function setCustomerSender(db: Queryable, tenantId: string, mode: Mode, customerId: string, sender: Sender): Promise<void> {
  await db.query(
    `INSERT INTO customers (tenant_id, mode, id, sender) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, mode, id) DO UPDATE SET sender = EXCLUDED.sender, updated_at = now()`,
    [tenantId, mode, customerId, JSON.stringify(sender)],
  );
}

/** The program's default sender (null: none yet), its row locked until the transaction ends. */
export async function lockDefaultSender(tx: Queryable, tenantId: string, mode: Mode): Promise<Sender | null> {
  const { rows } = await tx.query<{ default_sender: Sender | null }>(
    'SELECT default_sender FROM programs WHERE tenant_id = $1 AND mode = $2 FOR UPDATE',
    [tenantId, mode],
  );
  return rows[0]?.default_sender ?? null;
}

/** A customer's stored sender (null: none yet), its row locked until the transaction ends. */
export async function lockCustomerSender(tx: Queryable, tenantId: string, mode: Mode, customerId: string): Promise<Sender | null> {
  const { rows } = await tx.query<{ sender: Sender | null }>(
    'SELECT sender FROM customers WHERE tenant_id = $1 AND mode = $2 AND id = $3 FOR UPDATE',
    [tenantId, mode, customerId],
  );
  return rows[0]?.sender ?? null;
}
