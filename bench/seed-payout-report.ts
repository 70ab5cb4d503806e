// The payout report's data set (bench scenario `payout-report`): a year of one tenant's payouts as
// the service would have left them, seeded by set-based SQL (INSERT … SELECT generate_series, chunks
// of 100,000 payments, nothing row by row through Node). A million payouts through the API would take
// the bench longer than the whole run (the payroll scenario settles ~1,000 a second at best), and the
// report only reads what they leave behind: payments, their outcome events with every delivery
// attempt, and the treasury's balance history. Quotes, ledger entries and transitions are not seeded:
// the report reads none of them.
import type pg from 'pg';
import { checkAccountNumber } from '../src/domain/account-check.ts';
import { FAILURE_MESSAGES } from '../src/domain/payment-messages.ts';

export const SEED_DAYS = 366;
const CHUNK_ROWS = 100_000;
/** Minutes between two seeded balance history rows: one per batch of payouts charged. */
const BALANCE_STEP_MINUTES = 5;

/** Catalogue codes (every instrument lists them), repeated by weight: a few big banks carry most payouts. */
const BANKS = [
  ...Array<string>(8).fill('0102'),
  ...Array<string>(6).fill('0134'),
  ...Array<string>(5).fill('0105'),
  ...Array<string>(4).fill('0108'),
  ...Array<string>(2).fill('0191'),
  ...Array<string>(2).fill('0114'),
  '0172',
  '0175',
  '0163',
  '0171',
  '0115',
  '0128',
  '0151',
  '0104',
];
/** Banks whose payouts fail more often (unreachable, mismatches): the per-bank success rates differ. */
const FLAKY_BANKS = ['0163', '0175', '0115'];

/** A 20-digit account of the bank with valid check digits (the service refuses others). */
function accountNumber(bank: string, n: number): string {
  const office = String(1000 + (n % 9000)).padStart(4, '0');
  const rest = String(1_000_000_000 + ((n * 7919) % 9_000_000_000)).padStart(10, '0');
  for (let d = 0; d < 100; d += 1) {
    const candidate = `${bank}${office}${String(d).padStart(2, '0')}${rest}`;
    if (checkAccountNumber(candidate) === 'valid') return candidate;
  }
  throw new Error(`invariant: no check digits for ${bank}${office}..${rest}`);
}

/** The tenant's beneficiaries: 70 % Pago Móvil (phone), 30 % transferencia (account), banks by weight. */
export async function seedBeneficiaries(
  db: pg.Client,
  tenantId: string,
  count: number,
  createdAt: Date,
): Promise<void> {
  const rows = Array.from({ length: count }, (_, n) => {
    const bank = BANKS[(n * 31) % BANKS.length]!;
    const transfer = n % 10 >= 7;
    return {
      n,
      bank,
      account: transfer ? accountNumber(bank, n) : null,
      instrument: transfer ? 'transferencia' : 'pago_movil',
    };
  });
  await db.query(
    `INSERT INTO beneficiaries (tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument, created_at)
     SELECT $1, 'test', gen_random_uuid(), 'Beneficiario ' || r.n, 'V' || (10000000 + r.n * 37), r.bank, r.account,
            '041' || lpad((2000000 + r.n)::text, 8, '0'), 'BS', 'VE', r.instrument, $6
       FROM unnest($2::int[], $3::text[], $4::text[], $5::text[]) AS r(n, bank, account, instrument)`,
    [
      tenantId,
      rows.map((r) => r.n),
      rows.map((r) => r.bank),
      rows.map((r) => r.account),
      rows.map((r) => r.instrument),
      createdAt,
    ],
  );
}

