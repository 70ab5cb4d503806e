import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { ManualClock } from '../support/clock.ts';
import type { RailLookup, RailStatus, RailTransfer } from '../../src/rails/rail.ts';
import {
  queueSandboxNotification,
  recordSimulation,
  SANDBOX_NOTICES_PENDING_MAX,
  SandboxRail,
} from '../../src/rails/sandbox-rail.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';

const T0 = '2025-03-10T15:00:00.000Z';
const SETTLE = 3_000;
const REVERSE = 10_000;
/** The most a call the rail ends quickly (an abort, a known reference) may take on a loaded machine; a hang never ends. */
const BUSY_MACHINE_BOUND_MS = 5_000;

function transfer(nationalId: string, overrides: Partial<RailTransfer> = {}): RailTransfer {
  return {
    reference: randomUUID(),
    tenantId: '6f1c2a4e-1111-4c2b-9d3e-000000000001',
    mode: 'test',
    instrument: 'pago_movil',
    amountMinor: 125_000n,
    asset: 'BS',
    beneficiary: {
      fullName: 'María Pérez',
      nationalId,
      bankCode: '0102',
      accountNumber: null,
      phone: '04141234567',
    },
    sender: {
      nationalId: 'V12345678',
      nationality: 'VEN',
      firstName: 'José',
      lastName: 'García',
      phone: '+584141112233',
      email: 'jose@example.com',
    },
    ...overrides,
  };
}

const never = () => new AbortController().signal;

function setup(db: () => Database, options: { hangMs?: number } = {}) {
  const clock = new ManualClock(T0);
  const rail = new SandboxRail(db(), clock, { settleDelayMs: SETTLE, reverseDelayMs: REVERSE, ...options });
  return { clock, rail };
}

function assertSettled(status: RailStatus | RailLookup, settledAt: string): string {
  assert.equal(status.status, 'settled', JSON.stringify(status));
  if (status.status !== 'settled') throw new Error('unreachable');
  assert.match(status.bankReference, /^[0-9]{12}$/);
  assert.equal(status.settledAt.toISOString(), settledAt);
  return status.bankReference;
}

const at = (ms: number) => new Date(new Date(T0).getTime() + ms).toISOString();

