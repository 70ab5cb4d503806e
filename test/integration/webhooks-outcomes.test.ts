import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../src/http/types.ts';
import { ManualClock } from '../support/clock.ts';
import { verifyWebhook } from '../../sdk/src/webhooks.ts';
import { client, startTestApp, type TestApp } from '../support/harness.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  appWithRailTimeout,
  beneficiary,
  fundedTenant,
  payout,
  type FundedTenant,
} from '../support/payouts.ts';
import { dispatcherFor, eventsOfPayment, setEndpoint, TestReceiver } from '../support/webhooks.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
/**
 * The rail timeout of the process that sends the one payout meant to time out (V99990009 hangs until
 * it does); every other payout is sent with the ample one, so a slow answer is never taken for a timeout.
 */
const HANG_RAIL_TIMEOUT_MS = 300;

interface Case {
  name: string;
  body: Record<string, unknown>;
  amount?: number;
  /** The payout answer, then the outcome events expected once everything has resolved. */
  answer: string;
  events: Array<[string, Record<string, unknown>]>;
  /** The rail call is meant to time out: sent by the process with the short rail timeout. */
  railTimesOut?: true;
}

const SCENARIOS: Case[] = [
  {
    name: 'V99990001 settles at once',
    body: { beneficiary: beneficiary('V99990001') },
    answer: 'settled',
    events: [['payment.settled', {}]],
  },
  {
    name: 'V99990002 unknown → settled',
    body: { beneficiary: beneficiary('V99990002') },
    answer: 'unknown',
    events: [['payment.settled', {}]],
  },
  {
    name: 'V99990003 unknown → failed',
    body: { beneficiary: beneficiary('V99990003') },
    answer: 'unknown',
    events: [['payment.failed', { reason: 'rail_rejected' }]],
  },
  {
    name: 'V99990004 fails at once',
    body: { beneficiary: beneficiary('V99990004') },
    answer: 'failed',
    events: [['payment.failed', { reason: 'beneficiary_mismatch' }]],
  },
  {
    name: 'V99990005 fails at once',
    body: { beneficiary: beneficiary('V99990005') },
    answer: 'failed',
    events: [['payment.failed', { reason: 'bank_unreachable' }]],
  },
  {
    name: 'V99990006 submitted → failed',
    body: { beneficiary: beneficiary('V99990006') },
    answer: 'submitted',
    events: [['payment.failed', { reason: 'invalid_destination_account' }]],
  },
  {
    name: 'V99990007 settled → reversed',
    body: { beneficiary: beneficiary('V99990007') },
    answer: 'submitted',
    events: [
      ['payment.settled', {}],
      ['payment.reversed', { reason: 'returned_by_bank' }],
    ],
  },
  {
    name: 'V99990008 preferred → other instrument',
    body: { beneficiary: beneficiary('V99990008', { accountNumber: '01020000000000000001' }), method: 'transferencia' },
    answer: 'submitted',
    events: [['payment.settled', { method: 'pago_movil' }]],
  },
  {
    name: 'V99990008 strict → instrument_unsupported',
    body: {
      beneficiary: beneficiary('V99990008', { accountNumber: '01020000000000000001' }),
      method: 'transferencia',
      methodPolicy: 'strict',
    },
    answer: 'failed',
    events: [['payment.failed', { reason: 'instrument_unsupported' }]],
  },
  {
    name: 'V99990009 timeout → unknown → settled',
    body: { beneficiary: beneficiary('V99990009') },
    answer: 'unknown',
    events: [['payment.settled', {}]],
    railTimesOut: true,
  },
  {
    name: 'default → submitted → settled',
    body: { beneficiary: beneficiary('V20111222') },
    answer: 'submitted',
    events: [['payment.settled', {}]],
  },
  {
    name: 'below the rail floor → failed before the rail',
    body: { beneficiary: beneficiary('V20111223') },
    amount: 92499,
    answer: 'failed',
    events: [['payment.failed', { reason: 'amount_below_rail_minimum' }]],
  },
];

// Every payout but the default one carries metadata of its own, which each of its events must carry
// whichever path resolved it (at once, the payout path after the rail, the reaper); without, `{}`.
const CASES: Case[] = SCENARIOS.map((c, i) =>
  c.name.startsWith('default')
    ? c
    : { ...c, body: { ...c.body, metadata: { order_id: `order-${i}`, scenario: c.name } } },
);