// One chunk of payments ($4..$5 of $7 spread evenly over $6 days up to $3), with their outcome events
// and every delivery attempt, in one statement. Outcome: 1 % refused at routing (no instrument chosen,
// failed at once), about 6 % failed by the rail (more at the flaky banks), 1 % settled then returned
// by the bank (reversed, hours to days later), 0.05 % unresolved and parked by the reaper, the rest
// settled; time to the outcome 2-60 s for 90 %, up to 10 minutes for 9 %, up to an hour for the rest.
// A payment whose outcome would come after $3 is still in flight (submitted or unknown). Webhooks:
// 97.5 % delivered at the first attempt; the others answered 5xx or timed out, delivered 30 s later.
const CHUNK_SQL = `
WITH b AS (
  SELECT (row_number() OVER (ORDER BY national_id) - 1)::int AS n, id, full_name, national_id, bank_code, account_number, phone, instrument
    FROM beneficiaries WHERE tenant_id = $1 AND mode = $2
), r AS (
  SELECT g, $3::timestamptz - $6::int * interval '1 day' + ((g + random()) * $6::int * 86400.0 / $7::int) * interval '1 second' AS created_at,
         random() AS st, random() AS rs, random() AS back,
         (100000 + floor(random() * random() * 19900000))::bigint AS amount,
         CASE WHEN random() < 0.9 THEN 2 + random() * 58 WHEN random() < 0.9 THEN 60 + random() * 540 ELSE 600 + random() * 3000 END * interval '1 second' AS lag,
         (g::bigint * 2654435761) % 1000003 AS k
    FROM generate_series($4::int, $5::int - 1) AS g
), x AS (
  SELECT r.*, b.id AS beneficiary_id, b.bank_code, b.instrument,
         jsonb_build_object('fullName', b.full_name, 'nationalId', b.national_id, 'bankCode', b.bank_code,
                            'accountNumber', b.account_number, 'phone', b.phone, 'instrument', b.instrument) AS snapshot,
         r.st - CASE WHEN b.bank_code = ANY ($9::text[]) THEN 0.06 ELSE 0 END AS sb,
         r.created_at + r.lag AS outcome_at,
         r.created_at + r.lag + (3600 + r.back * 4 * 86400) * interval '1 second' AS returned_at
    FROM r JOIN b ON b.n = r.k % (SELECT count(*) FROM b)
), s AS (
  SELECT x.*,
         CASE WHEN sb < 0.01 AND st < 0.01 THEN 'refused'
              WHEN outcome_at > $3 THEN CASE WHEN rs < 0.9 THEN 'submitted' ELSE 'unknown' END
              WHEN sb < 0.07 THEN 'failed'
              WHEN sb < 0.08 AND returned_at <= $3 THEN 'reversed'
              WHEN sb >= 0.08 AND sb < 0.0805 AND created_at + interval '1 day' <= $3 THEN 'parked'
              ELSE 'settled' END AS fate
    FROM x
), f AS (
  SELECT s.*,
         CASE fate WHEN 'refused' THEN 'instrument_unsupported'
                   WHEN 'failed' THEN (ARRAY['beneficiary_mismatch', 'beneficiary_mismatch', 'invalid_destination_account', 'bank_unreachable',
                                             'bank_unreachable', 'rail_rejected', 'rail_insufficient_balance', 'amount_above_rail_limit'])[1 + floor(rs * 8)::int]
                   WHEN 'reversed' THEN CASE WHEN rs < 0.8 THEN 'returned_by_bank' ELSE 'invalid_destination_account' END END AS reason
    FROM s
), p AS (
  INSERT INTO payments (tenant_id, mode, id, beneficiary_id, quote_id, status, status_reason, message, source_asset, source_amount,
    payout_asset, payout_amount, fee_amount, method, method_requested, compensated, bank_reference, beneficiary, sender, rail,
    next_check_at, check_attempts, resolution_parked_at, usage_day, funding_account, settled_at, created_at, updated_at, created_by_key_id)
  SELECT $1, $2, gen_random_uuid(), beneficiary_id, gen_random_uuid(),
         CASE fate WHEN 'refused' THEN 'failed' WHEN 'parked' THEN 'unknown' ELSE fate END,
         reason, CASE WHEN fate IN ('refused', 'failed') THEN $10::jsonb ->> reason END,
         'BS', amount + amount / 100, 'BS', amount, amount / 100,
         CASE WHEN fate <> 'refused' THEN instrument END, instrument, fate = 'failed',
         CASE WHEN fate IN ('settled', 'reversed') THEN lpad(((k * 7 + g) % 1000000000000)::text, 12, '0') END,
         snapshot, '{"nationalId":"V12345678","firstName":"Ana","lastName":"Rojas","phone":"04141234567","email":"ana@example.com"}'::jsonb,
         CASE WHEN fate <> 'refused' THEN 'sandbox' END,
         CASE WHEN fate IN ('submitted', 'unknown') THEN $3::timestamptz + interval '30 seconds' END,
         CASE fate WHEN 'parked' THEN 24 WHEN 'unknown' THEN 1 ELSE 0 END,
         CASE WHEN fate = 'parked' THEN created_at + interval '1 day' END,
         CASE WHEN fate <> 'refused' THEN (created_at AT TIME ZONE 'America/Caracas')::date END,
         CASE WHEN fate <> 'refused' THEN 'prefunding' END,
         CASE WHEN fate IN ('settled', 'reversed') THEN outcome_at END,
         created_at,
         CASE fate WHEN 'refused' THEN created_at WHEN 'reversed' THEN returned_at WHEN 'parked' THEN created_at + interval '1 day'
                   WHEN 'submitted' THEN created_at WHEN 'unknown' THEN least(created_at + interval '10 seconds', $3) ELSE outcome_at END,
         $8::uuid
    FROM f
  RETURNING id, status, status_reason, payout_amount, bank_reference, method, method_requested, settled_at, updated_at
), ev AS (
  SELECT p.*, e.event_type, e.at
    FROM p CROSS JOIN LATERAL (VALUES ('payment.settled', p.settled_at), ('payment.failed', p.updated_at), ('payment.reversed', p.updated_at)) AS e(event_type, at)
   WHERE (e.event_type = 'payment.settled' AND p.status IN ('settled', 'reversed'))
      OR (e.event_type = 'payment.failed' AND p.status = 'failed')
      OR (e.event_type = 'payment.reversed' AND p.status = 'reversed')
), o AS (
  INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status, attempts, published_at, created_at)
  SELECT $1, $2, event_type, 'payment', id, payload::jsonb, payload, 'published', attempts,
         at + (attempts - 1) * interval '30 seconds' + interval '150 milliseconds', at
    FROM (SELECT ev.*, CASE WHEN random() < 0.025 AND ev.at < $3::timestamptz - interval '1 minute' THEN 2 ELSE 1 END AS attempts,
                 (CASE event_type
                    WHEN 'payment.settled' THEN json_build_object('paymentId', id, 'asset', 'BS', 'amount', payout_amount::text, 'bankReference', bank_reference, 'method', method, 'metadata', '{}'::json)
                    WHEN 'payment.failed' THEN json_build_object('paymentId', id, 'asset', 'BS', 'amount', payout_amount::text, 'method', coalesce(method, method_requested), 'reason', status_reason, 'metadata', '{}'::json)
                    ELSE json_build_object('paymentId', id, 'asset', 'BS', 'amount', payout_amount::text, 'bankReference', bank_reference, 'method', method, 'reason', status_reason, 'metadata', '{}'::json)
                  END)::text AS payload
            FROM ev) q
  RETURNING id, attempts, created_at
)
INSERT INTO webhook_deliveries (tenant_id, event_id, attempt, status_code, ok, error, duration_ms, created_at, mode)
SELECT $1, o.id, a.n,
       CASE WHEN a.n = o.attempts THEN 200 WHEN o.id % 3 = 0 THEN NULL ELSE 503 END,
       a.n = o.attempts,
       CASE WHEN a.n = o.attempts THEN NULL WHEN o.id % 3 = 0 THEN 'timed out after 5000 ms (no response)' ELSE 'HTTP 503' END,
       CASE WHEN a.n < o.attempts AND o.id % 3 = 0 THEN 5000 ELSE (12 + 400 * random() ^ 4)::int END,
       o.created_at + (a.n - 1) * interval '30 seconds' + interval '150 milliseconds', $2
  FROM o CROSS JOIN LATERAL generate_series(1, o.attempts) AS a(n)`;