describe(`sandbox rail on ${ENGINE}`, () => {
  let database: TestDatabase;
  const db = () => database.db;
  before(async () => {
    database = await createTestDatabase();
    await migrate(database.db);
  });
  after(async () => {
    await database.drop();
  });

  async function rowCount(reference: string): Promise<number> {
    const { rows } = await db().query<{ n: bigint }>(
      'SELECT count(*)::bigint AS n FROM sandbox_rail_transfers WHERE reference = $1',
      [reference],
    );
    return Number(rows[0]!.n);
  }

  it('any other national id: processing, then settled once the settle delay has passed', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V12345678');
    assert.deepEqual(await rail.submit(t, never()), { status: 'processing', retryAfterMs: SETTLE });
    clock.advance(SETTLE - 1);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'processing', retryAfterMs: 1 });
    clock.advance(1);
    const bankReference = assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE));
    clock.advance(REVERSE * 10);
    assert.equal(
      assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE)),
      bankReference,
      'generated once, stored',
    );
  });

  it('lookupMany answers each reference in order, as lookup would, in one call', async () => {
    const { clock, rail } = setup(db);
    const settling = transfer('V12345678');
    const failing = transfer('V99990006');
    await rail.submit(settling, never());
    await rail.submit(failing, never());
    const unknown = randomUUID();
    const references = [failing.reference, unknown, settling.reference, 'not-a-uuid', settling.reference];
    clock.advance(SETTLE);
    const answers = await rail.lookupMany(references, 'test');
    assert.equal(answers.length, references.length);
    for (const [i, reference] of references.entries())
      assert.deepEqual(answers[i], await rail.lookup(reference, 'test'), reference);
    assert.deepEqual(answers[0], { status: 'failed', reason: 'invalid_destination_account' });
    assert.deepEqual(answers[1], { status: 'not_found' });
    assertSettled(answers[2]!, at(SETTLE));
    assert.deepEqual(answers[3], { status: 'not_found' });
    assert.deepEqual(
      await rail.lookupMany([settling.reference], 'live'),
      [{ status: 'not_found' }],
      'a test transfer is not found in live mode',
    );
    assert.deepEqual(await rail.lookupMany([], 'test'), []);
  });

  it('V99990001 settles at once with a bank reference', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990001');
    const bankReference = assertSettled(await rail.submit(t, never()), T0);
    assert.equal(assertSettled(await rail.lookup(t.reference, 'test'), T0), bankReference);
    clock.advance(SETTLE + REVERSE);
    assert.equal(assertSettled(await rail.lookup(t.reference, 'test'), T0), bankReference);
  });

  it('V99990002 answers unconfirmed, then reads settled', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990002');
    assert.deepEqual(await rail.submit(t, never()), { status: 'unconfirmed', retryAfterMs: SETTLE });
    clock.advance(1_000);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'unconfirmed', retryAfterMs: SETTLE - 1_000 });
    clock.advance(SETTLE);
    assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE));
  });

  it('V99990003 answers unconfirmed, then reads failed with rail_rejected', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990003');
    assert.deepEqual(await rail.submit(t, never()), { status: 'unconfirmed', retryAfterMs: SETTLE });
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'unconfirmed', retryAfterMs: SETTLE });
    clock.advance(SETTLE);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'failed', reason: 'rail_rejected' });
  });

  for (const [nationalId, reason] of [
    ['V99990004', 'beneficiary_mismatch'],
    ['V99990005', 'bank_unreachable'],
  ] as const) {
    it(`${nationalId} fails at once with ${reason}, and stays failed`, async () => {
      const { clock, rail } = setup(db);
      const t = transfer(nationalId);
      assert.deepEqual(await rail.submit(t, never()), { status: 'failed', reason });
      assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'failed', reason });
      clock.advance(SETTLE + REVERSE);
      assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'failed', reason });
      assert.equal(await rowCount(t.reference), 1, 'a rejected transfer is still one the rail received');
    });
  }

  it('V99990006 answers processing, then reads failed with invalid_destination_account', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990006');
    assert.deepEqual(await rail.submit(t, never()), { status: 'processing', retryAfterMs: SETTLE });
    clock.advance(SETTLE - 1);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'processing', retryAfterMs: 1 });
    clock.advance(1);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), {
      status: 'failed',
      reason: 'invalid_destination_account',
    });
  });

  it('V99990007 answers processing, settles, then reads reversed after the reverse delay', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990007');
    assert.deepEqual(await rail.submit(t, never()), { status: 'processing', retryAfterMs: SETTLE });
    clock.advance(SETTLE);
    const bankReference = assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE));
    clock.advance(REVERSE - 1);
    assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE));
    clock.advance(1);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), {
      status: 'reversed',
      bankReference,
      reason: 'returned_by_bank',
    });
    const mine = (await rail.pendingNotifications(1_000)).filter((n) => n.reference === t.reference);
    assert.equal(mine.length, 1);
    assert.deepEqual(
      [mine[0]!.tenantId, mine[0]!.mode],
      [t.tenantId, 'test'],
      'the return names whose transfer it was, as it was sent',
    );
    assert.deepEqual(
      mine[0],
      { ...mine[0]!, kind: 'reversed', bankReference, amountMinor: t.amountMinor },
      'and which settlement of how much it returns',
    );
    await rail.acknowledgeNotification(mine[0]!.id);
    assert.deepEqual(
      await rail.lookup(t.reference, 'test'),
      { status: 'reversed', bankReference, reason: 'returned_by_bank' },
      'acknowledging the notification does not change the transfer',
    );
  });

  it('V99990008 makes exactly the requested instrument unavailable, then pays normally', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990008', { instrument: 'transferencia' });
    const b = { ...t.beneficiary, accountNumber: '01020000000000000001' };
    assert.equal(await rail.instrumentAvailable(b, 'pago_movil', 'pago_movil'), false);
    assert.equal(await rail.instrumentAvailable(b, 'transferencia', 'pago_movil'), true);
    assert.equal(await rail.instrumentAvailable(b, 'transferencia', 'transferencia'), false);
    assert.equal(await rail.instrumentAvailable(b, 'pago_movil', 'transferencia'), true);
    // Delivered through the other instrument: an ordinary transfer.
    assert.deepEqual(await rail.submit({ ...t, beneficiary: b }, never()), {
      status: 'processing',
      retryAfterMs: SETTLE,
    });
    clock.advance(SETTLE);
    assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE));
  });

  it('a normal national id has every instrument available', async () => {
    const { rail } = setup(db);
    const b = transfer('V12345678').beneficiary;
    for (const instrument of ['pago_movil', 'transferencia'] as const) {
      for (const requested of ['pago_movil', 'transferencia'] as const) {
        assert.equal(await rail.instrumentAvailable(b, instrument, requested), true, `${instrument} / ${requested}`);
      }
    }
  });

  it('V99990009 records the transfer and hangs until the caller aborts; a resubmit answers promptly', async () => {
    const { clock, rail } = setup(db, { hangMs: 30_000 });
    const t = transfer('V99990009');
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('rail timeout')), 200);
    const started = performance.now();
    try {
      await assert.rejects(rail.submit(t, controller.signal), /rail timeout/);
    } finally {
      clearTimeout(timer);
    }
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 180 && elapsed < BUSY_MACHINE_BOUND_MS, `hung for ${elapsed} ms, expected about 200 ms`);

    // The rail received it although the caller never got an answer: the reaper finds it by reference.
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'processing', retryAfterMs: SETTLE });
    const resubmitStarted = performance.now();
    assert.deepEqual(await rail.submit(t, never()), { status: 'processing', retryAfterMs: SETTLE });
    assert.ok(performance.now() - resubmitStarted < BUSY_MACHINE_BOUND_MS, 'a known reference does not hang again');
    assert.equal(await rowCount(t.reference), 1);
    clock.advance(SETTLE);
    assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE));
  });

  it('V99990009 hangs at most hangMs when nobody aborts, and never sends an already aborted call', async () => {
    const { rail } = setup(db, { hangMs: 150 });
    const t = transfer('V99990009');
    const started = performance.now();
    assert.deepEqual(await rail.submit(t, never()), { status: 'processing', retryAfterMs: SETTLE });
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 130 && elapsed < 2_000, `hung for ${elapsed} ms, expected about 150 ms`);

    const late = transfer('V12345678');
    await assert.rejects(rail.submit(late, AbortSignal.abort(new Error('gave up'))), /gave up/);
    assert.deepEqual(await rail.lookup(late.reference, 'test'), { status: 'not_found' });
  });

  it('submit is idempotent by reference: one transfer, the current status, the same bank reference', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V12345678');
    const [a, b] = await Promise.all([rail.submit(t, never()), rail.submit(t, never())]);
    assert.deepEqual(a, { status: 'processing', retryAfterMs: SETTLE });
    assert.deepEqual(b, a);
    assert.equal(await rowCount(t.reference), 1);
    clock.advance(1_000);
    assert.deepEqual(
      await rail.submit(t, never()),
      { status: 'processing', retryAfterMs: SETTLE - 1_000 },
      'the schedule is not restarted',
    );
    clock.advance(SETTLE);
    const bankReference = assertSettled(await rail.submit(t, never()), at(SETTLE));
    assert.equal(assertSettled(await rail.lookup(t.reference, 'test'), at(SETTLE)), bankReference);

    const once = transfer('V99990001');
    const first = await rail.submit(once, never());
    assert.deepEqual(await rail.submit(once, never()), first);
    assert.equal(await rowCount(once.reference), 1);
  });

  it('refuses to reuse a reference for a different transfer', async () => {
    const { rail } = setup(db);
    const t = transfer('V12345678');
    await rail.submit(t, never());
    await assert.rejects(rail.submit({ ...t, amountMinor: t.amountMinor + 1n }, never()), /different transfer/);
    await assert.rejects(rail.submit({ ...t, mode: 'live' }, never()), /different transfer/);
    assert.equal(await rowCount(t.reference), 1);
  });

  it('lookup answers not_found for a reference it never received, and scopes by mode', async () => {
    const { rail } = setup(db);
    assert.deepEqual(await rail.lookup(randomUUID(), 'test'), { status: 'not_found' });
    assert.deepEqual(await rail.lookup('not-a-payment-id', 'test'), { status: 'not_found' });
    const t = transfer('V12345678');
    await rail.submit(t, never());
    assert.deepEqual(await rail.lookup(t.reference, 'live'), { status: 'not_found' });
    assert.equal((await rail.lookup(t.reference, 'test')).status, 'processing');
  });

  it('stores amounts as exact bigints and everything a provider would know', async () => {
    const { rail } = setup(db);
    const t = transfer('V12345678', { amountMinor: 9_007_199_254_740_993n, instrument: 'transferencia' });
    await rail.submit(t, never());
    const { rows } = await db().query<Record<string, unknown>>(
      'SELECT mode, tenant_id, instrument, amount_minor, national_id, bank_code, scenario, received_at, settle_at FROM sandbox_rail_transfers WHERE reference = $1',
      [t.reference],
    );
    assert.deepEqual(rows[0], {
      mode: 'test',
      tenant_id: t.tenantId,
      instrument: 'transferencia',
      amount_minor: 9_007_199_254_740_993n,
      national_id: 'V12345678',
      bank_code: '0102',
      scenario: 'default',
      received_at: new Date(T0),
      settle_at: new Date(at(SETTLE)),
    });
  });

  it('with a settle delay of 0, answers the send as with any delay (pending unless decided at receipt); a lookup then reads the outcome', async () => {
    const clock = new ManualClock(T0);
    const rail = new SandboxRail(db(), clock, { settleDelayMs: 0, reverseDelayMs: REVERSE });
    const cases: Array<[string, RailStatus['status'], RailLookup['status']]> = [
      ['V12345678', 'processing', 'settled'],
      ['V99990001', 'settled', 'settled'],
      ['V99990002', 'unconfirmed', 'settled'],
      ['V99990003', 'unconfirmed', 'failed'],
      ['V99990004', 'failed', 'failed'],
      ['V99990005', 'failed', 'failed'],
      ['V99990006', 'processing', 'failed'],
      ['V99990007', 'processing', 'settled'],
    ];
    for (const [nationalId, answered, after] of cases) {
      const t = transfer(nationalId);
      const sent = await rail.submit(t, never());
      assert.equal(sent.status, answered, `${nationalId} answered ${JSON.stringify(sent)}`);
      if (sent.status === 'processing' || sent.status === 'unconfirmed') assert.equal(sent.retryAfterMs, 0);
      assert.equal((await rail.lookup(t.reference, 'test')).status, after, nationalId);
      // A resubmission answers with the transfer as it stands.
      assert.equal((await rail.submit(t, never())).status, after, `${nationalId} resubmitted`);
    }
  });
});

