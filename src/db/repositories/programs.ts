import type { Sender } from '../../domain/sender.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';

export async function setDefaultSender(db: Queryable, tenantId: string, mode: Mode, sender: Sender): Promise<void> {
  const p = new Params();
  await db.query(
    `INSERT INTO programs (tenant_id, mode, default_sender) VALUES (${p.add(tenantId)}, ${p.add(mode)}, ${p.add(JSON.stringify(sender))})
     ON CONFLICT (tenant_id, mode) DO UPDATE SET default_sender = EXCLUDED.default_sender, updated_at = now()`,
    p.values,
  );
}

export async function setCustomerSender(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  customerId: string,
  sender: Sender,
): Promise<void> {
  const p = new Params();
  await db.query(
    `INSERT INTO customers (tenant_id, mode, id, sender) VALUES (${p.add(tenantId)}, ${p.add(mode)}, ${p.add(customerId)}, ${p.add(JSON.stringify(sender))})
     ON CONFLICT (tenant_id, mode, id) DO UPDATE SET sender = EXCLUDED.sender, updated_at = now()`,
    p.values,
  );
}

/** The program's default sender (null: none yet), its row locked until the transaction ends. */
export async function lockDefaultSender(tx: Queryable, tenantId: string, mode: Mode): Promise<Sender | null> {
  const p = new Params();
  const { rows } = await tx.query<{ default_sender: Sender | null }>(
    `SELECT default_sender FROM programs WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} FOR UPDATE`,
    p.values,
  );
  return rows[0]?.default_sender ?? null;
}

/** A customer's stored sender (null: none yet), its row locked until the transaction ends. */
export async function lockCustomerSender(
  tx: Queryable,
  tenantId: string,
  mode: Mode,
  customerId: string,
): Promise<Sender | null> {
  const p = new Params();
  const { rows } = await tx.query<{ sender: Sender | null }>(
    `SELECT sender FROM customers WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(customerId)} FOR UPDATE`,
    p.values,
  );
  return rows[0]?.sender ?? null;
}
