// POST /v1/payout-batches and its reads, on the engine the suite runs on (PGlite, or PostgreSQL with
// DATABASE_URL): every item decided as a single payout would be, in item order against running totals;
// refusals write nothing; each reference pays at most once, whatever key and whatever retry; a
// malformed batch writes nothing at all. Expected figures are computed here from the items, never read
// back from the answer. The reaper is driven by the test (no worker runs in the harness), so the
// answer shows each payment as it committed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, describe, it } from 'node:test';
import { claimPayoutBatch, releasePayoutBatch } from '../../src/db/repositories/payout-batches.ts';
import {
  assertEnvelope,
  client,
  ENGINE,
  startTestApp,
  walkPages,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import {
  SENDER,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  idempotencyKey,
  payout,
  position,
  quote,
  reaperOf,
  type FundedTenant,
} from '../support/payouts.ts';
import { until } from '../support/until.ts';

const MAX_ITEMS = 40;
const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '100',
  SANDBOX_REVERSE_DELAY_MS: '200',
  SANDBOX_RAIL_TIMEOUT_MS: '300',
  REAPER_INTERVAL_MS: '100',
  QUOTE_TTL_SECONDS: '600',
  PAYOUT_BATCH_MAX_ITEMS: String(MAX_ITEMS),
};
const UNKNOWN = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
const STATUSES = [
  'created',
  'pending',
  'submitted',
  'unknown',
  'settled',
  'failed',
  'returned',
  'reversed',
  'refused',
] as const;
const FINAL = new Set(['settled', 'failed', 'reversed', 'returned']);
const SUMMARY_KEYS = ['id', 'status', 'itemCount', 'counts', 'totals', 'createdAt', 'completedAt'];
const ITEM_KEYS = ['index', 'reference', 'status', 'paymentId', 'reason', 'amount', 'error'];

/** The tenant fee of an admin-created tenant: 100 bps, no fixed part (amounts here are multiples of 100). */
const charge = (deliver: number) => deliver + deliver / 100;

type Item = Record<string, unknown> & { reference: string };

/** A deliver-mode item paying `nationalId` (its sandbox trigger) `amount` minor units by pago_movil. */
function item(reference: string, nationalId: string, amount: number, extra: Record<string, unknown> = {}): Item {
  return {
    reference,
    deliver: { asset: 'BS', amount },
    method: 'pago_movil',
    beneficiary: beneficiary(nationalId),
    sender: SENDER,
    ...extra,
  };
}

function postBatch(api: Client, items: unknown[], key: string = idempotencyKey()): Promise<InjectResult> {
  return api.post('/v1/payout-batches', { items }, { 'idempotency-key': key });
}

/** What the test expects of one item: its answer, and the payment's final status once the rail is done. */
interface Expect {
  status: 'submitted' | 'failed' | 'refused';
  reason?: string;
  code?: string;
  meta?: Record<string, unknown>;
  amount: string | null;
  final?: { status: string; reason?: string | null };
}

/** Counts and totals by status, worked out from the expectations. */
function tally(expected: readonly Expect[], statusOf: (e: Expect) => string) {
  const counts: Record<string, number> = Object.fromEntries(STATUSES.map((s) => [s, 0]));
  const totals: Record<string, bigint> = Object.fromEntries(STATUSES.map((s) => [s, 0n]));
  for (const e of expected) {
    const s = statusOf(e);
    counts[s]! += 1;
    totals[s]! += BigInt(e.amount ?? 0);
  }
  return { counts, totals: Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, v.toString()])) };
}