const PAYLOAD_KEYS: Record<string, string[]> = {
  'payment.settled': ['amount', 'asset', 'bankReference', 'metadata', 'method', 'paymentId'],
  'payment.failed': ['amount', 'asset', 'metadata', 'method', 'paymentId', 'reason'],
  'payment.reversed': ['amount', 'asset', 'bankReference', 'metadata', 'method', 'paymentId', 'reason'],
};

describe('exactly one outcome event per payout, for every sandbox trigger', () => {
  let t: TestApp;
  let clock: ManualClock;
  let tenant: FundedTenant;
  let receiver: TestReceiver;
  let secret: string;
  let impatient: App;
  const payments = new Map<string, string>();

  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock, env: ENV });
    tenant = await fundedTenant(t);
    receiver = await TestReceiver.start();
    secret = await setEndpoint(t, tenant.tenantId, receiver.url());
    impatient = await appWithRailTimeout(t, HANG_RAIL_TIMEOUT_MS, { clock });
  });
  after(async () => {
    await impatient.close();
    await receiver.close();
    await t.close();
  });

  it('the payout answers as the trigger says; open outcomes emit nothing yet', async () => {
    for (const c of CASES) {
      const response = await payout(c.railTimesOut ? client(impatient, tenant.key) : tenant.api, c.body, c.amount);
      assert.equal(response.status, 201, `${c.name}: ${response.raw}`);
      assert.equal(response.body.status, c.answer, c.name);
      payments.set(c.name, response.body.id);
      const events = await eventsOfPayment(t.db, tenant.tenantId, response.body.id);
      const immediate = c.answer === 'settled' || c.answer === 'failed';
      assert.equal(
        events.length,
        immediate ? 1 : 0,
        `${c.name}: an immediate outcome emits at once, an open one nothing yet`,
      );
    }
    const d = dispatcherFor(t.db, clock);
    await d.dispatchDue();
    await d.close();
    assert.equal(receiver.requests.length, CASES.filter((c) => c.answer === 'settled' || c.answer === 'failed').length);
  });

  it('after the reaper resolves everything (and runs again), each payout has exactly its events, each delivered once', async () => {
    const d = dispatcherFor(t.db, clock);
    for (const step of [4000, 4000, 11_000, 11_000, 60_000]) {
      await advanceAndReap(t, clock, step);
      await d.dispatchDue();
    }
    await d.close();

    for (const c of CASES) {
      const paymentId = payments.get(c.name)!;
      const events = await eventsOfPayment(t.db, tenant.tenantId, paymentId);
      assert.deepEqual(
        events.map((e: any) => e.event_type),
        c.events.map(([type]) => type),
        `${c.name}: outbox`,
      );
      for (const [i, [type, fields]] of c.events.entries()) {
        const event = events[i];
        assert.equal(event.status, 'published', `${c.name}: ${type} published`);
        assert.equal(event.attempts, 1);
        const payload = JSON.parse(event.payload_text);
        assert.deepEqual(Object.keys(payload).sort(), PAYLOAD_KEYS[type], `${c.name}: ${type} payload`);
        assert.equal(payload.paymentId, paymentId);
        for (const [key, value] of Object.entries(fields))
          assert.equal(payload[key], value, `${c.name}: ${type}.${key}`);
        assert.deepEqual(
          payload.metadata,
          c.body.metadata ?? {},
          `${c.name}: ${type}.metadata is the payout's, as sent`,
        );
        const read = await tenant.api.get(`/v1/events/${event.id}`);
        assert.equal(read.status, 200, read.raw);
        assert.equal(
          JSON.stringify(read.body.payload),
          event.payload_text,
          `${c.name}: GET /v1/events/{id} is the payload sent`,
        );
      }
      const received = receiver.requests.filter((r) => r.body.payload.paymentId === paymentId);
      assert.deepEqual(
        received.map((r) => r.body.eventType),
        c.events.map(([type]) => type),
        `${c.name}: deliveries received`,
      );
      assert.deepEqual(
        received.map((r) => r.headers['x-event-id']),
        events.map((e: any) => e.id.toString()),
        `${c.name}: one delivery per event`,
      );
    }
    const ids = receiver.eventIds();
    assert.equal(new Set(ids).size, ids.length, 'no event was delivered twice');
    for (const request of receiver.requests) {
      assert.equal(
        verifyWebhook({
          secret,
          headers: request.headers,
          rawBody: request.rawBody,
          nowMs: Number(request.headers['x-timestamp']),
        }).ok,
        true,
      );
    }
  });
});
