// /metrics after a day in miniature: payouts (accepted, failed, refused, replayed), an outcome found
// by the reaper, webhook deliveries. Every business family shows with values that follow from what
// was done, no label carries an id, and the info log tells the same story without a secret in it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { BoundedLabel, REASON_LABELS_MAX } from '../../src/services/money-metrics.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { webhookDispatcherOf } from '../../src/workers/index.ts';
import { client, ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { familiesOf, metricsHeaders, UUID_PATTERN, valueOf } from '../support/metrics.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  idempotencyKey,
  quote,
  SENDER,
} from '../support/payouts.ts';
import { setEndpoint, TestReceiver } from '../support/webhooks.ts';

const SETTLE_DELAY_MS = 3000;

describe(`business metrics in /metrics on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let receiver: TestReceiver;
  let tenant: FundedTenant;
  let webhookSecret: string;
  let paymentIds: string[] = [];
  const logLines: string[] = [];
  const scrape = async () => {
    const response = await client(t.app).get('/metrics', metricsHeaders);
    assert.equal(response.status, 200);
    return response.raw;
  };

  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({
      clock,
      env: {
        SANDBOX_SETTLE_DELAY_MS: String(SETTLE_DELAY_MS),
        SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
        REAPER_INTERVAL_MS: '1000',
      },
      deps: { logger: { level: 'info', stream: { write: (line: string) => void logLines.push(line) } } },
    });
    receiver = await TestReceiver.start();
    tenant = await fundedTenant(t);
    webhookSecret = await setEndpoint(t, tenant.tenantId, receiver.url());
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('counts payouts, outcomes, rail calls, batches, replays and deliveries, and shows the backlog they leave', async () => {
    // Accepted (settles later), replayed with its key, refused (its quote is spent), failed by the
    // rail after it was accepted, failed before the rail (no sender).
    const body = {
      method: 'pago_movil',
      sender: SENDER,
      beneficiary: beneficiary(),
      quoteId: await quote(tenant.api, 1_000_000),
    };
    const key = idempotencyKey();
    const accepted = await tenant.api.post('/v1/payouts', body, { 'idempotency-key': key });
    assert.equal(accepted.body.status, 'submitted', accepted.raw);
    const replayed = await tenant.api.post('/v1/payouts', body, { 'idempotency-key': key });
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    const refused = await tenant.api.post('/v1/payouts', body, { 'idempotency-key': idempotencyKey() });
    assert.equal(refused.status, 409, refused.raw);
    const failedQuote = await quote(tenant.api, 1_000_000);
    const failed = await tenant.api.post(
      '/v1/payouts',
      { ...body, beneficiary: beneficiary('V99990004'), quoteId: failedQuote },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(failed.body.status, 'failed', failed.raw);
    const { sender: _none, ...withoutSender } = body;
    const unsent = await tenant.api.post(
      '/v1/payouts',
      { ...withoutSender, quoteId: await quote(tenant.api, 1_000_000) },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(unsent.body.reason, 'sender_required', unsent.raw);
    paymentIds = [accepted.body.id, failed.body.id, unsent.body.id];

    clock.advance(SETTLE_DELAY_MS - 1000);
    let text = await scrape();
    assert.equal(valueOf(text, 'bolivar_payouts_total', { status: 'submitted', reason: 'ledger_committed' }), 2);
    assert.equal(valueOf(text, 'bolivar_payouts_total', { status: 'refused', reason: 'quote_already_consumed' }), 1);
    assert.equal(valueOf(text, 'bolivar_payouts_total', { status: 'failed', reason: 'beneficiary_mismatch' }), 1);
    assert.equal(valueOf(text, 'bolivar_payouts_total', { status: 'failed', reason: 'sender_required' }), 1);
    assert.equal(valueOf(text, 'bolivar_idempotency_replays_total', { route: '/v1/payouts' }), 1);
    assert.equal(valueOf(text, 'bolivar_payments_unresolved'), 1);
    assert.equal(
      valueOf(text, 'bolivar_reaper_lag_seconds'),
      (SETTLE_DELAY_MS - 1000) / 1000,
      'the accepted payout waits since it was made',
    );
    assert.equal(
      valueOf(text, 'bolivar_outbox_events', { status: 'pending' }),
      2,
      'both payment.failed wait for delivery',
    );
    assert.equal(valueOf(text, 'bolivar_outbox_oldest_pending_age_seconds'), (SETTLE_DELAY_MS - 1000) / 1000);
    assert.equal(
      valueOf(text, 'bolivar_rail_calls_total', { rail: 'sandbox', operation: 'submit', outcome: 'processing' }),
      1,
    );
    assert.equal(
      valueOf(text, 'bolivar_rail_calls_total', { rail: 'sandbox', operation: 'submit', outcome: 'failed' }),
      1,
    );
    assert.equal(valueOf(text, 'bolivar_rail_call_duration_seconds_count', { operation: 'submit' }), 2);

    // The reaper finds the settlement.
    clock.advance(2000);
    const reaper = new Reaper(
      t.db,
      t.services.clock,
      t.services.rails,
      t.services.outcomes,
      {
        intervalMs: 1000,
        railTimeoutMs: t.config.sandboxRailTimeoutMs,
        railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
      },
      undefined,
      t.services.metrics,
    );
    await reaper.runOnce();
    text = await scrape();
    assert.equal(valueOf(text, 'bolivar_reaper_resolutions_total', { outcome: 'settled' }), 1);
    assert.equal(valueOf(text, 'bolivar_payouts_total', { status: 'settled', reason: 'resolved_by_reaper' }), 1);
    assert.equal(valueOf(text, 'bolivar_rail_calls_total', { operation: 'lookup', outcome: 'settled' }), 1);
    assert.equal(valueOf(text, 'bolivar_payments_unresolved'), 0);
    assert.equal(valueOf(text, 'bolivar_reaper_lag_seconds'), 0);
    assert.equal(valueOf(text, 'bolivar_outbox_events', { status: 'pending' }), 3);

    // Every event is delivered.
    const dispatcher = webhookDispatcherOf(t.services);
    await dispatcher.dispatchDue();
    await dispatcher.close();
    assert.equal(receiver.requests.length, 3);
    text = await scrape();
    assert.equal(valueOf(text, 'bolivar_webhook_deliveries_total', { status_class: '2xx' }), 3);
    assert.equal(valueOf(text, 'bolivar_webhook_delivery_duration_seconds_count'), 3);
    assert.equal(valueOf(text, 'bolivar_outbox_events', { status: 'pending' }), 0);
    assert.equal(valueOf(text, 'bolivar_outbox_events', { status: 'dead' }), 0);
    assert.equal(valueOf(text, 'bolivar_outbox_oldest_pending_age_seconds'), 0);

    // Batches: every payout and outcome went through one; the histograms saw them.
    assert.ok(valueOf(text, 'bolivar_commit_batch_jobs_count', { lane: 'payout' })! >= 1);
    assert.equal(
      valueOf(text, 'bolivar_commit_batch_jobs_sum', { lane: 'payout' }),
      4,
      'two accepted, one refused, one failed: four payout jobs',
    );
    assert.ok(
      valueOf(text, 'bolivar_commit_batch_jobs_sum', { lane: 'outcome' })! >= 2,
      'the failure and the settlement',
    );
    assert.ok(
      valueOf(text, 'bolivar_commit_batch_duration_seconds_count', { lane: 'payout', result: 'committed' })! >= 1,
    );
    assert.equal(valueOf(text, 'bolivar_commit_queue_jobs'), 0);
    assert.equal(typeof valueOf(text, 'bolivar_background_units', { state: 'running' }), 'number');
    assert.equal(typeof valueOf(text, 'bolivar_background_units', { state: 'waiting' }), 'number');
    assert.equal(valueOf(text, 'bolivar_payments_parked_unresolved'), 0);
    if (ENGINE === 'postgres') {
      assert.equal(valueOf(text, 'bolivar_db_pool_connections_max', { pool: 'main' }), 20);
      assert.ok(valueOf(text, 'bolivar_db_pool_connections_in_use', { pool: 'main' })! >= 0);
      assert.equal(valueOf(text, 'bolivar_db_pool_clients_waiting', { pool: 'main' }), 0);
    } else {
      assert.equal(familiesOf(text).has('bolivar_db_pool_connections_in_use'), false, 'PGlite has no pool to report');
    }

    const families = familiesOf(text);
    for (const [name, type] of [
      ['bolivar_payouts_total', 'counter'],
      ['bolivar_commit_batch_jobs', 'histogram'],
      ['bolivar_commit_batch_duration_seconds', 'histogram'],
      ['bolivar_reaper_lag_seconds', 'gauge'],
      ['bolivar_reaper_resolutions_total', 'counter'],
      ['bolivar_outbox_events', 'gauge'],
      ['bolivar_outbox_oldest_pending_age_seconds', 'gauge'],
      ['bolivar_webhook_delivery_duration_seconds', 'histogram'],
      ['bolivar_webhook_deliveries_total', 'counter'],
      ['bolivar_rail_call_duration_seconds', 'histogram'],
      ['bolivar_rail_calls_total', 'counter'],
      ['bolivar_idempotency_replays_total', 'counter'],
      ['bolivar_payments_unresolved', 'gauge'],
    ] as const) {
      assert.equal(families.get(name), type, `${name} is a ${type}`);
    }

    // No id in any label: no uuid anywhere in the exposition, not the tenant's, not a payment's.
    assert.doesNotMatch(text, UUID_PATTERN);
    for (const id of [tenant.tenantId, ...paymentIds]) assert.equal(text.includes(id), false);
  });

  it('logs each committed batch and outcome at info with ids and reasons, and never a key, secret, account or phone', () => {
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, any>);
    const [accepted, failedByRail, unsent] = paymentIds;
    const committed = lines.filter((l) => l.msg?.startsWith('payouts committed'));
    assert.deepEqual(committed.flatMap((l) => l.accepted).sort(), [accepted, failedByRail].sort());
    assert.deepEqual(
      committed.flatMap((l) => l.failed),
      [{ paymentId: unsent, reason: 'sender_required' }],
    );
    assert.deepEqual(
      committed.flatMap((l) => Object.entries(l.refused)),
      [['quote_already_consumed', 1]],
    );
    assert.ok(committed.every((l) => l.tenantId === tenant.tenantId && l.mode === 'test' && l.level === 30));
    const outcomes = lines.filter((l) => l.msg?.startsWith('payment outcomes applied')).flatMap((l) => l.outcomes);
    assert.deepEqual(outcomes.map((o) => [o.status, o.reason, o.actor]).sort(), [
      ['failed', 'beneficiary_mismatch', 'api'],
      ['settled', 'resolved_by_reaper', 'reaper'],
    ]);
    assert.deepEqual(outcomes.map((o) => o.paymentId).sort(), [accepted, failedByRail].sort());
    assert.ok(lines.every((l) => l.level >= 30));
    const all = logLines.join('');
    for (const secret of [tenant.key, webhookSecret, t.platformKey, SENDER.phone, beneficiary().phone, SENDER.email]) {
      assert.equal(all.includes(secret), false, `the log never holds ${secret.slice(0, 6)}…`);
    }
  });

  it('the Grafana dashboard only charts metrics the service exposes', async () => {
    const dashboard = JSON.parse(readFileSync(new URL('../../ops/grafana-dashboard.json', import.meta.url), 'utf8'));
    const exprs: string[] = JSON.stringify(dashboard).match(/"expr":"(?:[^"\\]|\\.)*"/g) ?? [];
    const used = new Set(
      exprs
        .flatMap((e) => e.match(/\b(?:bolivar|http)_[a-z_]+/g) ?? [])
        .map((n) => n.replace(/_(bucket|sum|count)$/, '')),
    );
    assert.ok(used.size >= 15, [...used].join(', '));
    const families = familiesOf(await scrape());
    for (const name of used) {
      if (ENGINE === 'pglite' && name.startsWith('bolivar_db_pool_')) continue;
      // Counters the test app has not moved yet still declare their family.
      assert.ok(families.has(name), `${name} is charted but not exposed`);
    }
  });

  it('a label taken from data stays bounded: no id, no free text, at most REASON_LABELS_MAX values', () => {
    const label = new BoundedLabel();
    assert.equal(label.of('rail_rejected'), 'rail_rejected');
    assert.equal(label.of(null), 'none');
    assert.equal(label.of('8d0a5c1e-1d52-4a43-9a8e-1f2f3c4d5e6f'), 'other');
    assert.equal(label.of('The bank said: no'), 'other');
    for (let i = 0; i < REASON_LABELS_MAX * 2; i += 1) label.of(`reason_${i}`);
    assert.equal(label.of('a_new_reason'), 'other');
    assert.equal(label.of('rail_rejected'), 'rail_rejected', 'a value seen before keeps its series');
  });
});