/**
 * `rows` payments of the tenant over SEED_DAYS up to `t0`, with their events and deliveries, chunk by
 * chunk. The foreign keys hold by construction (one tenant, events made from the payments inserted
 * and deliveries from those events), so their per-row checks are skipped (session_replication_role =
 * replica: no other trigger is on these tables); every CHECK is still enforced.
 */
export async function seedPayments(
  db: pg.Client,
  tenantId: string,
  keyId: string | null,
  rows: number,
  t0: Date,
  seed: number,
  log: (line: string) => void,
): Promise<void> {
  for (let lo = 0; lo < rows; lo += CHUNK_ROWS) {
    const hi = Math.min(rows, lo + CHUNK_ROWS);
    await db.query('BEGIN');
    await db.query('SET LOCAL session_replication_role = replica');
    await db.query('SELECT setseed($1)', [((seed * 10 + lo / CHUNK_ROWS) % 100) / 100]);
    await db.query(CHUNK_SQL, [
      tenantId,
      'test',
      t0,
      lo,
      hi,
      SEED_DAYS,
      rows,
      keyId,
      FLAKY_BANKS,
      JSON.stringify(FAILURE_MESSAGES),
    ]);
    await db.query('COMMIT');
  }
  log(`payout-report: ${rows.toLocaleString('en')} payments of ${tenantId.slice(0, 8)} seeded`);
}