describe(`sandbox rail: a simulated outcome replaces the schedule, on ${ENGINE}`, () => {
  let database: TestDatabase;
  const db = () => database.db;
  before(async () => {
    database = await createTestDatabase();
    await migrate(database.db);
  });
  after(async () => {
    await database.drop();
  });

  const record = (t: RailTransfer, outcome: Parameters<typeof recordSimulation>[2], at: Date) =>
    db().transaction((tx) => recordSimulation(tx, t, outcome, at));

  it('settled: a V99990007 transfer settles now and is never returned; a resubmission answers settled', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990007');
    await rail.submit(t, never());
    clock.advance(1_000);
    await record(t, { status: 'settled', bankReference: '000000000042' }, clock.now());
    const settled = { status: 'settled', bankReference: '000000000042', settledAt: new Date(at(1_000)) };
    assert.deepEqual(await rail.lookup(t.reference, 'test'), settled);
    assert.deepEqual(await rail.submit(t, never()), settled);
    clock.advance(SETTLE + REVERSE + 60_000);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), settled);
    assert.deepEqual(
      (await rail.pendingNotifications(1_000)).filter((n) => n.reference === t.reference),
      [],
    );
  });

  it('failed: a default transfer fails now and never settles', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V12345678');
    await rail.submit(t, never());
    await record(t, { status: 'failed', reason: 'bank_unreachable' }, clock.now());
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'failed', reason: 'bank_unreachable' });
    clock.advance(SETTLE + REVERSE);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), { status: 'failed', reason: 'bank_unreachable' });
  });

  it('reversed: the settlement is kept, the return happens now, already acknowledged', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990001');
    const submitted = await rail.submit(t, never());
    assert.equal(submitted.status, 'settled');
    const bankReference = submitted.status === 'settled' ? submitted.bankReference : '';
    clock.advance(5_000);
    await record(t, { status: 'reversed', bankReference, reason: 'invalid_destination_account' }, clock.now());
    assert.deepEqual(await rail.lookup(t.reference, 'test'), {
      status: 'reversed',
      bankReference,
      reason: 'invalid_destination_account',
    });
    assert.deepEqual(
      (await rail.pendingNotifications(1_000)).filter((n) => n.reference === t.reference),
      [],
    );
    const { rows } = await db().query<{ settled_at: Date; reverse_at: Date }>(
      'SELECT settled_at, reverse_at FROM sandbox_rail_transfers WHERE reference = $1',
      [t.reference],
    );
    assert.deepEqual(rows[0], { settled_at: new Date(T0), reverse_at: new Date(at(5_000)) });
  });

  it('a transfer never received is recorded with the outcome; the late submission finds it and gets that outcome', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V99990006');
    await record(t, { status: 'settled', bankReference: '000000000043' }, clock.now());
    const settled = { status: 'settled', bankReference: '000000000043', settledAt: new Date(T0) };
    assert.deepEqual(await rail.submit(t, never()), settled, 'not the V99990006 schedule');
    clock.advance(SETTLE);
    assert.deepEqual(await rail.lookup(t.reference, 'test'), settled);
    const { rows } = await db().query<{ submissions: number }>(
      'SELECT submissions FROM sandbox_rail_transfers WHERE reference = $1',
      [t.reference],
    );
    assert.deepEqual(rows, [{ submissions: 2 }], 'one transfer: the recorded outcome counts as its first submission');
  });

  it('refuses to rewrite a transfer of another tenant or mode', async () => {
    const { clock, rail } = setup(db);
    const t = transfer('V12345678');
    await rail.submit(t, never());
    await assert.rejects(
      record({ ...t, mode: 'live' }, { status: 'failed', reason: 'rail_rejected' }, clock.now()),
      /another tenant or mode/,
    );
    await assert.rejects(
      record({ ...t, tenantId: randomUUID() }, { status: 'failed', reason: 'rail_rejected' }, clock.now()),
      /another tenant or mode/,
    );
    assert.equal((await rail.lookup(t.reference, 'test')).status, 'processing');
  });
});

