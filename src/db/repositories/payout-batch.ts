// Multi-row statements for group commit: one statement writes the rows of every payout of a batch,
// so a batch of N payouts costs about a dozen round trips instead of a dozen per payout. Fixed SQL
// text over unnest() arrays keeps one prepared statement whatever N is.
import type { Mode } from '../../domain/api-keys.ts';
import type { AccountKind, Posting } from '../../domain/ledger.ts';
import type { Instrument } from '../../domain/payout-route.ts';
import type { Queryable } from '../database.ts';
import type { SubjectKind } from './limit-usage.ts';
import { PAYMENT_COLUMNS, type NewPayment, type PaymentRow } from './payments.ts';

type Partition = { tenantId: string; mode: Mode };

/** What a batch holds once `lockBatch` returns. */
export interface LockedBatch {
  /** Quotes this batch consumed (open and unexpired until now). */
  consumed: Set<string>;
  /** The day's limit counters, created at zero when missing. */
  usage: Array<{ kind: SubjectKind; subjectId: string; method: Instrument; amount: bigint; count: bigint }>;
  /** Balances of the accounts that exist, by `asset/kind`. */
  accounts: Map<string, bigint>;
}

/**
 * The first statement of a batch, in one round trip: consume the quotes, then lock (creating when
 * missing) the day's limit counters in the order given, then lock the existing ledger accounts in
 * (asset, kind) order — the order every other path locks counters and accounts in. The three parts
 * are read in that order by the UNION ALL, which is what runs each one, so the order holds.
 * `id = ANY(…)` on the last primary-key column keeps quotes on an index scan whatever the planner
 * guesses about the array.
 */
export async function lockBatch(
  tx: Queryable,
  partition: Partition,
  at: Date,
  claims: ReadonlyArray<{ quoteId: string; paymentId: string }>,
  usage: { day: string; keys: ReadonlyArray<{ kind: SubjectKind; subjectId: string; method: Instrument }> },
  accounts: ReadonlyArray<{ asset: string; kind: AccountKind }>,
): Promise<LockedBatch> {
  const { rows } = await tx.query<{ part: 'quote' | 'usage' | 'account'; a: string; b: string | null; c: string | null; amount: bigint | null; count: bigint | null }>(
    `WITH consumed AS (
       UPDATE quotes q SET consumed_at = $3, payment_id = ($5::uuid[])[array_position($4::uuid[], q.id)]
        WHERE q.tenant_id = $1 AND q.mode = $2 AND q.id = ANY($4::uuid[]) AND q.consumed_at IS NULL AND q.expires_at > $3
        RETURNING q.id
     ), usage AS (
       INSERT INTO limit_usage (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
       SELECT $1, $2, v.kind, v.subject_id, v.method, $6::date, 0, 0
         FROM unnest($7::text[], $8::uuid[], $9::text[]) WITH ORDINALITY AS v(kind, subject_id, method, n)
        ORDER BY v.n
       ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
       DO UPDATE SET amount = limit_usage.amount
       RETURNING subject_kind, subject_id, method, amount, count
     ), account AS (
       SELECT a.asset, a.kind, a.balance FROM ledger_accounts a
         JOIN unnest($10::text[], $11::text[]) AS v(asset, kind) ON a.asset = v.asset AND a.kind = v.kind
        WHERE a.tenant_id = $1 AND a.mode = $2
        ORDER BY a.asset, a.kind
          FOR UPDATE OF a
     )
     SELECT 'quote' AS part, id::text AS a, NULL::text AS b, NULL::text AS c, NULL::bigint AS amount, NULL::bigint AS count FROM consumed
     UNION ALL
     SELECT 'usage', subject_kind, subject_id::text, method, amount, count FROM usage
     UNION ALL
     SELECT 'account', asset, kind, NULL, balance, NULL FROM account`,
    [
      partition.tenantId,
      partition.mode,
      at,
      claims.map((c) => c.quoteId),
      claims.map((c) => c.paymentId),
      usage.day,
      usage.keys.map((k) => k.kind),
      usage.keys.map((k) => k.subjectId),
      usage.keys.map((k) => k.method),
      accounts.map((a) => a.asset),
      accounts.map((a) => a.kind),
    ],
  );
  const locked: LockedBatch = { consumed: new Set(), usage: [], accounts: new Map() };
  for (const row of rows) {
    if (row.part === 'quote') locked.consumed.add(row.a);
    else if (row.part === 'usage') locked.usage.push({ kind: row.a as SubjectKind, subjectId: row.b!, method: row.c as Instrument, amount: row.amount!, count: row.count! });
    else locked.accounts.set(`${row.a}/${row.b}`, row.amount!);
  }
  return locked;
}

