// The SDK's payout batches against the real service (in process, listening on a port, its workers
// running so that the reaper sends the batches' payments): a batch of mixed outcomes and its replay,
// createAll splitting a payroll into batches under derived keys and replaying them all without a
// new payment, resuming after a batch refused mid-way, and waitUntilCompleted reaching `completed`.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  Bolivar,
  BolivarError,
  PayoutBatchesIncompleteError,
  PayoutBatchWaitTimeoutError,
  type FetchLike,
  type PayoutBatch,
  type PayoutBatchItem,
} from '../../sdk/src/index.ts';
import { startWorkers, type RunningWorkers } from '../../src/workers/index.ts';
import { ENGINE, startTestApp, type TestApp } from '../support/harness.ts';

const SENDER = {
  nationalId: 'J123456789',
  firstName: 'Nómina',
  lastName: 'Acme',
  phone: '+584121234567',
  email: 'nomina@example.com',
};
const UNKNOWN_QUOTE = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
/** The payroll createAll splits: three batches of MAX_ITEMS (the shape of 2,500 in batches of 1,000, small enough for PGlite). */
const PAYROLL_ITEMS = 250;
const MAX_ITEMS = 100;
/** Another split of the same payroll. */
const OTHER_MAX_ITEMS = 150;
const WAIT = { timeoutMs: 60_000, intervalMs: 100 };

