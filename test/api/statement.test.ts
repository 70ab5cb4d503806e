import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { businessDate } from '../../src/domain/caracas-time.ts';
import { ManualClock } from '../support/clock.ts';
import { encodeCursor } from '../../src/domain/page-cursor.ts';
import { StatementService, statementFilter } from '../../src/services/statement.ts';
import type { Database, Queryable } from '../../src/db/database.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  startTestApp,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  payout,
  SENDER,
} from '../support/payouts.ts';

// Settlement by the reaper two minutes after the payout: a payout at 23:59 Caracas settles at 00:01.
const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '120000',
  SANDBOX_REVERSE_DELAY_MS: '600000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};

const ROW_KEYS = [
  'id',
  'customer_id',
  'beneficiary_id',
  'status',
  'status_reason',
  'source_asset',
  'source_amount',
  'payout_asset',
  'payout_amount',
  'fee_amount',
  'method',
  'bank_reference',
  'settled_at',
  'created_at',
  'metadata',
];
const CUSTOMER_1 = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b301';
const CUSTOMER_2 = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b302';
const UNKNOWN = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

/** Text fields, and `metadata` (an object of strings). */
type Row = Record<string, any>;

/** Every row of a filtered statement, read page by page; also checks each page's own invariants. */
async function readAll(api: Client, query: string, limit: number): Promise<Row[]> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 10_000; pages += 1) {
    const url: string = `/v1/payments?${query}${query ? '&' : ''}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await api.get(url);
    assert.equal(page.status, 200, page.raw);
    assert.ok(page.body.data.length <= limit);
    assert.equal(page.body.has_more, page.body.next_cursor !== null);
    if (page.body.has_more) assert.equal(page.body.data.length, limit, 'only the last page is short');
    rows.push(...page.body.data);
    cursor = page.body.next_cursor;
    if (!cursor) return rows;
  }
  throw new Error('statement did not end');
}

/** Newest first: created_at, then id, both strictly descending. */
function assertOrdered(rows: Row[]): void {
  for (let i = 1; i < rows.length; i += 1) {
    const [a, b] = [rows[i - 1]!, rows[i]!];
    const before = a.created_at! > b.created_at! || (a.created_at === b.created_at && a.id! > b.id!);
    assert.ok(before, `row ${i} (${b.created_at} ${b.id}) is not after row ${i - 1} (${a.created_at} ${a.id})`);
  }
}

const ids = (rows: Row[]) => rows.map((r) => r.id);

/** The statement semantics stated plainly, to check the indexed plans against. */
function expected(
  all: Row[],
  f: { from?: string; to?: string; status?: string; beneficiaryId?: string; customerId?: string },
): Row[] {
  return all.filter((r) => {
    if (f.status && r.status !== f.status) return false;
    if (f.beneficiaryId && r.beneficiary_id !== f.beneficiaryId) return false;
    if (f.customerId && r.customer_id !== f.customerId) return false;
    if (f.from || f.to) {
      if (!r.settled_at) return false;
      const day = businessDate(new Date(r.settled_at));
      if (f.from && day < f.from) return false;
      if (f.to && day > f.to) return false;
    }
    return true;
  });
}

function queryString(f: Record<string, string | undefined>): string {
  return Object.entries(f)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(v!)}`)
    .join('&');
}

/** RFC 4180: quoted fields may hold commas, doubled quotes and line breaks; lines end in CRLF. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') {
        quoted = false;
        i += 1;
        continue;
      }
      field += c;
      i += 1;
      continue;
    }
    if (c === '"') {
      assert.equal(field, '', 'a quote only opens a field');
      quoted = true;
      i += 1;
      continue;
    }
    if (c === ',') {
      record.push(field);
      field = '';
      i += 1;
      continue;
    }
    if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i += 2;
      continue;
    }
    assert.notEqual(c, '\n', 'lines end in CRLF');
    field += c;
    i += 1;
  }
  assert.equal(quoted, false, 'no quoted field is left open');
  assert.equal(field, '', 'the last line ends in CRLF');
  assert.equal(record.length, 0);
  return records;
}

/** The export parsed back into statement rows ('' is null, `metadata` is JSON text), after checking its header. */
function exportedRows(response: InjectResult): Row[] {
  assert.equal(response.status, 200, response.raw);
  const [header, ...lines] = parseCsv(response.raw);
  assert.deepEqual(header, ROW_KEYS);
  return lines.map((line) => {
    assert.equal(line.length, ROW_KEYS.length);
    return Object.fromEntries(
      ROW_KEYS.map((k, i) => [k, k === 'metadata' ? JSON.parse(line[i]!) : line[i] === '' ? null : line[i]!]),
    );
  });
}