describe(`sandbox rail notifications on ${ENGINE}`, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
    await migrate(database.db);
  });
  after(async () => {
    await database.drop();
  });

  it('appear only after the reverse time, oldest first, bounded by limit, and go away once acknowledged', async () => {
    const { clock, rail } = setup(() => database.db);
    const references: string[] = [];
    for (let i = 0; i < 3; i++) {
      const t = transfer('V99990007');
      references.push(t.reference);
      await rail.submit(t, never());
      await rail.submit(transfer('V12345678'), never()); // settles, never reversed
      clock.advance(1_000);
    }
    // Now T0 + 3 s. The first reversal happens at T0 + SETTLE + REVERSE.
    clock.set(at(SETTLE + REVERSE - 1));
    assert.deepEqual(await rail.pendingNotifications(10), []);
    clock.set(at(SETTLE + REVERSE));
    const first = await rail.pendingNotifications(10);
    assert.equal(first.length, 1);
    assert.equal(first[0]!.reference, references[0]);
    assert.equal(first[0]!.kind, 'reversed');
    assert.equal(first[0]!.reason, 'returned_by_bank');
    assert.equal(first[0]!.occurredAt.toISOString(), at(SETTLE + REVERSE));

    clock.set(at(SETTLE + REVERSE + 2_000));
    const all = await rail.pendingNotifications(10);
    assert.deepEqual(
      all.map((n) => n.reference),
      references,
      'oldest first',
    );
    assert.equal(new Set(all.map((n) => n.id)).size, 3);
    assert.deepEqual(await rail.pendingNotifications(2), all.slice(0, 2));
    assert.deepEqual(await rail.pendingNotifications(0), []);
    assert.deepEqual(await rail.pendingNotifications(10), all, 'reading does not consume');

    await rail.acknowledgeNotification(all[0]!.id);
    assert.deepEqual(await rail.pendingNotifications(10), all.slice(1));
    await rail.acknowledgeNotification(all[0]!.id); // a redelivered acknowledgement is harmless
    assert.deepEqual(await rail.pendingNotifications(1), all.slice(1, 2));

    await assert.rejects(rail.acknowledgeNotification('reversed:' + randomUUID()), /unknown notification/);
    await assert.rejects(rail.acknowledgeNotification('nonsense'), /unknown notification/);
  });

  it('notifications a test asked for: handed out with the scheduled returns in time order, acknowledged by id, bounded per tenant', async () => {
    const { clock, rail } = setup(() => database.db);
    clock.set(at(SETTLE + REVERSE + 60_000)); // after every scheduled return of the tests above
    const sender = { tenantId: '6f1c2a4e-2222-4c2b-9d3e-000000000002', mode: 'test' as const };
    const reference = randomUUID();
    const settled = await queueSandboxNotification(
      database.db,
      sender,
      reference,
      { kind: 'settled', bankReference: '000000000042', amountMinor: 5n },
      clock.now(),
    );
    clock.advance(1);
    const failed = await queueSandboxNotification(
      database.db,
      sender,
      reference,
      { kind: 'failed', reason: 'rail_rejected', amountMinor: null },
      clock.now(),
    );
    const queued = (await rail.pendingNotifications(1_000)).filter((n) => n.reference === reference);
    assert.deepEqual(queued, [
      {
        id: settled,
        reference,
        tenantId: sender.tenantId,
        mode: 'test',
        occurredAt: new Date(at(SETTLE + REVERSE + 60_000)),
        amountMinor: 5n,
        kind: 'settled',
        bankReference: '000000000042',
        requestedBy: sender,
      },
      {
        id: failed,
        reference,
        tenantId: sender.tenantId,
        mode: 'test',
        occurredAt: new Date(at(SETTLE + REVERSE + 60_001)),
        kind: 'failed',
        reason: 'rail_rejected',
        requestedBy: sender,
      },
    ]);
    const all = await rail.pendingNotifications(1_000);
    for (let i = 1; i < all.length; i += 1)
      assert.ok(all[i - 1]!.occurredAt <= all[i]!.occurredAt, 'oldest first, returns and notices together');
    await rail.acknowledgeNotification(settled!);
    await rail.acknowledgeNotification(settled!); // a redelivered acknowledgement is harmless
    assert.deepEqual(
      (await rail.pendingNotifications(1_000)).filter((n) => n.reference === reference).map((n) => n.id),
      [failed],
    );
    await assert.rejects(rail.acknowledgeNotification(`notice:${randomUUID()}`), /unknown notification/);
    await rail.acknowledgeNotification(failed!);

    const busy = { tenantId: '6f1c2a4e-3333-4c2b-9d3e-000000000003', mode: 'test' as const };
    for (let i = 0; i < SANDBOX_NOTICES_PENDING_MAX; i += 1) {
      assert.ok(
        await queueSandboxNotification(
          database.db,
          busy,
          randomUUID(),
          { kind: 'failed', reason: 'rail_rejected', amountMinor: null },
          clock.now(),
        ),
      );
    }
    assert.equal(
      await queueSandboxNotification(
        database.db,
        busy,
        randomUUID(),
        { kind: 'failed', reason: 'rail_rejected', amountMinor: null },
        clock.now(),
      ),
      undefined,
      'refused past the bound',
    );
    assert.ok(
      await queueSandboxNotification(
        database.db,
        sender,
        randomUUID(),
        { kind: 'failed', reason: 'rail_rejected', amountMinor: null },
        clock.now(),
      ),
      'another tenant is not',
    );
    for (const n of await rail.pendingNotifications(1_000))
      if (n.id.startsWith('notice:')) await rail.acknowledgeNotification(n.id);
  });

  it('two workers: at-least-once, but nothing is handed out after its acknowledgement', async () => {
    // On PostgreSQL the second worker is a separate pool, as a second process would be.
    const other: Database = database.url ? new PostgresDatabase(database.url, 2) : database.db;
    try {
      const a = setup(() => database.db);
      const b = setup(() => other);
      const t = transfer('V99990007');
      await a.rail.submit(t, never());
      for (const w of [a, b]) w.clock.set(at(SETTLE + REVERSE + 60_000));
      const seen = async (w: typeof a) =>
        (await w.rail.pendingNotifications(100)).filter((n) => n.reference === t.reference);
      const [fromA, fromB] = await Promise.all([seen(a), seen(b)]);
      assert.equal(fromA.length, 1);
      assert.deepEqual(fromB, fromA);
      await Promise.all([a.rail.acknowledgeNotification(fromA[0]!.id), b.rail.acknowledgeNotification(fromB[0]!.id)]);
      assert.deepEqual(await seen(a), []);
      assert.deepEqual(await seen(b), []);
    } finally {
      if (other !== database.db) await other.close();
    }
  });
});