describe(`the SDK's payout batches against the service, on ${ENGINE}`, () => {
  let t: TestApp;
  let workers: RunningWorkers;
  let client: Bolivar;
  let beneficiaryId: string;
  /** The Idempotency-Key of every POST /v1/payout-batches the client sent, in order. */
  const keysSent: string[] = [];

  const item = (reference: string, fields: Partial<PayoutBatchItem> = {}): PayoutBatchItem => ({
    reference,
    deliver: { asset: 'BS', amount: 100_000n },
    method: 'pago_movil',
    beneficiaryId,
    sender: SENDER,
    ...fields,
  });

  /** The payments a batch created, counted from the statement (`GET /v1/payments?batchId=`). */
  async function paymentsOf(batchId: string): Promise<string[]> {
    return (await client.payments.list({ batchId, limit: 100 }).toArray()).map((row) => row.id);
  }

  before(async () => {
    t = await startTestApp({
      env: { SANDBOX_SETTLE_DELAY_MS: '0', REAPER_INTERVAL_MS: '100', DISPATCHER_INTERVAL_MS: '100' },
    });
    workers = startWorkers(t.services, t.app.log);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const admin = new Bolivar({ apiKey: t.platformKey, baseUrl });
    const tenant = await admin.admin.tenants.create({ name: 'SDK Nómina', feeBps: 100 });
    const key = await admin.admin.keys.issue(tenant.id, { mode: 'test' });
    await admin.admin.tenants.fund(tenant.id, { mode: 'test', asset: 'BS', amount: 10_000_000_000n });
    const recording: FetchLike = (input, init) => {
      const headers = init.headers as Record<string, string>;
      if (init.method === 'POST' && input.endsWith('/v1/payout-batches')) keysSent.push(headers['idempotency-key']!);
      return fetch(input, init);
    };
    client = new Bolivar({ apiKey: key.key, baseUrl, fetch: recording });
    beneficiaryId = (
      await client.beneficiaries.create({
        fullName: 'María Pérez',
        nationalId: 'V12345678',
        bankCode: '0102',
        phone: '04141234567',
      })
    ).id;
  });

  after(async () => {
    await workers?.stop();
    await t?.close();
  });

  it('create: mixed outcomes in item order, replayed by the same key as the same batch; get and list read it', async () => {
    const quote = await client.quotes.create({ deliver: { asset: 'BS', amount: 100_000n } });
    await client.payouts.create({ quoteId: quote.id, method: 'pago_movil', beneficiaryId, sender: SENDER });
    const items = [
      item('mixed-submitted'),
      item('mixed-failed', { deliver: { asset: 'BS', amount: 1_000n } }),
      item('mixed-limit', { deliver: { asset: 'BS', amount: 20_000_000n } }),
      item('mixed-unknown-quote', { deliver: undefined, quoteId: UNKNOWN_QUOTE }),
      item('mixed-consumed-quote', { deliver: undefined, quoteId: quote.id }),
    ];
    const batch = await client.payoutBatches.create(items, { idempotencyKey: 'sdk-mixed' });
    assert.equal(batch.itemCount, 5);
    assert.deepEqual(
      batch.items.map((i) => [
        i.reference,
        i.status === 'submitted' || i.status === 'settled' ? 'paid' : i.status,
        i.reason,
        i.error?.code ?? null,
      ]),
      [
        ['mixed-submitted', 'paid', null, null],
        ['mixed-failed', 'failed', 'amount_below_rail_minimum', null],
        ['mixed-limit', 'refused', null, 'limit_exceeded'],
        ['mixed-unknown-quote', 'refused', null, 'resource_not_found'],
        ['mixed-consumed-quote', 'refused', null, 'quote_already_consumed'],
      ],
    );
    assert.equal(batch.counts.refused, 3);
    assert.equal(
      batch.totals.refused,
      '20100000',
      "the refused items that had an amount: 20,000,000 + the consumed quote's 100,000",
    );

    const replay = await client.payoutBatches.create(items, { idempotencyKey: 'sdk-mixed' });
    assert.equal(replay.id, batch.id);
    assert.deepEqual(
      replay.items.map((i) => i.paymentId),
      batch.items.map((i) => i.paymentId),
    );
    assert.equal((await paymentsOf(batch.id)).length, 2, 'the paid and the failed item: nothing more after the replay');

    const reused = await client.payoutBatches
      .create(items.slice(0, 1), { idempotencyKey: 'sdk-mixed' })
      .catch((e: unknown) => e);
    assert.ok(reused instanceof BolivarError && reused.code === 'idempotency_key_reused', String(reused));

    assert.equal((await client.payoutBatches.get(batch.id)).id, batch.id);
    const listed = await client.payoutBatches.list({ limit: 1 }).toArray();
    assert.ok(listed.some((b) => b.id === batch.id));
    assert.ok(!('items' in listed[0]!), 'a listed batch has no items');

    const done = await client.payoutBatches.waitUntilCompleted(batch.id, WAIT);
    assert.equal(done.status, 'completed');
    assert.ok(done.completedAt !== null && Date.parse(done.completedAt) >= Date.parse(done.createdAt));
    assert.deepEqual(
      [done.counts.settled, done.counts.failed, done.counts.refused, done.counts.submitted],
      [1, 1, 3, 0],
    );
  });

  it('create refuses to send without an idempotencyKey', async () => {
    await assert.rejects(() => client.payoutBatches.create([item('no-key')], undefined as never), TypeError);
    await assert.rejects(() => client.payoutBatches.createAll([item('no-key')], {} as never), TypeError);
  });

  it(`createAll: ${PAYROLL_ITEMS} items in batches of ${MAX_ITEMS} under k:0, k:1, k:2; a re-run replays them all, paying nothing new`, async () => {
    const payroll = Array.from({ length: PAYROLL_ITEMS }, (_, i) => item(`payroll-${i}`));
    keysSent.length = 0;
    const batches = await client.payoutBatches.createAll(payroll, {
      idempotencyKey: 'payroll-nov',
      maxItems: MAX_ITEMS,
    });
    assert.deepEqual(keysSent, ['payroll-nov:0', 'payroll-nov:1', 'payroll-nov:2']);
    assert.deepEqual(
      batches.map((b) => b.itemCount),
      [100, 100, 50],
    );
    assert.deepEqual(
      batches.map((b) => b.items[0]!.reference),
      ['payroll-0', 'payroll-100', 'payroll-200'],
    );
    const paid = await Promise.all(batches.map((b) => paymentsOf(b.id)));
    assert.deepEqual(
      paid.map((ids) => ids.length),
      [100, 100, 50],
    );

    const again = await client.payoutBatches.createAll(payroll, { idempotencyKey: 'payroll-nov', maxItems: MAX_ITEMS });
    assert.deepEqual(
      again.map((b) => b.id),
      batches.map((b) => b.id),
    );
    assert.deepEqual(
      await Promise.all(batches.map((b) => paymentsOf(b.id))).then((p) => p.map((ids) => ids.length)),
      [100, 100, 50],
    );

    // Another split under the same key: the first batch's body differs, so its key is refused.
    const resplit = await client.payoutBatches
      .createAll(payroll, { idempotencyKey: 'payroll-nov', maxItems: OTHER_MAX_ITEMS })
      .catch((e: unknown) => e);
    assert.ok(resplit instanceof PayoutBatchesIncompleteError, String(resplit));
    assert.equal(resplit.batchIndex, 0);
    assert.equal((resplit.cause as BolivarError).code, 'idempotency_key_reused');
    // Another split under a new key: every item answered with the payment its reference already made.
    const rekeyed = await client.payoutBatches.createAll(payroll, {
      idempotencyKey: 'payroll-nov-2',
      maxItems: OTHER_MAX_ITEMS,
    });
    assert.deepEqual(
      rekeyed.map((b) => b.itemCount),
      [150, 100],
    );
    assert.deepEqual(
      rekeyed.flatMap((b) => b.items.map((i) => i.paymentId)),
      batches.flatMap((b) => b.items.map((i) => i.paymentId)),
    );
    assert.deepEqual(
      await Promise.all(rekeyed.map((b) => paymentsOf(b.id))).then((p) => p.map((ids) => ids.length)),
      [0, 0],
      'the new batches created no payment',
    );
  });

  it('createAll throws mid-way with the batches already answered; the same call again resumes', async () => {
    const good = Array.from({ length: 5 }, (_, i) => item(`resume-${i}`));
    const broken = [...good.slice(0, 3), { ...good[3]!, quoteId: UNKNOWN_QUOTE }, good[4]!];
    const failed = await client.payoutBatches
      .createAll(broken, { idempotencyKey: 'resume', maxItems: 3 })
      .catch((e: unknown) => e);
    assert.ok(failed instanceof PayoutBatchesIncompleteError, String(failed));
    assert.equal(failed.batchIndex, 1);
    assert.equal(failed.batchCount, 2);
    assert.equal(failed.answered.length, 1);
    const cause = failed.cause as BolivarError;
    assert.equal(cause.code, 'validation_failed');
    assert.deepEqual(
      (cause.meta?.errors as { field: string }[]).map((e) => e.field),
      ['items.0.quoteId'],
      'both quoteId and deliver on the 4th item, the 1st of batch 1',
    );

    const resumed = await client.payoutBatches.createAll(good, { idempotencyKey: 'resume', maxItems: 3 });
    assert.equal(resumed[0]!.id, failed.answered[0]!.id, 'the answered batch replays');
    assert.deepEqual(
      resumed.map((b) => b.items.length),
      [3, 2],
    );
  });
});

describe('payoutBatches.waitUntilCompleted is bounded', () => {
  it('throws PayoutBatchWaitTimeoutError with the last state read once timeoutMs has passed', async () => {
    let reads = 0;
    const processing = { id: 'b1', status: 'processing', itemCount: 1, items: [] } as unknown as PayoutBatch;
    const client = new Bolivar({
      apiKey: 'bsk_test_x',
      baseUrl: 'http://127.0.0.1:9',
      fetch: async () => {
        reads += 1;
        return new Response(JSON.stringify(processing), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        });
      },
    });
    const error = await client.payoutBatches
      .waitUntilCompleted('b1', { timeoutMs: 200, intervalMs: 20 })
      .catch((e: unknown) => e);
    assert.ok(error instanceof PayoutBatchWaitTimeoutError, String(error));
    assert.equal(error.batch.status, 'processing');
    assert.ok(reads >= 2, `read ${reads} times`);
  });
});
