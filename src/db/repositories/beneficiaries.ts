import type { Queryable } from '../database.ts';
import type { BeneficiaryDetails, BeneficiaryStatus } from '../../domain/beneficiary.ts';
import type { Metadata } from '../../domain/metadata.ts';
import type { Asset } from '../../domain/money.ts';
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Instrument } from '../../domain/instrument.ts';

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
  metadata: Metadata;
  /** created_at in exact microseconds since the epoch: the keyset position (a Date keeps only ms). */
  created_at_us: bigint;
}

// extract(epoch …) is numeric on PostgreSQL 14+, so the microsecond value is exact.
const COLUMNS = `tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country,
  instrument, status, payout_count, last_success_at, last_failure_reason, created_at, metadata,
  (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_us`;

/**
 * Registers a beneficiary by its identity (tenant, mode, national id, bank, instrument): inserted when
 * new, otherwise its name, phone and account number become the ones given (same id, same history),
 * and so does its metadata when some is given.
 * One atomic statement: of N simultaneous registrations of one identity exactly one inserts. Returns
 * undefined only when the identity was created by a transaction that committed while this statement
 * ran and nothing had to change (the statement's snapshot cannot see it): ask again.
 */
export async function upsertBeneficiary(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: string,
  details: BeneficiaryDetails,
): Promise<{ beneficiary: BeneficiaryRow; created: boolean } | undefined> {
  const { rows } = await db.query<BeneficiaryRow & { created: boolean }>(
    `WITH up AS (
       INSERT INTO beneficiaries AS b (tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument, metadata)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, coalesce($12::jsonb, '{}'::jsonb))
       ON CONFLICT (tenant_id, mode, national_id, bank_code, instrument) DO UPDATE
          SET full_name = EXCLUDED.full_name, account_number = EXCLUDED.account_number, phone = EXCLUDED.phone,
              metadata = coalesce($12::jsonb, b.metadata)
        WHERE (b.full_name, b.account_number, b.phone, b.metadata)
              IS DISTINCT FROM (EXCLUDED.full_name, EXCLUDED.account_number, EXCLUDED.phone, coalesce($12::jsonb, b.metadata))
       RETURNING ${COLUMNS}, (xmax = 0) AS created
     )
     SELECT * FROM up
     UNION ALL
     SELECT ${COLUMNS}, false AS created FROM beneficiaries
      WHERE tenant_id = $1 AND mode = $2 AND national_id = $5 AND bank_code = $6 AND instrument = $11 AND NOT EXISTS (SELECT 1 FROM up)`,
    [
      tenantId, mode, id, details.fullName, details.nationalId, details.bankCode, details.accountNumber, details.phone,
      details.asset, details.country, details.instrument, details.metadata === undefined ? null : JSON.stringify(details.metadata),
    ],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { created, ...beneficiary } = row;
  return { beneficiary, created };
}

/** The key of a beneficiary's identity within a tenant and mode. */
export const identityKeyOf = (i: { nationalId: string; bankCode: string; instrument: Instrument }): string => `${i.nationalId}|${i.bankCode}|${i.instrument}`;

/** The ids of the beneficiaries that exist with these identities, by identity key. No lock. */
export async function findBeneficiaryIdsByIdentity(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  identities: ReadonlyArray<{ nationalId: string; bankCode: string; instrument: Instrument }>,
): Promise<Map<string, string>> {
  if (identities.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; national_id: string; bank_code: string; instrument: Instrument }>(
    `SELECT b.id, b.national_id, b.bank_code, b.instrument
       FROM unnest($3::text[], $4::text[], $5::text[]) AS v(national_id, bank_code, instrument)
       JOIN beneficiaries b ON b.tenant_id = $1 AND b.mode = $2 AND b.national_id = v.national_id AND b.bank_code = v.bank_code AND b.instrument = v.instrument`,
    [tenantId, mode, identities.map((i) => i.nationalId), identities.map((i) => i.bankCode), identities.map((i) => i.instrument)],
  );
  return new Map(rows.map((r) => [identityKeyOf({ nationalId: r.national_id, bankCode: r.bank_code, instrument: r.instrument }), r.id]));
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
