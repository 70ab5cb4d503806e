import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/api-keys.ts';
import type { BeneficiaryDetails, BeneficiaryStatus, Instrument } from '../../domain/beneficiary.ts';
import type { Asset } from '../../domain/money.ts';
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';

export interface BeneficiaryRow {
  tenant_id: string;
  mode: Mode;
  id: string;
  full_name: string;
  national_id: string;
  bank_code: string;
  account_number: string | null;
  phone: string | null;
  asset: Asset;
  country: string;
  instrument: Instrument;
  status: BeneficiaryStatus;
  payout_count: number;
  last_success_at: Date | null;
  last_failure_reason: string | null;
  created_at: Date;
  /** created_at in exact microseconds since the epoch: the keyset position (a Date keeps only ms). */
  created_at_us: bigint;
}

// extract(epoch …) is numeric on PostgreSQL 14+, so the microsecond value is exact.
const COLUMNS = `tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country,
  instrument, status, payout_count, last_success_at, last_failure_reason, created_at,
  (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_us`;

/**
 * Inserts the beneficiary unless one with the same identity (tenant, mode, national id, bank,
 * instrument) exists. ON CONFLICT DO NOTHING waits for a concurrent insert of the same identity
 * to commit, so of N simultaneous registrations exactly one returns a row; the others get
 * undefined and read the winner with `findBeneficiaryByIdentity`.
 */
export async function insertBeneficiaryIfNew(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: string,
  details: BeneficiaryDetails,
): Promise<BeneficiaryRow | undefined> {
  const { rows } = await db.query<BeneficiaryRow>(
    `INSERT INTO beneficiaries (tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (tenant_id, mode, national_id, bank_code, instrument) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      tenantId, mode, id, details.fullName, details.nationalId, details.bankCode, details.accountNumber, details.phone,
      details.asset, details.country, details.instrument,
    ],
  );
  return rows[0];
}

export async function findBeneficiaryByIdentity(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  identity: { nationalId: string; bankCode: string; instrument: Instrument },
): Promise<BeneficiaryRow | undefined> {
  const { rows } = await db.query<BeneficiaryRow>(
    `SELECT ${COLUMNS} FROM beneficiaries
      WHERE tenant_id = $1 AND mode = $2 AND national_id = $3 AND bank_code = $4 AND instrument = $5`,
    [tenantId, mode, identity.nationalId, identity.bankCode, identity.instrument],
  );
  return rows[0];
}

export async function findBeneficiary(db: Queryable, tenantId: string, mode: Mode, id: string): Promise<BeneficiaryRow | undefined> {
  const { rows } = await db.query<BeneficiaryRow>(
    `SELECT ${COLUMNS} FROM beneficiaries WHERE tenant_id = $1 AND mode = $2 AND id = $3`,
    [tenantId, mode, id],
  );
  return rows[0];
}

/**
 * One page, newest first, strictly after `after` in (created_at DESC, id DESC) order. Reads
 * `limit + 1` rows so the caller knows whether another page exists without a count.
 */
export async function listBeneficiaries(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  page: { limit: number; after?: PagePosition },
): Promise<BeneficiaryRow[]> {
  const params: unknown[] = [tenantId, mode, page.limit + 1];
  let after = '';
  if (page.after) {
    params.push(microsToTimestamp(page.after.createdAtUs), page.after.id);
    after = 'AND (created_at, id) < ($4::timestamptz, $5::uuid)';
  }
  const { rows } = await db.query<BeneficiaryRow>(
    `SELECT ${COLUMNS} FROM beneficiaries
      WHERE tenant_id = $1 AND mode = $2 ${after}
      ORDER BY created_at DESC, id DESC
      LIMIT $3`,
    params,
  );
  return rows;
}
