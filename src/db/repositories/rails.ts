import type { Instrument } from '../../domain/instrument.ts';
import type { Mode } from '../../domain/partition.ts';
import type { RailRoute, RailSetting } from '../../domain/rail-routing.ts';
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

interface RailRow {
  name: string;
  modes: Mode[];
  instruments: Instrument[];
  enabled: boolean;
  updated_at: Date;
}

interface RailRouteRow {
  id: string;
  priority: number;
  rail: string;
  tenant_id: string | null;
  mode: Mode | null;
  instrument: Instrument | null;
  bank_code: string | null;
  min_amount: bigint | null;
  max_amount: bigint | null;
  created_at: Date;
}

export type StoredRailSetting = RailSetting & { updatedAt: Date };

const RAIL_COLUMNS = 'name, modes, instruments, enabled, updated_at';
const ROUTE_COLUMNS = 'id, priority, rail, tenant_id, mode, instrument, bank_code, min_amount, max_amount, created_at';

const settingOf = (row: RailRow): StoredRailSetting => ({
  name: row.name,
  modes: row.modes,
  instruments: row.instruments,
  enabled: row.enabled,
  updatedAt: row.updated_at,
});

const routeOf = (row: RailRouteRow): RailRoute => ({
  id: row.id,
  priority: row.priority,
  rail: row.rail,
  tenantId: row.tenant_id,
  mode: row.mode,
  instrument: row.instrument,
  bankCode: row.bank_code,
  minAmount: row.min_amount === null ? null : BigInt(row.min_amount),
  maxAmount: row.max_amount === null ? null : BigInt(row.max_amount),
  createdAt: row.created_at,
});

/** Every stored rail setting (a handful: one per configured rail). */
export async function listRailSettings(db: Queryable): Promise<StoredRailSetting[]> {
  const { rows } = await db.query<RailRow>(`SELECT ${RAIL_COLUMNS} FROM rails ORDER BY name`);
  return rows.map(settingOf);
}

/** The rail's stored setting, locked for its update (the audit row records what it was). */
export async function lockRailSetting(tx: Queryable, name: string): Promise<StoredRailSetting | undefined> {
  const p = new Params();
  const { rows } = await tx.query<RailRow>(
    `SELECT ${RAIL_COLUMNS} FROM rails WHERE name = ${p.add(name)} FOR UPDATE`,
    p.values,
  );
  return rows[0] && settingOf(rows[0]);
}

export async function upsertRailSetting(tx: Queryable, setting: RailSetting, now: Date): Promise<StoredRailSetting> {
  const p = new Params();
  const at = p.add(now);
  const { rows } = await tx.query<RailRow>(
    `INSERT INTO rails (name, modes, instruments, enabled, created_at, updated_at)
     VALUES (${p.add(setting.name)}, ${p.add([...setting.modes])}::text[], ${p.add([...setting.instruments])}::text[], ${p.add(setting.enabled)}, ${at}, ${at})
     ON CONFLICT (name) DO UPDATE SET modes = EXCLUDED.modes, instruments = EXCLUDED.instruments, enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at
     RETURNING ${RAIL_COLUMNS}`,
    p.values,
  );
  return settingOf(rows[0]!);
}

/** Every routing rule, in the order they apply. */
export async function listRailRoutes(db: Queryable): Promise<RailRoute[]> {
  const { rows } = await db.query<RailRouteRow>(
    `SELECT ${ROUTE_COLUMNS} FROM rail_routes ORDER BY priority, created_at, id`,
  );
  return rows.map(routeOf);
}

export async function insertRailRoute(tx: Queryable, route: RailRoute): Promise<RailRoute> {
  const p = new Params();
  const { rows } = await tx.query<RailRouteRow>(
    `INSERT INTO rail_routes (id, priority, rail, tenant_id, mode, instrument, bank_code, min_amount, max_amount, created_at)
     VALUES (${p.add(route.id)}, ${p.add(route.priority)}, ${p.add(route.rail)}, ${p.add(route.tenantId)}, ${p.add(route.mode)}, ${p.add(route.instrument)},
             ${p.add(route.bankCode)}, ${p.add(route.minAmount)}, ${p.add(route.maxAmount)}, ${p.add(route.createdAt)})
     RETURNING ${ROUTE_COLUMNS}`,
    p.values,
  );
  return routeOf(rows[0]!);
}

/** Removes a rule; what it was, or undefined when there was none. */
export async function deleteRailRoute(tx: Queryable, id: string): Promise<RailRoute | undefined> {
  const p = new Params();
  const { rows } = await tx.query<RailRouteRow>(
    `DELETE FROM rail_routes WHERE id = ${p.add(id)} RETURNING ${ROUTE_COLUMNS}`,
    p.values,
  );
  return rows[0] && routeOf(rows[0]);
}

/**
 * Moves a payment the payout path is sending to the next rail, after the previous one provably did
 * not receive it: only while it is still `submitted` on the rail the caller tried, so that a payment
 * someone else has moved or resolved meanwhile is left alone (false). Committed before the send, so
 * that a crash in between leaves the reaper asking the rail that was asked to send.
 */
export async function movePaymentToRail(
  db: Queryable,
  payment: { tenant_id: string; mode: Mode; id: string },
  from: string | null,
  to: string,
): Promise<boolean> {
  const p = new Params();
  const { rowCount } = await db.query(
    `UPDATE payments SET rail = ${p.add(to)}
      WHERE tenant_id = ${p.add(payment.tenant_id)} AND mode = ${p.add(payment.mode)} AND id = ${p.add(payment.id)} AND status = 'submitted' AND rail IS NOT DISTINCT FROM ${p.add(from)}`,
    p.values,
  );
  return rowCount === 1;
}

/**
 * The rail each of these payments is on now, by id (a payment not found is absent): one round trip for a
 * reaper pass's sends instead of one per payment. Each is a primary-key probe, its tenant taken from
 * the list rather than a constant, so no statistics make it a scan of a tenant's payments.
 */
export async function railsOfPayments(
  db: Queryable,
  payments: ReadonlyArray<{ tenant_id: string; id: string }>,
): Promise<Map<string, string | null>> {
  if (payments.length === 0) return new Map();
  const params = new Params();
  const { rows } = await db.query<{ id: string; rail: string | null }>(
    `SELECT p.id, p.rail FROM ${params.unnest({ tenant_id: ['uuid', payments.map((p) => p.tenant_id)], id: ['uuid', payments.map((p) => p.id)] })}
       JOIN payments p ON p.tenant_id = v.tenant_id AND p.id = v.id`,
    params.values,
  );
  return new Map(rows.map((row) => [row.id, row.rail]));
}

/** The rail a payment is on now (its row may have moved since a caller read it). */
export async function railOfPayment(
  db: Queryable,
  payment: { tenant_id: string; mode: Mode; id: string },
): Promise<string | null | undefined> {
  const p = new Params();
  const { rows } = await db.query<{ rail: string | null }>(
    `SELECT rail FROM payments WHERE tenant_id = ${p.add(payment.tenant_id)} AND mode = ${p.add(payment.mode)} AND id = ${p.add(payment.id)}`,
    p.values,
  );
  return rows[0]?.rail;
}