/** Gives quotes back (a payout of the batch was refused): the transaction leaves them untouched. */
export async function releaseQuotes(tx: Queryable, partition: Partition, quoteIds: readonly string[]): Promise<void> {
  if (quoteIds.length === 0) return;
  await tx.query(`UPDATE quotes SET consumed_at = NULL, payment_id = NULL WHERE tenant_id = $1 AND mode = $2 AND id = ANY($3::uuid[])`, [
    partition.tenantId,
    partition.mode,
    quoteIds,
  ]);
}

export async function quoteStates(
  db: Queryable,
  partition: Partition,
  quoteIds: readonly string[],
): Promise<Map<string, { consumed: boolean; expiresAt: Date }>> {
  const { rows } = await db.query<{ id: string; consumed_at: Date | null; expires_at: Date }>(
    `SELECT id, consumed_at, expires_at FROM quotes WHERE tenant_id = $1 AND mode = $2 AND id = ANY($3::uuid[])`,
    [partition.tenantId, partition.mode, quoteIds],
  );
  return new Map(rows.map((r) => [r.id, { consumed: r.consumed_at !== null, expiresAt: r.expires_at }]));
}

/**
 * Creates, with the batch's delta as opening balance, the accounts a batch posts to that did not exist
 * when it locked them (the first payout of a tenant in an asset). An INSERT … ON CONFLICT adding the
 * delta, because another process may create the row meanwhile; its CHECK constraints see the sum.
 */
export async function createMissingAccounts(
  tx: Queryable,
  partition: Partition,
  accounts: ReadonlyArray<{ asset: string; kind: AccountKind; delta: bigint }>,
): Promise<void> {
  for (const a of accounts) {
    await tx.query(
      `INSERT INTO ledger_accounts (tenant_id, mode, asset, kind, balance) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (tenant_id, mode, asset, kind) DO UPDATE SET balance = ledger_accounts.balance + EXCLUDED.balance`,
      [partition.tenantId, partition.mode, a.asset, a.kind, a.delta],
    );
  }
}

/** Everything a batch of accepted payouts writes, once every decision is made. */
export interface AcceptedBatch {
  payments: readonly NewPayment[];
  /** One balanced ledger entry per payment. */
  entries: ReadonlyArray<{ id: string; kind: string; paymentId: string; postings: readonly Posting[] }>;
  /** Limit counters of one business day, locked earlier in the transaction. */
  usage: { day: string; rows: ReadonlyArray<{ kind: string; subjectId: string; method: string; amount: bigint; count: bigint }> };
  /** Net change of each existing account, locked earlier in the transaction. */
  accountDeltas: ReadonlyArray<{ asset: string; kind: AccountKind; delta: bigint }>;
}

/**
 * Writes a whole batch in ONE statement: the payments, their first transitions (null → submitted,
 * ledger_committed), their ledger entries and postings, the limit counters and the account balances.
 * Data-modifying CTEs all run, whatever the final SELECT reads; foreign keys are checked at the end of
 * the statement and the balanced-entry trigger at commit, so the guarantees are those of separate
 * statements, at one round trip instead of six. Returns the inserted payments and how many accounts
 * were updated (the caller checks it against the locked rows).
 */