async function tenantCounts(t: TestApp, tenantId: string): Promise<Record<string, number>> {
  const { rows } = await t.db.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM payout_batches WHERE tenant_id = $1) AS batches,
            (SELECT count(*)::int FROM payout_batch_items WHERE tenant_id = $1) AS items,
            (SELECT count(*)::int FROM quotes WHERE tenant_id = $1) AS quotes,
            (SELECT count(*)::int FROM payments WHERE tenant_id = $1) AS payments,
            (SELECT count(*)::int FROM beneficiaries WHERE tenant_id = $1) AS beneficiaries,
            (SELECT count(*)::int FROM idempotency_keys WHERE tenant_id = $1) AS keys,
            (SELECT count(*)::int FROM ledger_transactions WHERE tenant_id = $1) AS entries`,
    [tenantId],
  );
  return rows[0]!;
}

async function paymentCount(t: TestApp, tenantId: string): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1', [
    tenantId,
  ]);
  return rows[0]!.n;
}

/** Runs the reaper until every payment of the tenant is final (and the returns are applied), bounded. */
async function reapUntilFinal(
  t: TestApp,
  tenantId: string,
  done: (rows: Array<{ id: string; status: string }>) => boolean,
): Promise<void> {
  const reaper = reaperOf(t);
  let seen = '';
  await until(
    'every payment of the batch final',
    async () => {
      await reaper.runOnce();
      const { rows } = await t.db.query<{ id: string; status: string }>(
        'SELECT id, status FROM payments WHERE tenant_id = $1',
        [tenantId],
      );
      seen = JSON.stringify(rows.map((r) => r.status));
      return rows.every((r) => FINAL.has(r.status)) && done(rows);
    },
    { timeoutMs: 30_000, intervalMs: 100, detail: () => seen },
  );
}

describe(`payout batches on ${ENGINE}`, () => {
  let t: TestApp;
  let admin: Client;
  before(async () => {
    t = await startTestApp({ env: ENV });
    admin = client(t.app, t.platformKey);
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  it('decides every item as a single payout would, in item order against running totals; the batch completes as its payments become final', async () => {
    const customer = randomUUID();
    // The charged items (submitted at commit) and the balance left after them: just enough for item 20.
    const charged = [
      1_000_000, 1_100_000, 1_200_000, 1_300_000, 1_400_000, 1_500_000, 1_600_000, 1_700_000, 1_800_000, 1_900_000,
    ];
    // From item 11 on, 200,000 are left: pre-rail failures need the funds too (checked first) but
    // charge nothing; item 19 finds them short, item 20 fits, 21 does not, 22 (smaller) fits again.
    const left = 200_000;
    const funding = charged.reduce((sum, d) => sum + charge(d), 0) + left;
    const tenant = await fundedTenant(t, BigInt(funding));
    const rule = await admin.post('/v1/admin/limit-rules', {
      scope: 'customer',
      tenantId: tenant.tenantId,
      subjectId: customer,
      method: '*',
      per_tx_max: 2_000_000,
      daily_max: 100_000_000,
    });
    assert.equal(rule.status, 201, rule.raw);
    // A quote consumed by a payout that failed before the rail (below the floor: nothing charged).
    const usedQuote = await quote(tenant.api, 50_000);
    const single = await payout(tenant.api, { quoteId: usedQuote, beneficiary: beneficiary('V21000099') });
    assert.equal(single.body.reason, 'amount_below_rail_minimum', single.raw);

    const account = { accountNumber: '01020000000000000008' };
    const noPhone = { fullName: 'Sin Teléfono', nationalId: 'V21000013', bankCode: '0102' };
    const { sender: _omitted, ...withoutSender } = item('r12', 'V21000012', 150_000);
    const cases: Array<[Item, Expect]> = [
      [item('r00', 'V99990001', 1_000_000), { status: 'submitted', amount: '1000000', final: { status: 'settled' } }],
      [item('r01', 'V99990002', 1_100_000), { status: 'submitted', amount: '1100000', final: { status: 'settled' } }],
      [
        item('r02', 'V99990003', 1_200_000),
        { status: 'submitted', amount: '1200000', final: { status: 'failed', reason: 'rail_rejected' } },
      ],
      [
        item('r03', 'V99990004', 1_300_000),
        { status: 'submitted', amount: '1300000', final: { status: 'failed', reason: 'beneficiary_mismatch' } },
      ],
      [
        item('r04', 'V99990005', 1_400_000),
        { status: 'submitted', amount: '1400000', final: { status: 'failed', reason: 'bank_unreachable' } },
      ],
      [
        item('r05', 'V99990006', 1_500_000),
        { status: 'submitted', amount: '1500000', final: { status: 'failed', reason: 'invalid_destination_account' } },
      ],
      [
        item('r06', 'V99990007', 1_600_000),
        { status: 'submitted', amount: '1600000', final: { status: 'reversed', reason: 'returned_by_bank' } },
      ],
      [
        item('r07', 'V99990008', 1_700_000, { beneficiary: beneficiary('V99990008', account) }),
        { status: 'submitted', amount: '1700000', final: { status: 'settled' } },
      ],
      [
        item('r08', 'V99990008', 1_750_000, { beneficiary: beneficiary('V99990008', account), methodPolicy: 'strict' }),
        {
          status: 'failed',
          reason: 'instrument_unsupported',
          amount: '1750000',
          final: { status: 'failed', reason: 'instrument_unsupported' },
        },
      ],
      [item('r09', 'V99990009', 1_800_000), { status: 'submitted', amount: '1800000', final: { status: 'settled' } }],
      [item('r10', 'V21000010', 1_900_000), { status: 'submitted', amount: '1900000', final: { status: 'settled' } }],
      [
        item('r11', 'V21000011', 50_000),
        { status: 'failed', reason: 'amount_below_rail_minimum', amount: '50000', final: { status: 'failed' } },
      ],
      [
        withoutSender as Item,
        { status: 'failed', reason: 'sender_required', amount: '150000', final: { status: 'failed' } },
      ],
      [
        item('r13', 'V21000013', 160_000, { beneficiary: noPhone }),
        { status: 'failed', reason: 'beneficiary_missing_phone', amount: '160000', final: { status: 'failed' } },
      ],
      [
        item('r14', 'V21000014', 170_000, { method: 'transferencia', methodPolicy: 'strict' }),
        { status: 'failed', reason: 'beneficiary_missing_account', amount: '170000', final: { status: 'failed' } },
      ],
      [
        item('r15', 'V21000015', 10_000_100),
        {
          status: 'refused',
          code: 'limit_exceeded',
          amount: '10000100',
          meta: {
            rule: 'per_tx_max',
            cap: '10000000',
            scope: 'instrument',
            method: 'pago_movil',
            attempted: '10000100',
            exceeded_by: '100',
          },
        },
      ],
      [
        item('r16', 'V21000016', 3_000_000, { customerId: customer }),
        {
          status: 'refused',
          code: 'limit_exceeded',
          amount: '3000000',
          meta: {
            rule: 'per_tx_max',
            cap: '2000000',
            scope: 'customer',
            method: '*',
            attempted: '3000000',
            exceeded_by: '1000000',
            rule_id: rule.body.id,
          },
        },
      ],
      [
        { ...item('r17', 'V21000017', 1), deliver: undefined, quoteId: UNKNOWN } as Item,
        { status: 'refused', code: 'resource_not_found', amount: null },
      ],
      [
        { ...item('r18', 'V21000018', 1), deliver: undefined, quoteId: usedQuote } as Item,
        { status: 'refused', code: 'quote_already_consumed', amount: '50000' },
      ],
      [
        item('r19', 'V21000019', 5_000_000),
        {
          status: 'refused',
          code: 'insufficient_tenant_funds',
          amount: '5000000',
          meta: { asset: 'BS', required: '5050000', available: String(left) },
        },
      ],
      [item('r20', 'V21000020', 100_000), { status: 'submitted', amount: '100000', final: { status: 'settled' } }],
      [
        item('r21', 'V21000021', 100_000),
        {
          status: 'refused',
          code: 'insufficient_tenant_funds',
          amount: '100000',
          meta: { asset: 'BS', required: '101000', available: String(left - 101_000) },
        },
      ],
      [item('r22', 'V21000022', 95_000), { status: 'submitted', amount: '95000', final: { status: 'settled' } }],
    ];
    const items = cases.map(([i]) => JSON.parse(JSON.stringify(i)) as Item); // drops the undefined deliver
    const expected = cases.map(([, e]) => e);
    assert.deepEqual(
      items.map((i) => i.reference),
      expected.map((_, n) => `r${String(n).padStart(2, '0')}`),
      'the test lists its items in order',
    );

    const created = await postBatch(tenant.api, items);
    assert.equal(created.status, 201, created.raw);
    const batch = created.body;
    assert.deepEqual(Object.keys(batch), [...SUMMARY_KEYS, 'items']);
    assert.equal(batch.status, 'processing');
    assert.equal(batch.itemCount, items.length);
    assert.equal(batch.completedAt, null);
    assert.equal(created.headers['idempotent-replayed'], undefined);
    const problems: string[] = [];
    batch.items.forEach((got: any, n: number) => {
      const want = expected[n]!;
      assert.deepEqual(Object.keys(got), ITEM_KEYS);
      const seen = {
        index: got.index,
        reference: got.reference,
        status: got.status,
        reason: got.reason,
        amount: got.amount,
        code: got.error?.code ?? null,
        meta: got.error?.meta ?? null,
        paid: got.paymentId !== null,
      };
      const wanted = {
        index: n,
        reference: items[n]!.reference,
        status: want.status,
        reason: want.reason ?? null,
        amount: want.amount,
        code: want.code ?? null,
        meta: want.code ? (want.meta ?? seen.meta) : null,
        paid: want.status !== 'refused',
      };
      try {
        assert.deepEqual(seen, wanted);
      } catch {
        problems.push(`item ${n}: got ${JSON.stringify(seen)}, want ${JSON.stringify(wanted)}`);
      }
      if (want.status === 'refused' && typeof got.error?.message !== 'string')
        problems.push(`item ${n}: no error message`);
    });
    assert.deepEqual(problems, [], problems.join('\n'));
    assert.deepEqual(
      { counts: batch.counts, totals: batch.totals },
      tally(expected, (e) => e.status),
    );

    // No payment for a refused item; the batch's payments are exactly its paid items'.
    const paid = batch.items.filter((i: any) => i.paymentId !== null).map((i: any) => i.paymentId as string);
    assert.equal(new Set(paid).size, paid.length, 'one payment per paid item');
    const { rows: ofBatch } = await t.db.query<{ id: string }>(
      'SELECT id FROM payments WHERE tenant_id = $1 AND batch_id = $2',
      [tenant.tenantId, batch.id],
    );
    assert.deepEqual(ofBatch.map((r) => r.id).sort(), [...paid].sort());
    assert.equal(
      await paymentCount(t, tenant.tenantId),
      paid.length + 1,
      'the batch payments and the single payout, nothing else',
    );

    // The rail does its work; the batch reads completed once every payment is final.
    const v7 = batch.items[6].paymentId;
    await reapUntilFinal(t, tenant.tenantId, (rows) => rows.find((r) => r.id === v7)?.status === 'reversed');
    const read = await tenant.api.get(`/v1/payout-batches/${batch.id}`);
    assert.equal(read.status, 200, read.raw);
    assert.equal(read.body.status, 'completed');
    assert.ok(read.body.completedAt && read.body.completedAt >= read.body.createdAt, read.raw);
    const finalOf = (e: Expect) => (e.status === 'refused' ? 'refused' : e.final!.status);
    assert.deepEqual({ counts: read.body.counts, totals: read.body.totals }, tally(expected, finalOf));
    const finals = read.body.items.map((i: any, n: number) => ({ n, status: i.status, reason: i.reason }));
    assert.deepEqual(
      finals,
      expected.map((e, n) => ({
        n,
        status: finalOf(e),
        reason: e.status === 'refused' || e.final!.status !== 'failed' ? null : (e.final!.reason ?? e.reason ?? null),
      })),
    );
    for (const [n, e] of expected.entries()) {
      if (e.status === 'refused') continue;
      const payment = await tenant.api.get(`/v1/payments/${read.body.items[n].paymentId}`);
      assert.equal(payment.body.batch_id, batch.id);
      if (e.final?.reason) assert.equal(payment.body.status_reason, e.final.reason, `item ${n}`);
    }
    const r07 = await tenant.api.get(`/v1/payments/${read.body.items[7].paymentId}`);
    assert.equal(r07.body.method, 'transferencia', 'V99990008 switched to the other instrument');
    assert.equal(
      'batch_id' in (await tenant.api.get(`/v1/payments/${single.body.id}`)).body,
      false,
      'a single payout names no batch',
    );

    // Ordinary events: exactly the outcome events of each payment, none for refused items.
    const { rows: events } = await t.db.query<{ aggregate_id: string; event_type: string }>(
      'SELECT aggregate_id, event_type FROM outbox_events WHERE tenant_id = $1',
      [tenant.tenantId],
    );
    for (const id of paid) {
      const status = read.body.items.find((i: any) => i.paymentId === id).status;
      const want = status === 'reversed' ? ['payment.reversed', 'payment.settled'] : [`payment.${status}`];
      assert.deepEqual(
        events
          .filter((e) => e.aggregate_id === id)
          .map((e) => e.event_type)
          .sort(),
        want,
        `events of ${id} (${status})`,
      );
    }
    assert.equal(
      events.length,
      paid.length + 1 + 1,
      'one per payment, two for the reversed one, one for the single payout',
    );

    // The balance: funding less what settled, less the fee the reversal kept.
    const settledCharges = expected
      .filter((e) => e.final?.status === 'settled' && e.status === 'submitted')
      .reduce((s, e) => s + charge(Number(e.amount)), 0);
    assert.equal((await position(tenant.api)).prefundingBalance, String(funding - settledCharges - 1_600_000 / 100));

    // The statement and its export, by batch.
    const rows = await tenant.api.get(`/v1/payments?batchId=${batch.id}&limit=100`);
    assert.equal(rows.status, 200, rows.raw);
    assert.deepEqual(rows.body.data.map((r: any) => r.id).sort(), [...paid].sort());
    for (const r of rows.body.data) assert.equal(r.batch_id, batch.id);
    assert.deepEqual((await tenant.api.get(`/v1/payments?batchId=${randomUUID()}`)).body.data, []);
    const csv = await tenant.api.get(`/v1/payments/export?batchId=${batch.id}`);
    assert.equal(csv.status, 200, csv.raw);
    const lines = csv.raw.split('\r\n').filter((l) => l !== '');
    assert.equal(lines[0]!.split(',').at(-1), 'batch_id');
    assert.equal(lines.length, paid.length + 1);
    for (const line of lines.slice(1)) assert.equal(line.split(',').at(-1), batch.id);
    const plain = await tenant.api.get('/v1/payments/export');
    assert.notEqual(plain.raw.split('\r\n')[0]!.split(',').at(-1), 'batch_id', 'the plain export has no batch column');
  });

  it('idempotency: a replay answers the same batch, another body is 409, a new key pays no reference twice', async () => {
    const tenant = await fundedTenant(t, 2 * charge(1_000_000) + charge(200_000));
    const items = [
      item('a-1', 'V22000001', 1_000_000),
      item('a-2', 'V22000002', 1_000_000),
      item('a-3', 'V22000003', 200_000),
      item('a-4', 'V22000004', 1_000_000),
    ];
    const key = idempotencyKey();
    const first = await postBatch(tenant.api, items, key);
    assert.equal(first.status, 201, first.raw);
    assert.deepEqual(
      first.body.items.map((i: any) => i.error?.code ?? i.status),
      ['submitted', 'submitted', 'submitted', 'insufficient_tenant_funds'],
    );
    const ids = first.body.items.map((i: any) => i.paymentId);

    const replay = await postBatch(tenant.api, items, key);
    assert.equal(replay.status, 201, replay.raw);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, first.body, 'the same batch, the same items');

    assertEnvelope(assert, await postBatch(tenant.api, items.slice(0, 3), key), 409, 'idempotency_key_reused');
    assertEnvelope(
      assert,
      await postBatch(tenant.api, [...items.slice(0, 3), { ...items[3]!, reference: 'a-5' }], key),
      409,
      'idempotency_key_reused',
    );

    // A retry with a new key: the paid references answer their payments; nothing is paid twice.
    const paymentsBefore = await paymentCount(t, tenant.tenantId);
    const retried = await postBatch(tenant.api, items);
    assert.equal(retried.status, 201, retried.raw);
    assert.notEqual(retried.body.id, first.body.id);
    assert.deepEqual(
      retried.body.items.map((i: any) => i.paymentId),
      ids,
    );
    assert.equal(retried.body.items[3].error.code, 'insufficient_tenant_funds');
    assert.equal(await paymentCount(t, tenant.tenantId), paymentsBefore);
    const { rows: named } = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1 AND batch_id = $2',
      [tenant.tenantId, retried.body.id],
    );
    assert.equal(named[0]!.n, 0, 'the retry created no payment (the payments name the batch that made them)');
    assert.deepEqual((await tenant.api.get(`/v1/payments?batchId=${retried.body.id}`)).body.data, []);

    // A used reference with other content is refused, naming the payment it paid.
    const reused = await postBatch(tenant.api, [
      item('a-1', 'V22000001', 1_000_100),
      item('a-6', 'V22000006', 100_000),
    ]);
    assert.equal(reused.status, 201, reused.raw);
    assert.equal(reused.body.items[0].status, 'refused');
    assert.equal(reused.body.items[0].paymentId, null);
    assert.equal(reused.body.items[0].error.code, 'reference_reused');
    assert.deepEqual(reused.body.items[0].error.meta, { paymentId: ids[0] });
    assert.equal(reused.body.items[1].error.code, 'insufficient_tenant_funds', 'the balance is spent');
    assert.equal(await paymentCount(t, tenant.tenantId), paymentsBefore);

    // The refused item's reference was not consumed: funded, a retry with a new key pays it, once.
    const funded = await admin.post(
      `/v1/admin/tenants/${tenant.tenantId}/fundings`,
      { mode: 'test', asset: 'BS', amount: charge(1_000_000) },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(funded.status, 201, funded.raw);
    const paidNow = await postBatch(tenant.api, items);
    assert.equal(paidNow.status, 201, paidNow.raw);
    assert.deepEqual(
      paidNow.body.items.map((i: any) => i.status),
      ['submitted', 'submitted', 'submitted', 'submitted'],
    );
    assert.deepEqual(
      paidNow.body.items.slice(0, 3).map((i: any) => i.paymentId),
      ids.slice(0, 3),
    );
    assert.equal(await paymentCount(t, tenant.tenantId), paymentsBefore + 1);
    const again = await postBatch(tenant.api, items);
    assert.deepEqual(
      again.body.items.map((i: any) => i.paymentId),
      paidNow.body.items.map((i: any) => i.paymentId),
    );
    assert.equal(await paymentCount(t, tenant.tenantId), paymentsBefore + 1);
    assert.equal((await position(tenant.api)).prefundingBalance, '0');
  });

  it('a malformed batch is 400 naming items.N.field and writes nothing; bounds of size, body and key', async () => {
    const tenant = await fundedTenant(t);
    const before = await tenantCounts(t, tenant.tenantId);
    const good = (n: number) => item(`v-${n}`, `V2300000${n}`, 1_000_000);
    const cases: Array<[unknown[], string[]]> = [
      [
        [good(0), good(1), { ...good(2), beneficiary: beneficiary('V23000002', { phone: '123' }) }],
        ['items.2.beneficiary.phone'],
      ],
      [[{ ...good(0), quoteId: UNKNOWN }, good(1)], ['items.0.quoteId']],
      [[good(0), { ...good(1), deliver: undefined }], ['items.1.quoteId']],
      [[good(0), good(1), good(2), { ...good(3), reference: 'v-1' }], ['items.3.reference']],
      [[good(0), { ...good(1), reference: 'spaces are not allowed' }], ['items.1.reference']],
      [
        [
          good(0),
          { ...good(1), sender: { ...SENDER, email: 'nope' } },
          { ...good(2), beneficiary: beneficiary('V23000002', { bankCode: '9999' }) },
        ],
        ['items.1.sender.email', 'items.2.beneficiary.bankCode'],
      ],
      [[good(0), good(1), { ...good(2), customerId: 'nope' }], ['items.2.customerId']],
      [[good(0), good(1), { ...good(2), method: 'cash' }], ['items.2.method']],
      [[{ ...good(0), deliver: { asset: 'BS', amount: 0 } }], ['items.0.deliver.amount']],
      // Within the schema's bounds, but no quote can be made for it (the fee would overflow the amount range).
      [
        [good(0), { ...good(1), deliver: { asset: 'BS', amount: Number.MAX_SAFE_INTEGER } }],
        ['items.1.deliver.amount'],
      ],
    ];
    for (const [items, fields] of cases) {
      const response = await postBatch(tenant.api, JSON.parse(JSON.stringify(items)));
      assertEnvelope(assert, response, 400, 'validation_failed');
      const named = response.body.error.meta.errors.map((e: { field: string }) => e.field);
      for (const field of fields) assert.ok(named.includes(field), `${field} in ${response.raw}`);
    }
    const tooMany = await postBatch(
      tenant.api,
      Array.from({ length: MAX_ITEMS + 1 }, (_, n) => item(`big-${n}`, 'V23000001', 100_000)),
    );
    assertEnvelope(assert, tooMany, 400, 'payout_batch_too_large');
    assert.deepEqual(tooMany.body.error.meta, { maxItems: MAX_ITEMS, items: MAX_ITEMS + 1 });
    assertEnvelope(assert, await postBatch(tenant.api, []), 400, 'validation_failed');
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/payout-batches', { items: [good(0)] }),
      400,
      'idempotency_key_missing',
    );
    // The route takes 4 KiB per item (at least 64 KiB): one byte-heavy item over that is 413.
    const padding = 'x'.repeat(MAX_ITEMS * 4096 + 1);
    assertEnvelope(
      assert,
      await postBatch(tenant.api, [{ ...good(0), metadata: { note: padding } }]),
      413,
      'payload_too_large',
    );
    assert.deepEqual(await tenantCounts(t, tenant.tenantId), before, 'nothing written by any of them');

    assertEnvelope(assert, await tenant.api.get(`/v1/payout-batches/${UNKNOWN}`), 404, 'resource_not_found');
    const other = await fundedTenant(t);
    const theirs = await postBatch(other.api, [good(0)]);
    assert.equal(theirs.status, 201, theirs.raw);
    assertEnvelope(assert, await tenant.api.get(`/v1/payout-batches/${theirs.body.id}`), 404, 'resource_not_found');
    assertEnvelope(assert, await tenant.api.get('/v1/payout-batches/not-a-uuid'), 400, 'validation_failed');
  });

  it('lists batches newest first with cursor pagination, without their items', async () => {
    const tenant = await fundedTenant(t);
    const made: string[] = [];
    for (let n = 0; n < 5; n += 1) {
      const response = await postBatch(tenant.api, [
        item(`l-${n}-a`, 'V24000001', 100_000 + n * 100),
        item(`l-${n}-b`, 'V24000002', 50_000),
      ]);
      assert.equal(response.status, 201, response.raw);
      made.push(response.body.id);
    }
    const { ids, pages } = await walkPages(tenant.api, '/v1/payout-batches', 2, SUMMARY_KEYS);
    assert.deepEqual(ids, [...made].reverse());
    assert.equal(pages, 3);
    const first = await tenant.api.get('/v1/payout-batches?limit=1');
    assert.deepEqual(first.body.data[0].counts, {
      ...Object.fromEntries(STATUSES.map((s) => [s, 0])),
      submitted: 1,
      failed: 1,
    });
    assert.deepEqual(first.body.data[0].totals, {
      ...Object.fromEntries(STATUSES.map((s) => [s, '0'])),
      submitted: '100400',
      failed: '50000',
    });
    assertEnvelope(assert, await tenant.api.get('/v1/payout-batches?cursor=garbage'), 400, 'validation_failed');
    const other = await fundedTenant(t);
    assert.deepEqual((await other.api.get('/v1/payout-batches')).body.data, [], 'another tenant sees none');
  });

  it('at most PAYOUT_BATCHES_IN_PROGRESS_MAX batches of a tenant record at once: one more is 429 with Retry-After, nothing written', async () => {
    const tenant = await fundedTenant(t);
    const scope = { tenantId: tenant.tenantId, mode: 'test' as const };
    const now = new Date();
    const held: string[] = [];
    // Requests still recording their items (claimed, leased for a minute, never finished).
    for (let n = 0; n < t.config.payoutBatchesInProgressMax; n += 1) {
      const claim = await claimPayoutBatch(t.db, scope, {
        id: randomUUID(),
        key: `held-${n}`,
        fingerprint: 'a'.repeat(64),
        itemCount: 1,
        createdByKeyId: randomUUID(),
        now,
        leasedUntil: new Date(now.getTime() + 60_000),
        inProgressMax: t.config.payoutBatchesInProgressMax,
      });
      assert.equal(claim.kind, 'new');
      if (claim.kind === 'new') held.push(claim.batch.id);
    }
    const full = await claimPayoutBatch(t.db, scope, {
      id: randomUUID(),
      key: 'held-extra',
      fingerprint: 'a'.repeat(64),
      itemCount: 1,
      createdByKeyId: randomUUID(),
      now,
      leasedUntil: new Date(now.getTime() + 60_000),
      inProgressMax: t.config.payoutBatchesInProgressMax,
    });
    assert.equal(full.kind, 'too_many');
    const before = await tenantCounts(t, tenant.tenantId);
    const key = idempotencyKey();
    const items = [item('p-1', 'V25000001', 100_000)];
    const refused = await postBatch(tenant.api, items, key);
    assertEnvelope(assert, refused, 429, 'payout_batches_in_progress');
    assert.ok(Number(refused.headers['retry-after']) > 0, `Retry-After: ${refused.headers['retry-after']}`);
    assert.deepEqual(await tenantCounts(t, tenant.tenantId), before);
    // Another tenant is not held back; and once one is released, the same key goes through.
    const other = await fundedTenant(t);
    assert.equal((await postBatch(other.api, items)).status, 201);
    await releasePayoutBatch(t.db, scope, held[0]!, new Date());
    const through = await postBatch(tenant.api, items, key);
    assert.equal(through.status, 201, through.raw);
    assert.equal(through.body.items[0].status, 'submitted');
  });
});

describe(
  'payout batches under concurrency (PostgreSQL)',
  {
    skip:
      ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): PGlite runs one statement at a time' : false,
  },
  () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp({ env: ENV });
    });
    afterEach(async () => {
      await assertLedgerBalanced(t);
    });
    after(async () => {
      await t.close();
    });

    const many = (prefix: string, n: number, amount = 100_000) =>
      Array.from({ length: n }, (_, i) => item(`${prefix}-${i}`, `V26${String(i).padStart(6, '0')}`, amount));

    it('two concurrent requests with one key: one batch, each item paid once', async () => {
      const tenant = await fundedTenant(t);
      const items = many('k', 30);
      const key = idempotencyKey();
      const answers = await Promise.all([postBatch(tenant.api, items, key), postBatch(tenant.api, items, key)]);
      for (const a of answers)
        assert.ok(
          a.status === 201 || (a.status === 409 && a.body.error.code === 'idempotency_request_in_progress'),
          a.raw,
        );
      const final = await until('the batch answered', async () => {
        const r = await postBatch(tenant.api, items, key);
        return r.status === 201 ? r : undefined;
      });
      const { rows: batches } = await t.db.query('SELECT id FROM payout_batches WHERE tenant_id = $1', [
        tenant.tenantId,
      ]);
      assert.deepEqual(
        batches.map((b: any) => b.id),
        [final.body.id],
      );
      assert.equal(final.body.items.filter((i: any) => i.status === 'submitted').length, 30, final.raw);
      await assertReferencesPaidOnce(t, tenant, 30);
    });

    it('two concurrent batches with different keys sharing references: each reference paid once', async () => {
      const tenant = await fundedTenant(t);
      const items = many('s', 30);
      // In the same order, the two batches' items with one reference reach the committer together and
      // are often decided in one transaction: the second must still be answered with the first's payment.
      const [a, b] = await Promise.all([postBatch(tenant.api, items), postBatch(tenant.api, items)]);
      assert.equal(a.status, 201, a.raw);
      assert.equal(b.status, 201, b.raw);
      const byRef = new Map<string, Set<string>>();
      for (const i of [...a.body.items, ...b.body.items]) {
        assert.ok(i.paymentId, `every item names a payment: ${JSON.stringify(i)}`);
        byRef.set(i.reference, (byRef.get(i.reference) ?? new Set()).add(i.paymentId));
      }
      for (const [ref, ids] of byRef) assert.equal(ids.size, 1, `${ref} named ${[...ids]}`);
      await assertReferencesPaidOnce(t, tenant, 30);

      // The same references with other content at once: each paid by one batch, refused reference_reused in the other.
      const fresh = many('c', 20);
      const other = fresh.map((i) => ({ ...i, deliver: { asset: 'BS', amount: 100_100 } }));
      const [c, d] = await Promise.all([postBatch(tenant.api, fresh), postBatch(tenant.api, other)]);
      assert.equal(c.status, 201, c.raw);
      assert.equal(d.status, 201, d.raw);
      c.body.items.forEach((ci: any, n: number) => {
        const di = d.body.items[n];
        const [paidItem, refusedItem] = ci.paymentId ? [ci, di] : [di, ci];
        assert.ok(paidItem.paymentId, `one of the two pays ${ci.reference}: ${JSON.stringify([ci, di])}`);
        assert.equal(refusedItem.paymentId, null, JSON.stringify([ci, di]));
        assert.equal(refusedItem.error?.code, 'reference_reused', JSON.stringify([ci, di]));
        assert.deepEqual(refusedItem.error.meta, { paymentId: paidItem.paymentId });
      });
      await assertReferencesPaidOnce(t, tenant, 50);
    });

    it('concurrent batches draining one balance: never negative, what was accepted fits the funding', async () => {
      const covers = 10;
      const funding = covers * charge(1_000_000);
      const tenant = await fundedTenant(t, funding);
      const answers = await Promise.all([0, 1, 2].map((n) => postBatch(tenant.api, many(`d${n}`, 8, 1_000_000))));
      const items = answers.flatMap((a) => {
        assert.equal(a.status, 201, a.raw);
        return a.body.items;
      });
      const accepted = items.filter((i: any) => i.status === 'submitted');
      const refused = items.filter((i: any) => i.status === 'refused');
      assert.equal(accepted.length, covers, JSON.stringify(items.map((i: any) => i.status)));
      for (const r of refused) assert.equal(r.error.code, 'insufficient_tenant_funds');
      assert.equal(accepted.length + refused.length, 24);
      assert.equal((await position(tenant.api)).prefundingBalance, '0');
      await assertReferencesPaidOnce(t, tenant, covers);
    });
  },
);

/** The tenant has exactly `payments` payments, one per item key (reference), each named by its key. */
async function assertReferencesPaidOnce(t: TestApp, tenant: FundedTenant, payments: number): Promise<void> {
  assert.equal(await paymentCount(t, tenant.tenantId), payments);
  const { rows } = await t.db.query<{ payment_id: string; n: number }>(
    `SELECT payment_id, count(*)::int AS n FROM idempotency_keys WHERE tenant_id = $1 AND payment_id IS NOT NULL GROUP BY payment_id HAVING count(*) > 1`,
    [tenant.tenantId],
  );
  assert.deepEqual(rows, [], 'no payment named by two references');
}