describe(`sandbox rail durability on ${ENGINE}`, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
    await migrate(database.db);
  });
  after(async () => {
    await database.drop();
  });

  it('a new SandboxRail instance (a restart) sees every transfer and its schedule', async () => {
    const first = setup(() => database.db);
    const ids = [
      'V99990001',
      'V99990002',
      'V99990003',
      'V99990004',
      'V99990006',
      'V99990007',
      'V99990009',
      'V12345678',
    ];
    const transfers = ids.map((id) => transfer(id));
    for (const t of transfers) {
      if (t.beneficiary.nationalId === 'V99990009') {
        await assert.rejects(first.rail.submit(t, AbortSignal.timeout(50)));
      } else {
        await first.rail.submit(t, never());
      }
    }
    const statuses = async (rail: SandboxRail) => Promise.all(transfers.map((t) => rail.lookup(t.reference, 'test')));
    const expected = {
      received: await statuses(first.rail),
      settled: [] as RailLookup[],
      reversed: [] as RailLookup[],
    };
    first.clock.set(at(SETTLE));
    expected.settled = await statuses(first.rail);
    first.clock.set(at(SETTLE + REVERSE));
    expected.reversed = await statuses(first.rail);
    const pending = await first.rail.pendingNotifications(10);
    assert.equal(pending.length, 1);

    // The "restarted" process: new pool where there is a server, new instance, and other delays, to
    // show the stored schedule wins over the new configuration.
    const db: Database = database.url ? new PostgresDatabase(database.url, 2) : database.db;
    try {
      const clock = new ManualClock(T0);
      const rail = new SandboxRail(db, clock, { settleDelayMs: 999_999, reverseDelayMs: 999_999 });
      assert.deepEqual(await statuses(rail), expected.received);
      clock.set(at(SETTLE));
      assert.deepEqual(await statuses(rail), expected.settled);
      clock.set(at(SETTLE + REVERSE));
      assert.deepEqual(await statuses(rail), expected.reversed);
      assert.deepEqual(await rail.pendingNotifications(10), pending);

      assert.deepEqual(
        expected.settled.map((s) => s.status),
        ['settled', 'settled', 'failed', 'failed', 'failed', 'settled', 'settled', 'settled'],
      );
      assert.equal(expected.reversed[5]!.status, 'reversed');
    } finally {
      if (db !== database.db) await db.close();
    }
  });
});