export async function writeAcceptedPayouts(tx: Queryable, partition: Partition, batch: AcceptedBatch): Promise<{ payments: PaymentRow[]; accountsUpdated: number }> {
  const { payments, entries, usage, accountDeltas } = batch;
  const col = <T>(pick: (p: NewPayment) => T) => payments.map(pick);
  const postings = entries.flatMap((e) => e.postings.map((p) => ({ transactionId: e.id, ...p })));
  const qualified = PAYMENT_COLUMNS.split(',').map((c) => `pay.${c.trim()}`).join(', ');
  const { rows } = await tx.query<PaymentRow & { accounts_updated: number }>(
    `WITH pay AS (
       INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, quote_id, status, status_reason, message,
         source_asset, source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, method_changed,
         beneficiary, sender, rail, next_check_at, created_at, updated_at)
       SELECT $1, $2, v.id, v.customer_id, v.beneficiary_id, v.quote_id, v.status, v.status_reason, v.message,
              v.source_asset, v.source_amount, v.payout_asset, v.payout_amount, v.fee_amount, v.method, v.method_requested,
              v.method_changed, v.beneficiary, v.sender, v.rail, v.next_check_at, v.created_at, v.created_at
         FROM unnest($3::uuid[], $4::uuid[], $5::uuid[], $6::uuid[], $7::text[], $8::text[], $9::text[], $10::text[],
                     $11::bigint[], $12::text[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::boolean[],
                     $18::jsonb[], $19::jsonb[], $20::text[], $21::timestamptz[], $22::timestamptz[])
           AS v(id, customer_id, beneficiary_id, quote_id, status, status_reason, message, source_asset, source_amount,
                payout_asset, payout_amount, fee_amount, method, method_requested, method_changed, beneficiary, sender,
                rail, next_check_at, created_at)
       RETURNING *
     ), history AS (
       INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
       SELECT $1, v.id, NULL, 'submitted', 'ledger_committed', 'api',
              jsonb_build_object('methodRequested', v.method_requested, 'methodUsed', v.method), v.created_at
         FROM unnest($3::uuid[], $16::text[], $15::text[], $22::timestamptz[]) AS v(id, method_requested, method, created_at)
     ), entry AS (
       INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id)
       SELECT $1, $2, v.id, v.kind, v.payment_id FROM unnest($23::uuid[], $24::text[], $25::uuid[]) AS v(id, kind, payment_id)
     ), posting AS (
       INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
       SELECT $1, v.transaction_id, $2, v.asset, v.account_kind, v.amount
         FROM unnest($26::uuid[], $27::text[], $28::text[], $29::bigint[]) AS v(transaction_id, asset, account_kind, amount)
     ), usage AS (
       INSERT INTO limit_usage (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
       SELECT $1, $2, v.kind, v.subject_id, v.method, $30::date, v.amount, v.count
         FROM unnest($31::text[], $32::uuid[], $33::text[], $34::bigint[], $35::bigint[]) WITH ORDINALITY AS v(kind, subject_id, method, amount, count, n)
        ORDER BY v.n
       ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
       DO UPDATE SET amount = limit_usage.amount + EXCLUDED.amount, count = limit_usage.count + EXCLUDED.count
     ), account AS (
       UPDATE ledger_accounts a SET balance = a.balance + v.delta
         FROM unnest($36::text[], $37::text[], $38::bigint[]) AS v(asset, kind, delta)
        WHERE a.tenant_id = $1 AND a.mode = $2 AND a.asset = v.asset AND a.kind = v.kind
       RETURNING 1
     )
     SELECT ${qualified}, (SELECT count(*) FROM account)::int AS accounts_updated FROM pay`,
    [
      partition.tenantId,
      partition.mode,
      col((p) => p.id),
      col((p) => p.customer_id),
      col((p) => p.beneficiary_id),
      col((p) => p.quote_id),
      col((p) => p.status),
      col((p) => p.status_reason),
      col((p) => p.message),
      col((p) => p.source_asset),
      col((p) => p.source_amount.toString()),
      col((p) => p.payout_asset),
      col((p) => p.payout_amount.toString()),
      col((p) => p.fee_amount.toString()),
      col((p) => p.method),
      col((p) => p.method_requested),
      col((p) => p.method_changed),
      col((p) => JSON.stringify(p.beneficiary)),
      col((p) => (p.sender ? JSON.stringify(p.sender) : null)),
      col((p) => p.rail),
      col((p) => p.next_check_at),
      col((p) => p.created_at),
      entries.map((e) => e.id),
      entries.map((e) => e.kind),
      entries.map((e) => e.paymentId),
      postings.map((p) => p.transactionId),
      postings.map((p) => p.asset),
      postings.map((p) => p.account),
      postings.map((p) => p.amount.toString()),
      usage.day,
      usage.rows.map((u) => u.kind),
      usage.rows.map((u) => u.subjectId),
      usage.rows.map((u) => u.method),
      usage.rows.map((u) => u.amount.toString()),
      usage.rows.map((u) => u.count.toString()),
      accountDeltas.map((d) => d.asset),
      accountDeltas.map((d) => d.kind),
      accountDeltas.map((d) => d.delta.toString()),
    ],
  );
  const accountsUpdated = rows[0]?.accounts_updated ?? 0;
  return { payments: rows.map(({ accounts_updated: _n, ...payment }) => payment as PaymentRow), accountsUpdated };
}
