import type { Queryable } from '../database.ts';
import type { BeneficiaryDetails, BeneficiaryStatus } from '../../domain/beneficiary.ts';
import type { Metadata } from '../../domain/metadata.ts';
import type { Asset } from '../../domain/money.ts';
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Instrument } from '../../domain/instrument.ts';
import { Params } from './sql-params.ts';

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
  const p = new Params();
  const identity = {
    tenant: p.add(tenantId),
    mode: p.add(mode),
    nationalId: p.add(details.nationalId),
    bankCode: p.add(details.bankCode),
    instrument: p.add(details.instrument),
  };
  const metadata = p.add(details.metadata === undefined ? null : JSON.stringify(details.metadata));
  const { rows } = await db.query<BeneficiaryRow & { created: boolean }>(
    `WITH up AS (
       INSERT INTO beneficiaries AS b (tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument, metadata)
       VALUES (${identity.tenant}, ${identity.mode}, ${p.add(id)}, ${p.add(details.fullName)}, ${identity.nationalId}, ${identity.bankCode},
               ${p.add(details.accountNumber)}, ${p.add(details.phone)}, ${p.add(details.asset)}, ${p.add(details.country)}, ${identity.instrument},
               coalesce(${metadata}::jsonb, '{}'::jsonb))
       ON CONFLICT (tenant_id, mode, national_id, bank_code, instrument) DO UPDATE
          SET full_name = EXCLUDED.full_name, account_number = EXCLUDED.account_number, phone = EXCLUDED.phone,
              metadata = coalesce(${metadata}::jsonb, b.metadata)
        WHERE (b.full_name, b.account_number, b.phone, b.metadata)
              IS DISTINCT FROM (EXCLUDED.full_name, EXCLUDED.account_number, EXCLUDED.phone, coalesce(${metadata}::jsonb, b.metadata))
       RETURNING ${COLUMNS}, (xmax = 0) AS created
     )
     SELECT * FROM up
     UNION ALL
     SELECT ${COLUMNS}, false AS created FROM beneficiaries
      WHERE tenant_id = ${identity.tenant} AND mode = ${identity.mode} AND national_id = ${identity.nationalId} AND bank_code = ${identity.bankCode}
        AND instrument = ${identity.instrument} AND NOT EXISTS (SELECT 1 FROM up)`,
    p.values,
  );
  const row = rows[0];
  if (!row) return undefined;
  const { created, ...beneficiary } = row;
  return { beneficiary, created };
}

/** The key of a beneficiary's identity within a tenant and mode. */
export const identityKeyOf = (i: { nationalId: string; bankCode: string; instrument: Instrument }): string =>
  `${i.nationalId}|${i.bankCode}|${i.instrument}`;

/** The ids of the beneficiaries that exist with these identities, by identity key. No lock. */
export async function findBeneficiaryIdsByIdentity(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  identities: ReadonlyArray<{ nationalId: string; bankCode: string; instrument: Instrument }>,
): Promise<Map<string, string>> {
  if (identities.length === 0) return new Map();
  const p = new Params();
  const { rows } = await db.query<{ id: string; national_id: string; bank_code: string; instrument: Instrument }>(
    `SELECT b.id, b.national_id, b.bank_code, b.instrument
       FROM ${p.unnest({
         national_id: ['text', identities.map((i) => i.nationalId)],
         bank_code: ['text', identities.map((i) => i.bankCode)],
         instrument: ['text', identities.map((i) => i.instrument)],
       })}
       JOIN beneficiaries b ON b.tenant_id = ${p.add(tenantId)} AND b.mode = ${p.add(mode)}
        AND b.national_id = v.national_id AND b.bank_code = v.bank_code AND b.instrument = v.instrument`,
    p.values,
  );
  return new Map(
    rows.map((r) => [
      identityKeyOf({ nationalId: r.national_id, bankCode: r.bank_code, instrument: r.instrument }),
      r.id,
    ]),
  );
}

export async function findBeneficiary(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: string,
): Promise<BeneficiaryRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<BeneficiaryRow>(
    `SELECT ${COLUMNS} FROM beneficiaries WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(id)}`,
    p.values,
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
  const p = new Params();
  const after = page.after
    ? `AND (created_at, id) < (${p.add(microsToTimestamp(page.after.createdAtUs))}::timestamptz, ${p.add(page.after.id)}::uuid)`
    : '';
  const { rows } = await db.query<BeneficiaryRow>(
    `SELECT ${COLUMNS} FROM beneficiaries
      WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} ${after}
      ORDER BY created_at DESC, id DESC
      LIMIT ${p.add(page.limit + 1)}`,
    p.values,
  );
  return rows;
}