describe('statement: GET /v1/payments and GET /v1/payments/export', () => {
  let t: TestApp;
  let clock: ManualClock;
  let main: FundedTenant;
  // The payments of `main`, by role (see `before`).
  const p: Record<string, Row> = {};
  let all: Row[];

  async function pay(api: Client, nationalId: string, extra: Record<string, unknown> = {}) {
    const response = await payout(api, { beneficiary: beneficiary(nationalId), ...extra });
    assert.equal(response.status, 201, response.raw);
    return response.body;
  }

  before(async () => {
    // 2026-03-09 11:00 in Caracas (UTC−4).
    clock = new ManualClock('2026-03-09T15:00:00Z');
    t = await startTestApp({ clock, env: ENV });
    main = await fundedTenant(t);
    const made: Record<string, string> = {};
    made.settledAt11 = (await pay(main.api, 'V99990001', { customerId: CUSTOMER_1 })).id;
    clock.advance(60_000);
    made.failed = (await pay(main.api, 'V99990004', { customerId: CUSTOMER_1 })).id;
    clock.advance(60_000);
    made.settledByReaper = (await pay(main.api, 'V20000001', { customerId: CUSTOMER_2 })).id;
    // 23:58 and 23:59 of 2026-03-09 in Caracas.
    clock.set('2026-03-10T03:58:00Z');
    await advanceAndReap(t, clock, 0);
    clock.set('2026-03-10T03:59:00Z');
    made.createdBeforeMidnight = (await pay(main.api, 'V20000001')).id;
    clock.set('2026-03-10T03:59:59.999Z');
    made.lastMillisecond = (await pay(main.api, 'V99990001')).id;
    clock.set('2026-03-10T04:00:00.000Z');
    made.firstMillisecond = (await pay(main.api, 'V99990001')).id;
    // 00:01:30 on 2026-03-10: the 23:59 payout settled at 00:01.
    await advanceAndReap(t, clock, 90_000);
    clock.set('2026-03-10T15:00:00Z');
    made.reversed = (await pay(main.api, 'V99990007')).id;
    await advanceAndReap(t, clock, 180_000);
    await advanceAndReap(t, clock, 700_000);
    made.submitted = (await pay(main.api, 'V20000002', { customerId: CUSTOMER_2 })).id;
    clock.advance(1000);
    made.unknown = (await pay(main.api, 'V99990002')).id;
    clock.advance(1000);

    all = await readAll(main.api, '', 100);
    for (const [role, id] of Object.entries(made)) p[role] = all.find((r) => r.id === id)!;
  });

  after(async () => {
    await t.close();
  });

  describe('rows and order', () => {
    it('has the 2.6 row shape exactly, amounts as strings, fee 0 on failed', () => {
      assert.equal(all.length, 9);
      for (const row of all) assert.deepEqual(Object.keys(row), ROW_KEYS);
      assert.deepEqual(Object.fromEntries(Object.entries(p).map(([role, row]) => [role, row.status])), {
        settledAt11: 'settled',
        failed: 'failed',
        settledByReaper: 'settled',
        createdBeforeMidnight: 'settled',
        lastMillisecond: 'settled',
        firstMillisecond: 'settled',
        reversed: 'reversed',
        submitted: 'submitted',
        unknown: 'unknown',
      });
      const settled = p.settledAt11!;
      assert.equal(settled.customer_id, CUSTOMER_1);
      assert.match(settled.beneficiary_id!, /^[0-9a-f-]{36}$/);
      assert.equal(settled.source_asset, 'BS');
      assert.equal(settled.payout_asset, 'BS');
      assert.equal(settled.payout_amount, '1000000');
      assert.equal(settled.source_amount, '1010000');
      assert.equal(settled.fee_amount, '10000');
      assert.equal(settled.method, 'pago_movil');
      assert.match(settled.bank_reference!, /^\d{12}$/);
      assert.equal(settled.settled_at, '2026-03-09T15:00:00.000Z');
      assert.equal(settled.created_at, '2026-03-09T15:00:00.000Z');
      assert.equal(p.failed!.fee_amount, '0');
      assert.equal(p.failed!.status_reason, 'beneficiary_mismatch');
      assert.equal(p.failed!.settled_at, null);
      assert.equal(p.failed!.bank_reference, null);
      assert.equal(p.submitted!.settled_at, null);
      assert.equal(p.createdBeforeMidnight!.created_at, '2026-03-10T03:59:00.000Z');
      assert.equal(p.createdBeforeMidnight!.settled_at, '2026-03-10T04:01:00.000Z');
    });

    it('is newest first by created_at, then id; a row equals GET /v1/payments/{id} minus its extra fields', async () => {
      assertOrdered(all);
      assert.deepEqual(
        ids(all),
        [
          p.unknown,
          p.submitted,
          p.reversed,
          p.firstMillisecond,
          p.lastMillisecond,
          p.createdBeforeMidnight,
          p.settledByReaper,
          p.failed,
          p.settledAt11,
        ].map((r) => r!.id),
      );
      const one = await main.api.get(`/v1/payments/${p.reversed!.id}`);
      assert.deepEqual(Object.fromEntries(ROW_KEYS.map((k) => [k, one.body[k]])), p.reversed);
    });

    it('the default page is 25 rows; has_more and next_cursor', async () => {
      const busy = await fundedTenant(t);
      for (let i = 0; i < 26; i += 1) {
        clock.advance(10);
        await pay(busy.api, 'V30000001');
      }
      const first = await busy.api.get('/v1/payments');
      assert.equal(first.body.data.length, 25);
      assert.equal(first.body.has_more, true);
      assert.equal(typeof first.body.next_cursor, 'string');
      const second = await busy.api.get(`/v1/payments?cursor=${first.body.next_cursor}`);
      assert.equal(second.body.data.length, 1);
      assert.equal(second.body.has_more, false);
      assert.equal(second.body.next_cursor, null);
      const hundred = await busy.api.get('/v1/payments?limit=100');
      assert.equal(hundred.body.data.length, 26);
      assert.equal(hundred.body.has_more, false);
      const one = await busy.api.get('/v1/payments?limit=1');
      assert.equal(one.body.data.length, 1);
      assert.equal(one.body.has_more, true);
    });

    it('an empty statement is an empty page', async () => {
      const empty = await createTenant(t);
      const page = await empty.api.get('/v1/payments');
      assert.deepEqual(page.body, { data: [], has_more: false, next_cursor: null });
      const ranged = await empty.api.get('/v1/payments?from=2026-03-01&to=2026-03-31');
      assert.deepEqual(ranged.body, { data: [], has_more: false, next_cursor: null });
    });
  });

  describe('filters', () => {
    it('from/to are Caracas days on settled_at: created 23:59, settled 00:01 belongs to the next day', async () => {
      const ninth = await readAll(main.api, 'from=2026-03-09&to=2026-03-09', 100);
      assert.deepEqual(
        ids(ninth),
        [p.lastMillisecond, p.settledByReaper, p.settledAt11].map((r) => r!.id),
      );
      const tenth = await readAll(main.api, 'from=2026-03-10&to=2026-03-10', 100);
      assert.deepEqual(
        ids(tenth),
        [p.reversed, p.firstMillisecond, p.createdBeforeMidnight].map((r) => r!.id),
      );
      assert.ok(!ids(ninth).includes(p.createdBeforeMidnight!.id), 'not on the statement of the day it was created');
      // 03:59:59.999Z is 23:59:59.999 on the 9th; 04:00:00.000Z is midnight, the 10th.
      assert.ok(ids(ninth).includes(p.lastMillisecond!.id));
      assert.ok(ids(tenth).includes(p.firstMillisecond!.id));
    });

    it('from alone, to alone, and a range: unsettled payments are left out whenever either is given', async () => {
      const settled = all.filter((r) => r.settled_at !== null);
      assert.deepEqual(ids(await readAll(main.api, 'from=2026-03-09&to=2026-03-10', 100)), ids(settled));
      assert.deepEqual(
        ids(await readAll(main.api, 'from=2026-03-10', 100)),
        ids(expected(all, { from: '2026-03-10' })),
      );
      assert.deepEqual(ids(await readAll(main.api, 'to=2026-03-09', 100)), ids(expected(all, { to: '2026-03-09' })));
      assert.deepEqual(ids(await readAll(main.api, 'from=2026-03-01', 100)), ids(settled));
      assert.deepEqual(ids(await readAll(main.api, 'to=2026-12-31', 100)), ids(settled));
      assert.deepEqual(await readAll(main.api, 'from=2026-03-11', 100), []);
      assert.deepEqual(await readAll(main.api, 'to=2026-03-08', 100), []);
      assert.deepEqual(await readAll(main.api, 'from=1970-01-01&to=9999-12-30', 100), settled);
    });

    it('status, beneficiaryId and customerId, alone and combined with each other and with from/to', async () => {
      const beneficiaryOfSettled = p.settledAt11!.beneficiary_id!;
      const beneficiaryOfReaped = p.settledByReaper!.beneficiary_id!;
      assert.equal(p.createdBeforeMidnight!.beneficiary_id, beneficiaryOfReaped, 'the same registered beneficiary');
      const cases: Array<Record<string, string>> = [
        { status: 'settled' },
        { status: 'failed' },
        { status: 'reversed' },
        { status: 'submitted' },
        { status: 'unknown' },
        { status: 'pending' },
        { beneficiaryId: beneficiaryOfSettled },
        { beneficiaryId: beneficiaryOfReaped },
        { beneficiaryId: UNKNOWN },
        { customerId: CUSTOMER_1 },
        { customerId: CUSTOMER_2 },
        { customerId: UNKNOWN },
        { status: 'settled', customerId: CUSTOMER_1 },
        { status: 'settled', beneficiaryId: beneficiaryOfReaped, customerId: CUSTOMER_2 },
        { status: 'reversed', from: '2026-03-10', to: '2026-03-10' },
        { status: 'settled', from: '2026-03-10' },
        { status: 'failed', from: '2026-03-09' },
        { beneficiaryId: beneficiaryOfSettled, from: '2026-03-10', to: '2026-03-10' },
        { beneficiaryId: beneficiaryOfReaped, to: '2026-03-09' },
        { customerId: CUSTOMER_2, from: '2026-03-09', to: '2026-03-09' },
        { customerId: CUSTOMER_1, status: 'settled', from: '2026-03-09', to: '2026-03-10' },
      ];
      for (const f of cases) {
        const want = expected(all, f);
        for (const limit of [1, 2, 100]) {
          assert.deepEqual(
            ids(await readAll(main.api, queryString(f), limit)),
            ids(want),
            `${queryString(f)} limit ${limit}`,
          );
        }
      }
      assert.deepEqual(ids(expected(all, { customerId: CUSTOMER_1 })), [p.failed!.id, p.settledAt11!.id]);
      assert.deepEqual(
        ids(expected(all, { beneficiaryId: beneficiaryOfSettled, from: '2026-03-10', to: '2026-03-10' })),
        [p.firstMillisecond!.id],
      );
      assert.deepEqual(ids(expected(all, { status: 'reversed', from: '2026-03-10', to: '2026-03-10' })), [
        p.reversed!.id,
      ]);
    });

    it('metadata_key with metadata_value: exactly that string under exactly that key, paged, combined, and in the export', async () => {
      const tenant = await fundedTenant(t);
      const made = {
        first: await pay(tenant.api, 'V99990001', { metadata: { order_id: 'A-1', channel: 'web' } }),
        failed: await pay(tenant.api, 'V99990004', { metadata: { order_id: 'A-1' } }),
        second: await pay(tenant.api, 'V99990001', { metadata: { order_id: 'A-1' } }),
        otherCase: await pay(tenant.api, 'V99990001', { metadata: { order_id: 'a-1' } }),
        prefix: await pay(tenant.api, 'V99990001', { metadata: { order_id: 'A-10' } }),
        otherKey: await pay(tenant.api, 'V99990001', { metadata: { invoice: 'A-1' } }),
        quoted: await pay(tenant.api, 'V99990001', { metadata: { note: 'dijo "sí", luego\\ ñ' } }),
        without: await pay(tenant.api, 'V99990001'),
      };
      const tenantRows = await readAll(tenant.api, '', 100);
      const want = (ofIds: string[]) => tenantRows.filter((r) => ofIds.includes(r.id)).map((r) => r.id);
      const cases: Array<[Record<string, string>, string[]]> = [
        [{ metadata_key: 'order_id', metadata_value: 'A-1' }, [made.first.id, made.failed.id, made.second.id]],
        [{ metadata_key: 'order_id', metadata_value: 'A-1', status: 'settled' }, [made.first.id, made.second.id]],
        [{ metadata_key: 'order_id', metadata_value: 'A-1', from: '2026-03-01' }, [made.first.id, made.second.id]],
        [{ metadata_key: 'channel', metadata_value: 'web' }, [made.first.id]],
        [{ metadata_key: 'invoice', metadata_value: 'A-1' }, [made.otherKey.id]],
        [{ metadata_key: 'note', metadata_value: 'dijo "sí", luego\\ ñ' }, [made.quoted.id]],
        [{ metadata_key: 'order_id', metadata_value: 'A' }, []],
        [{ metadata_key: 'order_id', metadata_value: '' }, []],
        [{ metadata_key: 'missing', metadata_value: 'A-1' }, []],
      ];
      for (const [f, expectedIds] of cases) {
        for (const limit of [1, 2, 100]) {
          assert.deepEqual(
            ids(await readAll(tenant.api, queryString(f), limit)),
            want(expectedIds),
            `${queryString(f)} limit ${limit}`,
          );
        }
        const exported = exportedRows(await tenant.api.get(`/v1/payments/export?${queryString(f)}`));
        assert.deepEqual(ids(exported), want(expectedIds), `export ${queryString(f)}`);
      }
      assert.deepEqual(
        ids(await readAll(main.api, 'metadata_key=order_id&metadata_value=A-1', 100)),
        [],
        'another tenant sees none of them',
      );
    });
  });

  describe('pagination', () => {
    it('pages have no gap and no duplicate while payouts are created between (and during) page reads', async () => {
      const tenant = await fundedTenant(t);
      for (let i = 0; i < 23; i += 1) {
        clock.advance(1000);
        await pay(tenant.api, i % 3 === 0 ? 'V99990001' : 'V30000002');
      }
      const before = await readAll(tenant.api, '', 100);
      assert.equal(before.length, 23);
      const seen: Row[] = [];
      const created: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 20; pages += 1) {
        clock.advance(1000);
        const url: string = `/v1/payments?limit=4${cursor ? `&cursor=${cursor}` : ''}`;
        const [page, ...made] = await Promise.all([
          tenant.api.get(url),
          payout(tenant.api, { beneficiary: beneficiary('V99990001') }),
          payout(tenant.api, { beneficiary: beneficiary('V30000002') }),
        ]);
        for (const m of made) created.push(m.body.id);
        assert.equal(page.status, 200, page.raw);
        seen.push(...page.body.data);
        cursor = page.body.next_cursor;
        if (!cursor) break;
      }
      const seenIds = ids(seen);
      assert.equal(new Set(seenIds).size, seenIds.length, 'no payment twice');
      // The first page may or may not include the payouts created during its own read; nothing else.
      const old = seenIds.filter((id) => !created.includes(id as string));
      assert.deepEqual(old, ids(before), 'every payment that existed is there once, in order');
      assertOrdered(seen);
    });

    it('payments created in the same millisecond are ordered by id and never skipped or repeated', async () => {
      const tenant = await fundedTenant(t);
      clock.advance(1000);
      for (let i = 0; i < 11; i += 1) await pay(tenant.api, 'V30000003');
      const before = await readAll(tenant.api, '', 100);
      assert.equal(new Set(before.map((r) => r.created_at)).size, 1, 'all in one millisecond');
      const seen: Row[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 20; pages += 1) {
        const page: InjectResult = await tenant.api.get(`/v1/payments?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...page.body.data);
        // Another payout in the same millisecond: it sorts anywhere by id, so it may show up later.
        await pay(tenant.api, 'V30000003');
        cursor = page.body.next_cursor;
        if (!cursor) break;
      }
      const seenIds = ids(seen);
      assert.equal(new Set(seenIds).size, seenIds.length, 'no payment twice');
      for (const row of before) assert.ok(seenIds.includes(row.id), `${row.id} was not skipped`);
      assertOrdered(seen);
    });

    it('a from/to statement pages without gaps while payouts settle on the same day', async () => {
      const tenant = await fundedTenant(t);
      clock.set('2026-03-11T14:00:00Z');
      for (let i = 0; i < 9; i += 1) {
        clock.advance(1000);
        await pay(tenant.api, 'V99990001');
      }
      const before = await readAll(tenant.api, 'from=2026-03-11&to=2026-03-11', 100);
      assert.equal(before.length, 9);
      const seen: Row[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 20; pages += 1) {
        clock.advance(1000);
        const page: InjectResult = await tenant.api.get(
          `/v1/payments?from=2026-03-11&to=2026-03-11&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        );
        seen.push(...page.body.data);
        await pay(tenant.api, 'V99990001');
        cursor = page.body.next_cursor;
        if (!cursor) break;
      }
      assert.deepEqual(ids(seen), ids(before));
    });
  });

  describe('a statement across many days (direct inserts: 2,600 payments over five days, settlement lags up to 26 h)', () => {
    let bulk: { tenantId: string; api: Client };
    let bulkAll: Row[];

    before(async () => {
      bulk = await createTenant(t);
      // Pairs of payments share a creation instant to the microsecond; every 13th settles 26 hours
      // after creation, the others within 10 minutes, so settlement days and creation days interleave.
      await t.db.query(
        `INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, status, status_reason, source_asset,
           source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, compensated, bank_reference,
           beneficiary, settled_at, created_at, updated_at)
         SELECT $1::uuid, 'test', md5('payment-' || $1::text || n)::uuid,
           CASE WHEN n % 3 = 0 THEN NULL ELSE md5('customer-' || (n % 25))::uuid END,
           md5('beneficiary-' || (n % 40))::uuid,
           s.status, CASE WHEN s.status = 'failed' THEN 'rail_rejected' END,
           'BS', 1010000, 'BS', 1000000, CASE WHEN s.status = 'failed' THEN 0 ELSE 10000 END,
           'pago_movil', 'pago_movil', s.status = 'failed',
           CASE WHEN s.status IN ('settled', 'reversed') THEN lpad(n::text, 12, '0') END,
           '{"fullName":"Bulk","nationalId":"V1","bankCode":"0102","instrument":"pago_movil"}'::jsonb,
           CASE WHEN s.status IN ('settled', 'reversed') THEN c.created_at + CASE WHEN n % 13 = 0 THEN interval '26 hours' ELSE ((n * 37) % 600) * interval '1 second' END END,
           c.created_at, c.created_at
         FROM generate_series(0, 2599) AS n
         CROSS JOIN LATERAL (SELECT timestamptz '2026-04-01 02:00:00.123456Z' + (n / 2) * interval '300 seconds' AS created_at) c
         CROSS JOIN LATERAL (SELECT CASE n % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'submitted' WHEN 2 THEN 'reversed' ELSE 'settled' END AS status) s`,
        [bulk.tenantId],
      );
      bulkAll = await readAll(bulk.api, '', 100);
      assert.equal(bulkAll.length, 2600);
      assertOrdered(bulkAll);
    });

    it('every range, page size and combination equals the plain definition', async () => {
      const cases: Array<Record<string, string>> = [
        { from: '2026-04-02', to: '2026-04-02' },
        { from: '2026-03-31', to: '2026-04-03' },
        { from: '2026-04-03' },
        { to: '2026-04-02' },
        { from: '2026-04-01', to: '2026-04-06', status: 'reversed' },
        { from: '2026-04-02', to: '2026-04-04', status: 'settled' },
        { from: '2026-04-02', to: '2026-04-03', customerId: md5Uuid('customer-7') },
        { from: '2026-04-01', beneficiaryId: md5Uuid('beneficiary-3') },
        { status: 'submitted' },
        { beneficiaryId: md5Uuid('beneficiary-11') },
      ];
      for (const f of cases) {
        const want = ids(expected(bulkAll, f));
        assert.ok(want.length > 0, `${queryString(f)} selects something`);
        for (const limit of [7, 100]) {
          assert.deepEqual(
            ids(await readAll(bulk.api, queryString(f), limit)),
            want,
            `${queryString(f)} limit ${limit}`,
          );
        }
      }
    });

    it('the export streams every row in the order of the pages, across batches of 1000', async () => {
      for (const f of [
        {},
        { from: '2026-04-01', to: '2026-04-06' },
        { from: '2026-04-02', to: '2026-04-03', status: 'settled' },
      ] as Array<Record<string, string>>) {
        const qs = queryString(f);
        const exported = exportedRows(await bulk.api.get(`/v1/payments/export${qs ? `?${qs}` : ''}`));
        assert.deepEqual(exported, await readAll(bulk.api, qs, 100), qs);
        assert.deepEqual(ids(exported), ids(expected(bulkAll, f)));
      }
      assert.ok(expected(bulkAll, { from: '2026-04-01', to: '2026-04-06' }).length > 1000, 'more than one batch');
    });

    it('the export reads one batch per demand: nothing is read ahead of the consumer', async () => {
      let queries = 0;
      const counting: Database = new Proxy(t.db, {
        get(target, prop, receiver) {
          if (prop === 'query')
            return (sql: string, params?: readonly unknown[]) => {
              queries += 1;
              return (target as Queryable).query(sql, params);
            };
          return Reflect.get(target, prop, receiver);
        },
      });
      const service = new StatementService(counting);
      const partition = { tenantId: bulk.tenantId, mode: 'test' as const };
      const batches = service.exportBatches(partition, statementFilter({ from: '2026-04-01', to: '2026-04-06' }), 100);
      const first = (await batches.next()).value as Row[];
      assert.equal(first.length, 100);
      const afterFirst = queries;
      assert.ok(afterFirst <= 2, `one batch is one page read (${afterFirst} queries)`);
      // A read-ahead would start as soon as the first batch is handed over: a turn of the event loop
      // (every callback already due, I/O included) is enough to see it.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(queries, afterFirst, 'nothing more is read until asked');
      const second = (await batches.next()).value as Row[];
      assert.equal(second.length, 100);
      await batches.return(undefined);
      const plain = await readAll(bulk.api, 'from=2026-04-01&to=2026-04-06', 100);
      assert.deepEqual(ids([...first, ...second]), ids(plain.slice(0, 200)));
    });
  });

  describe('export', () => {
    it('is CSV with the statement columns, equal to the paged rows, as an attachment named after the range', async () => {
      for (const [qs, name] of [
        ['', 'payments-all-all.csv'],
        ['from=2026-03-09&to=2026-03-10', 'payments-2026-03-09-2026-03-10.csv'],
        ['from=2026-03-10', 'payments-2026-03-10-all.csv'],
        ['status=failed', 'payments-all-all.csv'],
        [`customerId=${CUSTOMER_2}&to=2026-03-09`, 'payments-all-2026-03-09.csv'],
      ] as const) {
        const response = await main.api.get(`/v1/payments/export${qs ? `?${qs}` : ''}`);
        assert.equal(response.status, 200, response.raw);
        assert.equal(response.headers['content-type'], 'text/csv; charset=utf-8');
        assert.equal(response.headers['content-disposition'], `attachment; filename="${name}"`);
        assert.equal(response.headers['x-request-id'] !== undefined, true);
        assert.deepEqual(exportedRows(response), await readAll(main.api, qs, 2), qs);
      }
    });

    it('has only the header row when nothing matches', async () => {
      const response = await main.api.get('/v1/payments/export?from=2030-01-01');
      assert.equal(response.raw, `${ROW_KEYS.join(',')}\r\n`);
    });

    it('quotes fields as RFC 4180 requires', async () => {
      const tenant = await fundedTenant(t);
      const made = await pay(tenant.api, 'V99990004');
      const reason = 'rail said: "no", then,\r\nnothing';
      await t.db.query(`UPDATE payments SET status_reason = $2 WHERE tenant_id = $1 AND id = $3`, [
        tenant.tenantId,
        reason,
        made.id,
      ]);
      const response = await tenant.api.get('/v1/payments/export');
      assert.ok(response.raw.includes('"rail said: ""no"", then,\r\nnothing"'), response.raw);
      const [row] = exportedRows(response);
      assert.equal(row!.status_reason, reason);
      assert.equal(row!.fee_amount, '0');
    });

    it('writes metadata as its JSON text, quoted as RFC 4180 requires; {} for a payout without', async () => {
      const tenant = await fundedTenant(t);
      const metadata = {
        order_id: 'A-1',
        note: 'said "hola", then,\r\nleft',
        'llave, rara': '=SUM(A1)',
        emoji: 'ñ 🇻🇪',
      };
      const withMetadata = await pay(tenant.api, 'V99990004', { metadata });
      const without = await pay(tenant.api, 'V99990005');
      const response = await tenant.api.get('/v1/payments/export');
      const lines = response.raw.split('\r\n');
      assert.equal(lines.length, 4, 'JSON escapes line breaks: one line per payment');
      assert.ok(
        lines.some((line) => line.endsWith(',{}')),
        response.raw,
      );
      const rows = exportedRows(response);
      assert.deepEqual(rows.find((r) => r.id === withMetadata.id)!.metadata, metadata);
      assert.deepEqual(rows.find((r) => r.id === without.id)!.metadata, {});
      assert.deepEqual(rows, await readAll(tenant.api, '', 10));
    });

    it('is a static route: /v1/payments/{id} still answers for ids and validates them', async () => {
      assert.equal((await main.api.get(`/v1/payments/${p.failed!.id}`)).body.id, p.failed!.id);
      assertEnvelope(assert, await main.api.get(`/v1/payments/${UNKNOWN}`), 404, 'resource_not_found');
      assertEnvelope(assert, await main.api.get('/v1/payments/exports'), 400, 'validation_failed');
    });
  });

  describe('validation: every invalid parameter is 400 validation_failed naming it', () => {
    const validCursor = encodeCursor({ createdAtUs: 1_773_000_000_000_000n, id: UNKNOWN });
    const forged = Buffer.from('k1:123:not-a-uuid').toString('base64url');
    const cases: Array<[string, string[]]> = [
      ['from=2026-02-30', ['from']],
      ['from=2026-02-29', ['from']],
      ['to=2026-13-01', ['to']],
      ['from=20260301', ['from']],
      ['from=2026-3-1', ['from']],
      ['to=yesterday', ['to']],
      ['from=2026-03-01T00:00:00Z', ['from']],
      ['from=1969-12-31', ['from']],
      ['to=9999-12-31', ['to']],
      ['from=2026-03-10&to=2026-03-09', ['from']],
      ['status=paid', ['status']],
      ['status=SETTLED', ['status']],
      ['beneficiaryId=abc', ['beneficiaryId']],
      ['customerId=123', ['customerId']],
      ['from=2026-02-30&status=paid&customerId=x', ['customerId', 'from', 'status']],
      ['metadata_key=order_id', ['metadata_value']],
      ['metadata_value=A-1', ['metadata_key']],
      ['metadata_key=&metadata_value=A-1', ['metadata_key']],
      [`metadata_key=${'k'.repeat(41)}&metadata_value=A-1`, ['metadata_key']],
      [`metadata_key=order_id&metadata_value=${'v'.repeat(501)}`, ['metadata_value']],
    ];
    const pageOnly: Array<[string, string[]]> = [
      ['limit=0', ['limit']],
      ['limit=101', ['limit']],
      ['limit=-1', ['limit']],
      ['limit=1.5', ['limit']],
      ['limit=ten', ['limit']],
      ['cursor=', ['cursor']],
      ['cursor=not%20a%20cursor', ['cursor']],
      [`cursor=${forged}`, ['cursor']],
      [`cursor=${'a'.repeat(201)}`, ['cursor']],
    ];

    function assertInvalid(response: InjectResult, fields: string[], label: string): void {
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.deepEqual(
        response.body.error.meta.errors.map((e: { field: string }) => e.field).sort(),
        fields,
        `${label}: ${response.raw}`,
      );
      for (const e of response.body.error.meta.errors) assert.ok(e.message.length > 0);
    }

    it('on GET /v1/payments', async () => {
      for (const [qs, fields] of [...cases, ...pageOnly])
        assertInvalid(await main.api.get(`/v1/payments?${qs}`), fields, qs);
      assert.equal((await main.api.get(`/v1/payments?cursor=${validCursor}`)).status, 200);
      assert.equal(
        (await main.api.get('/v1/payments?from=2024-02-29&to=2024-02-29')).status,
        200,
        'a leap day is a date',
      );
    });

    it('on GET /v1/payments/export, before anything is streamed', async () => {
      for (const [qs, fields] of cases) {
        const response = await main.api.get(`/v1/payments/export?${qs}`);
        assertInvalid(response, fields, qs);
        assert.match(String(response.headers['content-type']), /^application\/json/);
        assert.equal(response.headers['content-disposition'], undefined);
      }
    });
  });

  describe('access', () => {
    it('needs payments:read (403 scope_missing) and a key (401)', async () => {
      const writer = await createTenant(t, { scopes: ['payments:write', 'quotes:write'] });
      const reader = await createTenant(t, { scopes: ['payments:read'] });
      for (const url of ['/v1/payments', '/v1/payments/export', '/v1/payments?from=2026-03-09']) {
        const denied = await writer.api.get(url);
        assertEnvelope(assert, denied, 403, 'scope_missing');
        assert.deepEqual(denied.body.error.meta.required, ['payments:read']);
        assertEnvelope(assert, await client(t.app).get(url), 401, 'api_key_missing');
        assert.equal((await reader.api.get(url)).status, 200);
      }
      // Authentication comes before validation: a bad query without the scope is still 403.
      assertEnvelope(assert, await writer.api.get('/v1/payments?limit=0'), 403, 'scope_missing');
    });

    it('is isolated by tenant and by mode', async () => {
      const other = await fundedTenant(t);
      const theirs = await pay(other.api, 'V99990001');
      const otherRows = await readAll(other.api, '', 100);
      assert.deepEqual(ids(otherRows), [theirs.id]);
      assert.ok(!ids(await readAll(main.api, '', 100)).includes(theirs.id));
      assert.deepEqual(ids(exportedRows(await other.api.get('/v1/payments/export'))), [theirs.id]);

      const admin = client(t.app, t.platformKey);
      const liveKey = await admin.post(`/v1/admin/tenants/${main.tenantId}/api-keys`, { mode: 'live' });
      const live = client(t.app, liveKey.body.key);
      assert.deepEqual(await readAll(live, '', 100), [], 'test payments are not on the live statement');
      assert.deepEqual(exportedRows(await live.get('/v1/payments/export')), []);
      await admin.post(
        `/v1/admin/tenants/${main.tenantId}/fundings`,
        { mode: 'live', asset: 'BS', amount: 10_000_000 },
        { 'idempotency-key': `live-${main.tenantId}` },
      );
      const livePayout = await payout(live, { beneficiary: beneficiary('V30000009'), sender: SENDER });
      assert.equal(livePayout.status, 201, livePayout.raw);
      assert.deepEqual(ids(await readAll(live, '', 100)), [livePayout.body.id]);
      assert.ok(
        !ids(await readAll(main.api, '', 100)).includes(livePayout.body.id),
        'live payments are not on the test statement',
      );
      // A cursor is a position, not a key to someone else's rows.
      const mainFirst = await main.api.get('/v1/payments?limit=1');
      const foreign = await other.api.get(`/v1/payments?cursor=${mainFirst.body.next_cursor}`);
      assert.ok(foreign.body.data.every((r: Row) => r.id === theirs.id));
    });
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = (await client(t.app).get('/v1/openapi.json')).body;
    const list = doc.paths['/v1/payments'].get;
    const exp = doc.paths['/v1/payments/export'].get;
    assert.equal(list.operationId, 'listPayments');
    assert.equal(exp.operationId, 'exportPayments');
    assert.deepEqual(list.tags, ['Payments']);
    assert.deepEqual(exp.tags, ['Payments']);
    assert.deepEqual(list.parameters.map((q: { name: string }) => q.name).sort(), [
      'batchId',
      'beneficiaryId',
      'createdBefore',
      'createdFrom',
      'cursor',
      'customerId',
      'from',
      'limit',
      'metadata_key',
      'metadata_value',
      'status',
      'to',
    ]);
    assert.deepEqual(exp.parameters.map((q: { name: string }) => q.name).sort(), [
      'batchId',
      'beneficiaryId',
      'createdBefore',
      'createdFrom',
      'customerId',
      'from',
      'metadata_key',
      'metadata_value',
      'status',
      'to',
    ]);
    assert.equal(list.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/StatementPage');
    assert.equal(exp.responses['200'].content['text/csv'].schema.type, 'string');
    for (const op of [list, exp]) {
      for (const status of ['400', '401', '403', '429', '500']) {
        const ref: string | undefined = op.responses[status].$ref;
        const response = ref
          ? doc.components.responses[ref.replace('#/components/responses/', '')]
          : op.responses[status];
        assert.equal(
          response.content['application/json'].schema.allOf[0].$ref,
          '#/components/schemas/ErrorEnvelope',
          status,
        );
      }
    }
  });
});

function md5Uuid(text: string): string {
  // md5(text)::uuid in PostgreSQL: the 32 hex digits grouped 8-4-4-4-12.
  const hex = createHash('md5').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
