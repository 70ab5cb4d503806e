// A rail's statement for a day, matched against our payments of that rail: payments made through the
// real API on the sandbox rail (triggers settle, fail and return them), then statements that agree
// and disagree with them in every way a statement can. Each mismatch is stored once with both sides
// and opens one anomaly; posting the same file again stores nothing; a malformed file stores nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import {
  assertEnvelope,
  client,
  ENGINE,
  startTestApp,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import { until } from '../support/until.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  payout,
} from '../support/payouts.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
const DAY = '2026-12-01';
const HEADER = 'reference,bank_reference,amount,status,value_date';

interface Paid {
  id: string;
  amount: bigint;
  bankReference: string;
}

describe(`rail statements on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let tenant: FundedTenant;
  let admin: Client;
  const paid: Record<'matched' | 'amount' | 'status' | 'bankReference' | 'missing' | 'failed' | 'reversed', Paid> =
    {} as never;
  const unknown = randomUUID();

  /** A payout through the API with a sandbox trigger, as our records hold it once final. */
  async function pay(trigger: string): Promise<string> {
    const made = await payout(tenant.api, { beneficiary: beneficiary(trigger) });
    assert.equal(made.status, 201, made.raw);
    return made.body.id;
  }

  async function held(id: string): Promise<Paid & { status: string }> {
    const { rows } = await t.db.query<{ status: string; payout_amount: bigint; bank_reference: string | null }>(
      `SELECT status, payout_amount, bank_reference FROM payments WHERE id = $1`,
      [id],
    );
    return {
      id,
      status: rows[0]!.status,
      amount: rows[0]!.payout_amount,
      bankReference: rows[0]!.bank_reference ?? '',
    };
  }

  function post(csv: string, query: string, rail = 'sandbox', contentType?: string): Promise<InjectResult> {
    return inject(t, 'POST', `/v1/admin/rails/${rail}/statements?${query}`, csv, contentType);
  }

  async function stored() {
    const count = async (sql: string) => Number((await t.db.query<{ n: bigint }>(sql)).rows[0]!.n);
    return {
      statements: await count(`SELECT count(*)::bigint AS n FROM rail_statements`),
      mismatches: await count(`SELECT count(*)::bigint AS n FROM rail_statement_mismatches`),
      anomalies: await count(`SELECT count(*)::bigint AS n FROM anomalies WHERE kind LIKE 'statement_%'`),
      audits: await count(`SELECT count(*)::bigint AS n FROM audit_log WHERE action = 'rail_statement.import'`),
    };
  }

  /** The statement of DAY as the rail would send it, with every kind of disagreement. */
  function statementLines(): string[][] {
    const line = (p: Paid, status: string, amount = p.amount, bankReference = p.bankReference) => [
      p.id,
      bankReference,
      String(amount),
      status,
      DAY,
    ];
    return [
      line(paid.matched, 'settled'),
      [unknown, '000000009999', '5000', 'settled', DAY],
      line(paid.amount, 'settled', paid.amount.amount + 1n),
      line(paid.status, 'failed'),
      line(paid.bankReference, 'settled', paid.bankReference.amount, '000000000042'),
      line(paid.failed, 'rechazada', paid.failed.amount, ''),
      line(paid.reversed, 'reversed'),
    ];
  }

  before(async () => {
    clock = new ManualClock(new Date(`${DAY}T15:00:00Z`));
    t = await startTestApp({ clock, env: ENV });
    tenant = await fundedTenant(t);
    admin = client(t.app, t.platformKey);
    const ids = {
      matched: await pay('V99990001'),
      amount: await pay('V99990001'),
      status: await pay('V99990001'),
      bankReference: await pay('V99990001'),
      missing: await pay('V99990001'),
      failed: await pay('V99990004'),
      reversed: await pay('V99990007'),
    };
    await advanceAndReap(t, clock, 3_000);
    await advanceAndReap(t, clock, 10_000);
    for (const [name, id] of Object.entries(ids)) paid[name as keyof typeof paid] = await held(id);
    const statuses = Object.fromEntries(
      await Promise.all(Object.entries(ids).map(async ([name, id]) => [name, (await held(id)).status])),
    );
    assert.deepEqual(statuses, {
      matched: 'settled',
      amount: 'settled',
      status: 'settled',
      bankReference: 'settled',
      missing: 'settled',
      failed: 'failed',
      reversed: 'reversed',
    });
  });
  after(async () => {
    await t.close();
  });

  it('a statement with every kind of mismatch stores exactly those rows and anomalies; posting it again stores nothing', async () => {
    const csv = [HEADER, ...statementLines().map((l) => l.join(','))].join('\n') + '\n';
    const first = await post(csv, `day=${DAY}`);
    assert.equal(first.status, 201, first.raw);
    assert.equal(first.body.lines, 7);
    assert.deepEqual(first.body.counts, {
      matched: 3,
      unknown_reference: 1,
      missing_at_rail: 1,
      amount_mismatch: 1,
      status_mismatch: 1,
      bank_reference_mismatch: 1,
    });
    assert.equal(first.body.anomaliesOpened, 5);

    const detail = await admin.get(`/v1/admin/rails/sandbox/statements/${first.body.id}`);
    assert.equal(detail.status, 200, detail.raw);
    const rows = detail.body.mismatches.data as Array<Record<string, any>>;
    assert.deepEqual(
      rows.map((m) => [m.result, m.line, m.reference, m.paymentId]),
      [
        ['unknown_reference', 3, unknown, null],
        ['amount_mismatch', 4, paid.amount.id, paid.amount.id],
        ['status_mismatch', 5, paid.status.id, paid.status.id],
        ['bank_reference_mismatch', 6, paid.bankReference.id, paid.bankReference.id],
        ['missing_at_rail', null, paid.missing.id, paid.missing.id],
      ],
    );
    const amount = rows[1]!;
    assert.deepEqual(
      [amount.ours.amount, amount.theirs.amount],
      [String(paid.amount.amount), String(paid.amount.amount + 1n)],
    );
    assert.deepEqual([rows[2]!.ours.status, rows[2]!.theirs.status], ['settled', 'failed']);
    assert.deepEqual(
      [rows[3]!.ours.bankReference, rows[3]!.theirs.bankReference],
      [paid.bankReference.bankReference, '000000000042'],
    );
    assert.equal(rows[4]!.ours.status, 'settled');

    const { rows: anomalies } = await t.db.query<{
      id: string;
      kind: string;
      payment_id: string | null;
      tenant_id: string | null;
    }>(`SELECT id, kind, payment_id, tenant_id FROM anomalies WHERE kind LIKE 'statement_%' ORDER BY kind`);
    assert.deepEqual(
      anomalies.map((a) => [a.kind, a.payment_id]),
      [
        ['statement_amount_mismatch', paid.amount.id],
        ['statement_bank_reference_mismatch', paid.bankReference.id],
        ['statement_missing_at_rail', paid.missing.id],
        ['statement_status_mismatch', paid.status.id],
        ['statement_unknown_reference', null],
      ],
    );
    assert.deepEqual(new Set(rows.map((m) => m.anomalyId)), new Set(anomalies.map((a) => a.id)));
    const shown = await admin.get(`/v1/admin/anomalies/${rows[1]!.anomalyId}`);
    assert.equal(shown.body.tenantId, tenant.tenantId);
    assert.equal((shown.body.raw as { statementId: string }).statementId, first.body.id);

    const metrics = (await client(t.app).get('/metrics', metricsHeaders)).raw;
    for (const kind of [
      'statement_unknown_reference',
      'statement_missing_at_rail',
      'statement_amount_mismatch',
      'statement_status_mismatch',
      'statement_bank_reference_mismatch',
    ]) {
      assert.equal(valueOf(metrics, 'bolivar_anomalies_total', { kind }), 1, kind);
    }

    const before = await stored();
    const again = await post(csv, `day=${DAY}`);
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual(again.body, first.body);
    assert.deepEqual(await stored(), before, 'the same file again: one statement, no new rows, anomalies or audit');
    assert.deepEqual(before, { statements: 1, mismatches: 5, anomalies: 5, audits: 1 });
  });

  it('a bank that names its columns otherwise is read through a mapping; another file of the day is a second statement, its anomalies not duplicated', async () => {
    // Spanish names, another order, an extra column, capitals in a reference.
    const header = 'Fecha valor;Estado;Monto;Ref. banco;Referencia;Concepto'.split(';');
    const lines = statementLines().map(([reference, bank, amount, status, day]) => [
      day!,
      status!,
      amount!,
      bank!,
      reference!.toUpperCase(),
      '"Pago, nómina"',
    ]);
    const csv = [header.map((h) => `"${h}"`).join(','), ...lines.map((l) => l.join(','))].join('\r\n');
    const mapping = encodeURIComponent(
      'reference:Referencia,bank_reference:Ref. banco,amount:Monto,status:Estado,value_date:Fecha valor',
    );
    const before = await stored();

    const unmapped = await post(csv, `day=${DAY}`);
    assertEnvelope(assert, unmapped, 400, 'statement_malformed');
    assert.equal(unmapped.body.error.meta.line, 1);

    clock.advance(60_000); // posted a minute after the first (the list is newest first)
    const second = await post(csv, `day=${DAY}&columns=${mapping}`);
    assert.equal(second.status, 201, second.raw);
    assert.deepEqual(second.body.counts, {
      matched: 3,
      unknown_reference: 1,
      missing_at_rail: 1,
      amount_mismatch: 1,
      status_mismatch: 1,
      bank_reference_mismatch: 1,
    });
    assert.equal(second.body.anomaliesOpened, 0, 'each mismatch was already open from the first file');
    assert.equal(second.body.columns.reference, 'Referencia');
    assert.deepEqual(await stored(), {
      statements: before.statements + 1,
      mismatches: before.mismatches + 5,
      anomalies: before.anomalies,
      audits: before.audits + 1,
    });

    const list = await admin.get('/v1/admin/rails/sandbox/statements?limit=1');
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(
      list.body.data.map((s: { id: string }) => s.id),
      [second.body.id],
      'newest first',
    );
    const rest = await admin.get(`/v1/admin/rails/sandbox/statements?limit=1&cursor=${list.body.next_cursor}`);
    assert.equal(rest.body.data.length, 1);
    assert.equal(rest.body.has_more, false);

    const page = await admin.get(`/v1/admin/rails/sandbox/statements/${second.body.id}?limit=2`);
    const next = await admin.get(
      `/v1/admin/rails/sandbox/statements/${second.body.id}?limit=2&cursor=${page.body.mismatches.next_cursor}`,
    );
    const last = await admin.get(
      `/v1/admin/rails/sandbox/statements/${second.body.id}?limit=2&cursor=${next.body.mismatches.next_cursor}`,
    );
    assert.deepEqual(
      [page, next, last].map((p) => p.body.mismatches.data.map((m: { seq: number }) => m.seq)),
      [[1, 2], [3, 4], [5]],
    );
    assert.equal(last.body.mismatches.next_cursor, null);
  });

  it('a malformed file answers 400 with its line and stores nothing', async () => {
    const good = statementLines().map((l) => l.join(','));
    const cases: Array<{ csv: string; line: number; problem: RegExp }> = [
      { csv: '', line: 1, problem: /empty/ },
      { csv: 'reference,amount,status,value_date\n', line: 1, problem: /lacks bank_reference/ },
      { csv: [HEADER, good[0], `${paid.amount.id},1,12.50,settled,${DAY}`].join('\n'), line: 3, problem: /amount/ },
      {
        csv: [HEADER, good[0], good[1], `${paid.amount.id},1,100,maybe,${DAY}`].join('\n'),
        line: 4,
        problem: /status/,
      },
      {
        csv: [HEADER, good[0], `${paid.amount.id},1,100,settled,2026-12-02`].join('\n'),
        line: 3,
        problem: /value_date/,
      },
      { csv: [HEADER, good[0], `${paid.amount.id},1,100,settled`].join('\n'), line: 3, problem: /CSV/ },
      { csv: [HEADER, ...good, good[0]].join('\n'), line: 9, problem: /named again \(first on line 2\)/ },
    ];
    const before = await stored();
    for (const c of cases) {
      const answer = await post(c.csv, `day=${DAY}`);
      assertEnvelope(assert, answer, 400, 'statement_malformed');
      assert.equal(answer.body.error.meta.line, c.line, `${c.problem}: ${answer.raw}`);
      assert.match(answer.body.error.meta.problem, c.problem);
    }
    assert.deepEqual(await stored(), before, 'nothing stored');
  });

  it('statements of one day posted at once are matched one after the other: the same file is one statement, two files open no anomaly twice', async () => {
    const csvWith = (note: string) =>
      [`${HEADER},note`, ...statementLines().map((l) => [...l, note].join(','))].join('\n');
    const before = await stored();
    clock.advance(60_000);
    const same = await Promise.all([post(csvWith('same'), `day=${DAY}`), post(csvWith('same'), `day=${DAY}`)]);
    assert.deepEqual(same.map((a) => a.status).sort(), [200, 201], same.map((a) => a.raw).join('\n'));
    assert.equal(same[0]!.body.id, same[1]!.body.id);
    const two = await Promise.all([post(csvWith('first'), `day=${DAY}`), post(csvWith('second'), `day=${DAY}`)]);
    assert.deepEqual(
      two.map((a) => a.status),
      [201, 201],
      two.map((a) => a.raw).join('\n'),
    );
    assert.notEqual(two[0]!.body.id, two[1]!.body.id);
    assert.deepEqual(
      two.map((a) => a.body.anomaliesOpened),
      [0, 0],
    );
    assert.deepEqual(await stored(), {
      statements: before.statements + 3,
      mismatches: before.mismatches + 15,
      anomalies: before.anomalies,
      audits: before.audits + 3,
    });
  });

  it('a statement over the default body limit is asked for after Expect: 100-continue; one declared over its own limit is refused unread', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as { port: number }).port;
    // 200 KB: a header and blank lines (skipped), a statement of no transfers on a day nothing settled.
    const body = Buffer.from(`${HEADER}\n${'\n'.repeat(200_000)}`);
    const accepted = await postExpectingContinue(
      port,
      t.platformKey,
      '/v1/admin/rails/sandbox/statements?day=2026-11-29',
      body,
    );
    assert.deepEqual(
      [accepted.status, accepted.continued, accepted.body.lines, accepted.body.fileBytes],
      [201, true, 0, body.length],
    );
    const tooLarge = await postExpectingContinue(
      port,
      t.platformKey,
      '/v1/admin/rails/sandbox/statements?day=2026-11-28',
      body,
      41 * 1024 * 1024,
    );
    assert.deepEqual(
      [tooLarge.status, tooLarge.continued, tooLarge.body.error.code],
      [413, false, 'payload_too_large'],
    );
  });

  it('an upload cut short stores nothing and is answered as a client fault (the service goes on)', async () => {
    const errors: Array<{ code?: string }> = [];
    let reached = false;
    const cut = await startTestApp({
      beforeReady: (app) => {
        app.addHook('preHandler', async () => {
          reached = true;
        });
        app.addHook('onError', async (_request, _reply, error) => {
          errors.push(error as { code?: string });
        });
      },
    });
    try {
      await cut.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (cut.app.server.address() as { port: number }).port;
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/v1/admin/rails/sandbox/statements?day=${DAY}`,
        headers: { 'x-api-key': cut.platformKey, 'content-type': 'text/csv', 'content-length': 1_000_000 },
      });
      req.on('error', () => undefined);
      req.write(`${HEADER}\n${randomUUID()},1,100,settled,${DAY}\n`);
      await until('the statement route to be reading the upload', () => reached);
      req.destroy();
      const [error] = await until('the cut upload to end its request', () => (errors.length > 0 ? errors : undefined));
      assert.equal(error!.code, 'malformed_request');
      assert.equal(
        Number((await cut.db.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM rail_statements`)).rows[0]!.n),
        0,
      );
    } finally {
      await cut.close();
    }
  });

  it('an unknown rail is a 404; a bad day or mapping a 400; another content type a 415', async () => {
    const csv = `${HEADER}\n`;
    assertEnvelope(assert, await post(csv, `day=${DAY}`, 'no-such-bank'), 404, 'resource_not_found');
    assertEnvelope(assert, await post(csv, 'day=2026-13-01'), 400, 'validation_failed');
    assertEnvelope(assert, await post(csv, `day=${DAY}&columns=amount`), 400, 'validation_failed');
    assertEnvelope(assert, await post(csv, `day=${DAY}&columns=colour:Color`), 400, 'validation_failed');
    const json = await admin.post(`/v1/admin/rails/sandbox/statements?day=${DAY}`, { csv });
    assertEnvelope(assert, json, 415, 'unsupported_media_type');
    assert.match(json.body.error.message, /text\/csv/);
    // A charset parameter is still CSV: an empty statement of another day, matched (nothing settled then).
    const charset = await post(csv, 'day=2026-11-30', 'sandbox', 'text/csv; charset=utf-8');
    assert.equal(charset.status, 201, charset.raw);
    assert.equal(charset.body.lines, 0);
    assertEnvelope(
      assert,
      await admin.get(`/v1/admin/rails/other/statements/${randomUUID()}`),
      404,
      'resource_not_found',
    );
  });
});

/**
 * A POST over a real connection with `Expect: 100-continue` (as curl sends a file over 1 MB): the body
 * goes only once the service says to continue; the answer, and whether the body was asked for.
 */
async function postExpectingContinue(
  port: number,
  key: string,
  path: string,
  body: Buffer,
  declaredLength = body.length,
): Promise<{ status: number; continued: boolean; body: any }> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path,
      headers: {
        'x-api-key': key,
        'content-type': 'text/csv',
        expect: '100-continue',
        'content-length': declaredLength,
      },
    });
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, continued, body: JSON.parse(Buffer.concat(parts).toString('utf8')) });
        req.destroy();
      });
    });
    req.on('error', (error) => (continued ? reject(error) : undefined));
  });
}

/** A request with a CSV body (the harness's client sends JSON only). */
async function inject(
  t: TestApp,
  method: 'POST',
  url: string,
  csv: string,
  contentType = 'text/csv',
): Promise<InjectResult> {
  const response = await t.app.inject({
    method,
    url,
    headers: { 'x-api-key': t.platformKey, 'content-type': contentType },
    payload: csv,
  });
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = response.body;
  }
  return { status: response.statusCode, body, headers: response.headers, raw: response.body };
}