/**
 * The tenant's prefunding balance every BALANCE_STEP_MINUTES over the seeded year, as the ledger
 * writers record it (src/db/balance-history.ts): topped up each Caracas morning, drawn down by the
 * day's payouts. Every row is before the funding the bench made through the API (its row and the
 * account's balance_changed_at are `fundedAt`), so the account's history never goes back in time.
 */
export async function seedBalanceHistory(db: pg.Client, tenantId: string, t0: Date, fundedAt: Date): Promise<void> {
  await db.query(
    `INSERT INTO ledger_balance_history (tenant_id, mode, asset, kind, at, balance)
     SELECT $1, 'test', 'BS', 'prefunding', at,
            -(30000000000 - floor(extract(epoch FROM (at AT TIME ZONE 'America/Caracas')::time) / 86400.0 * 14000000000) + floor(random() * 1000000))::bigint
       FROM generate_series($2::timestamptz - $3::int * interval '1 day', least($2::timestamptz, $4::timestamptz) - interval '1 second', $5::int * interval '1 minute') AS at`,
    [tenantId, t0, SEED_DAYS, fundedAt, BALANCE_STEP_MINUTES],
  );
}

/** The tables the bulk load writes: their secondary indexes are built once after it rather than row by row. */
const LOADED_TABLES = ['payments', 'outbox_events', 'webhook_deliveries'];

/**
 * Runs `load` with the loaded tables' secondary indexes dropped, then builds them again from their
 * own definitions (pg_get_indexdef: exactly what the migrations made). A bulk load is several times
 * faster so, and the indexes come out as a freshly built index of that data, as after a REINDEX.
 */
export async function withIndexesBuiltAfter(
  db: pg.Client,
  load: () => Promise<void>,
  log: (line: string) => void,
): Promise<void> {
  const { rows: indexes } = await db.query<{ name: string; def: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
      WHERE i.indrelid = ANY ($1::regclass[]) AND NOT i.indisprimary`,
    [LOADED_TABLES],
  );
  for (const index of indexes) await db.query(`DROP INDEX ${index.name}`);
  try {
    await load();
  } finally {
    const started = performance.now();
    await db.query(`SET maintenance_work_mem = '256MB'`);
    for (const index of indexes) await db.query(index.def);
    await db.query('RESET maintenance_work_mem');
    log(
      `payout-report: ${indexes.length} indexes built again in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
}
