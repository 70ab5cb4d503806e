// The overview screen in a real browser (the system's Chromium) against the real service, started as
// `npm start` starts it with its first-start sandbox tenant: payouts with a mix of outcomes (settled,
// failed at the API, failed at the rail, reversed after settling), then the overview, the console's
// home, whose tables (behind the charts) must show exactly what GET /v1/reports/payouts answers. A
// click on a bar of the status chart, and a count in its table, open the statement of that bucket and
// status, which must list exactly those payments. The same for the platform key across tenants, with
// its cards; its bars open nothing over every tenant, and, for one tenant, that tenant's statement
// through the admin API. axe-core (WCAG 2.1 A/AA) finds nothing on any of them; no CSP violation, no
// script error.
// With CONSOLE_SCREENSHOT=docs/console-overview.png the tenant's overview is saved there.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { formatCount, formatMinor } from '../../console/format.ts';
import {
  bucketLabel,
  caracasDay,
  formatRate,
  REPORT_STATUSES,
  STACK_ORDER,
  type PayoutReport,
  type ReportStatus,
} from '../../console/report.ts';
import { accessibilityViolations, call, CHROMIUM, launchConsoleBrowser, tearDown } from '../support/console-browser.ts';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { startService } from '../support/process.ts';
import { until } from '../support/until.ts';

/** Bound of every wait on the service (outcomes, deliveries) and on the page. */
const WAIT_MS = 30_000;
const WAITS = { timeoutMs: WAIT_MS, intervalMs: 100 };
const SENDER = {
  nationalId: 'V11222333',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '04121234567',
  email: 'ana@example.com',
};
const FINAL = new Set(['settled', 'failed', 'returned', 'reversed']);

// docs/sandbox.md: V99990001 settles at once, V99990004 and V99990005 fail at the API
// (beneficiary_mismatch, bank_unreachable), V99990006 fails at the rail (invalid_destination_account),
// V99990007 settles and is then returned by the bank (reversed, returned_by_bank).
const SEEDS: Array<[nationalId: string, bankCode: string]> = [
  ['V99990001', '0102'],
  ['V99990001', '0102'],
  ['V99990001', '0105'],
  ['V99990004', '0102'],
  ['V99990005', '0105'],
  ['V99990006', '0102'],
  ['V99990007', '0105'],
];

interface Seeded {
  id: string;
  status: string;
  created_at: string;
}

/** Each row of a table (by its accessible name) as its cells' text, header cell first. */
function tableRows(page: Page, name: string): Promise<string[][]> {
  return page
    .locator(`table[aria-label="${name}"] tbody tr`)
    .evaluateAll((rows) =>
      rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())),
    );
}

const ms = (value: number | null) => (value === null ? '—' : `${formatCount(value)} ms`);

/** What each table behind a chart must show for `report`, formatted as the console formats numbers. */
function expectedTables(report: PayoutReport): Record<string, string[][]> {
  const label = (b: PayoutReport['buckets'][number]) => bucketLabel(report, b);
  const outcome = (row: PayoutReport['banks'][number] | PayoutReport['instruments'][number], name: string) => [
    name,
    ...[row.count, row.settled, row.failed, row.returned, row.reversed, row.inFlight].map((n) => formatCount(n)),
    formatRate(row.successRate),
  ];
  const assets = [...new Set(report.buckets.flatMap((b) => b.balances.map((balance) => balance.asset)))];
  return {
    [`Payouts by status, per ${report.granularity}`]: report.buckets.map((b) => [
      label(b),
      formatCount(b.count),
      ...REPORT_STATUSES.map((s) => formatCount(b.byStatus[s].count)),
      formatMinor(b.deliveredAmount),
    ]),
    'Success rate by bank': report.banks.map((row) => outcome(row, `${row.bankCode} ${row.bankName ?? ''}`.trim())),
    'Success rate by instrument': report.instruments.map((row) => outcome(row, row.method ?? 'none chosen')),
    'Failures by reason': report.failureReasons.map((row) => [
      row.status,
      row.reason ?? '—',
      formatCount(row.count),
      formatMinor(row.amount),
    ]),
    'Time from creation to outcome': report.buckets.map((b) => [
      label(b),
      formatCount(b.timeToOutcome.count),
      ms(b.timeToOutcome.p50Ms),
      ms(b.timeToOutcome.p95Ms),
    ]),
    'Webhook deliveries': report.buckets.map((b) => [
      label(b),
      ...[b.webhooks.delivered, b.webhooks.rejected, b.webhooks.unreachable].map((n) => formatCount(n)),
      ms(b.webhooks.p50Ms),
      ms(b.webhooks.p95Ms),
    ]),
    'Prefunded balance and credit drawn': report.buckets.map((b) => [
      label(b),
      ...assets.flatMap((asset) => {
        const at = b.balances.find((balance) => balance.asset === asset);
        return [formatMinor(at?.prefundingBalance ?? null, asset), formatMinor(at?.creditDrawn ?? null, asset)];
      }),
    ]),
  };
}

async function assertTablesMatch(page: Page, report: PayoutReport): Promise<void> {
  for (const [name, rows] of Object.entries(expectedTables(report)))
    assert.deepEqual(await tableRows(page, name), rows, name);
}

/** The statement's rows (payment ids) once it shows the filter asked and has loaded. */
async function statementIds(page: Page): Promise<string[]> {
  await page.getByRole('heading', { name: 'Payments', level: 1 }).waitFor({ timeout: WAIT_MS });
  await page.getByText('Created from').waitFor({ timeout: WAIT_MS });
  await page.getByRole('status').filter({ hasText: 'Loading' }).waitFor({ state: 'detached', timeout: WAIT_MS });
  return page.locator('table tbody tr td:nth-child(2)').allTextContents();
}

describe(
  `the console's overview in Chromium, on ${ENGINE}`,
  {
    skip: existsSync(CHROMIUM)
      ? false
      : `${CHROMIUM} is absent: install the Debian package chromium to run the browser test`,
  },
  () => {
    it(
      'shows the payout report as charts and tables, opens the statement of a bar, and passes axe-core',
      { timeout: 120_000 },
      async (t) => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-overview-'));
        const profile = mkdtempSync(path.join(tmpdir(), 'bds-chromium-'));
        const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
        const service = await startService({
          DATA_DIR: dataDir,
          DATABASE_URL: database?.url ?? '',
          SANDBOX_SETTLE_DELAY_MS: '200',
          SANDBOX_REVERSE_DELAY_MS: '200',
          WEBHOOK_BACKOFF_SCALE: '0',
          DISPATCHER_INTERVAL_MS: '50',
        });
        const base = service.baseUrl;
        const context = await launchConsoleBrowser(profile);
        try {
          const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
          const key: string = saved.apiKey;
          const admin: string = saved.platformApiKey;
          const api = (url: string, as = key) => call(base, as, 'GET', url);

          const startedMs = Date.now();
          const step = (what: string) => t.diagnostic(`${what}: ${Date.now() - startedMs} ms`);
          const seeded = await seed(base, key);
          // Every outcome recorded and every webhook delivered: the report holds still while it is compared.
          await until(
            'every payout final and its events delivered',
            async () => {
              const statuses = await Promise.all(
                seeded.map(async (id) => (await api(`/v1/payments/${id}`)).json.status as string),
              );
              if (!statuses.every((s) => FINAL.has(s))) return undefined;
              const pending = await api('/v1/events?status=pending');
              return pending.json.data.length === 0 && statuses.includes('reversed') ? true : undefined;
            },
            WAITS,
          );
          step('seeded and final');
          const payments: Seeded[] = await Promise.all(
            seeded.map(async (id) => (await api(`/v1/payments/${id}`)).json),
          );

          const page = context.pages()[0] ?? (await context.newPage());
          await page.addInitScript(() =>
            document.addEventListener('securitypolicyviolation', (e) =>
              console.error(`csp-violation ${e.violatedDirective} ${e.blockedURI} on ${location.href}`),
            ),
          );
          const problems: string[] = [];
          page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
          page.on('pageerror', (error) => problems.push(String(error)));
          await page.goto(`${base}/console`);
          await page.getByLabel('API key').fill(key);
          await page.getByRole('button', { name: 'Sign in' }).click();
          // The overview is the home screen, today by the hour.
          await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
          assert.equal(new URL(page.url()).pathname, '/console/overview');
          const today = caracasDay(new Date());
          const report: PayoutReport = (await api(`/v1/reports/payouts?from=${today}&to=${today}&granularity=hour`))
            .json;
          assert.equal(report.totals.count, seeded.length);
          await page
            .locator('table[aria-label="Payouts by status, per hour"]')
            .waitFor({ state: 'attached', timeout: WAIT_MS });
          await assertTablesMatch(page, report);
          assert.equal(await page.locator('canvas[role="img"][aria-label]').count(), 9);
          if (process.env.CONSOLE_SCREENSHOT)
            await page.screenshot({ path: process.env.CONSOLE_SCREENSHOT, fullPage: true });

          step('tenant overview compared');
          await clickThrough(page, report, payments);
          step('click-through');
          await accessibility(page, 'the tenant overview');
          step('axe-core on the tenant overview');
          await platformView(page, base, admin, today, payments);
          await accessibility(page, 'the platform overview');
          step('platform overview');
          assert.deepEqual(problems, []);
        } finally {
          await tearDown({ context, service, database, profile, dataDir });
        }
      },
    );
  },
);

async function seed(base: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, [nationalId, bankCode]] of SEEDS.entries()) {
    const quote = await call(base, key, 'POST', '/v1/quotes', {
      deliver: { asset: 'BS', amount: 1_000_000 + i * 10_101 },
    });
    assert.equal(quote.status, 201, quote.text);
    const made = await call(
      base,
      key,
      'POST',
      '/v1/payouts',
      {
        quoteId: quote.json.id,
        method: 'pago_movil',
        sender: SENDER,
        beneficiary: { fullName: 'María Pérez', nationalId, bankCode, phone: `0414123456${i}` },
      },
      { 'idempotency-key': `overview-${i}` },
    );
    assert.equal(made.status, 201, made.text);
    ids.push(made.json.id);
  }
  return ids;
}

/** The busiest bucket of a report, and the ids of the seeded payments of a status created in it. */
function busiestBucket(report: PayoutReport, payments: Seeded[]) {
  const index = report.buckets.reduce((best, b, i) => (b.count > report.buckets[best]!.count ? i : best), 0);
  const bucket = report.buckets[index]!;
  const inBucket = (status: ReportStatus) =>
    payments
      .filter(
        (p) =>
          p.status === status &&
          Date.parse(p.created_at) >= Date.parse(bucket.start) &&
          Date.parse(p.created_at) < Date.parse(bucket.end),
      )
      .map((p) => p.id)
      .sort();
  return { index, bucket, inBucket };
}

/** A click on the settled part of the bar of bucket `index` in the status chart. */
async function clickSettledBar(page: Page, report: PayoutReport, index: number): Promise<void> {
  // uPlot's x range is the buckets with half a bucket on each side, its y range 0 to 1.1 × the tallest bar.
  const plot = page.locator('section[aria-label="Payouts by status, per hour"] .u-over').first();
  const box = (await plot.boundingBox())!;
  const tallest = Math.max(...report.buckets.map((b) => b.count));
  const x = (box.width * (index + 0.5)) / report.buckets.length;
  const y = box.height * (1 - report.buckets[index]!.byStatus.settled.count / 2 / (tallest * 1.1));
  assert.equal(STACK_ORDER[0], 'settled');
  await plot.click({ position: { x, y } });
}

/**
 * A click on the settled part of the busiest bucket's bar, then on the failed count in its table row:
 * each opens the statement of exactly that bucket and status.
 */
async function clickThrough(page: Page, report: PayoutReport, payments: Seeded[]): Promise<void> {
  const { index, bucket, inBucket } = busiestBucket(report, payments);
  assert.ok(bucket.byStatus.settled.count > 0 && bucket.byStatus.failed.count > 0, JSON.stringify(bucket));
  await clickSettledBar(page, report, index);
  assert.deepEqual((await statementIds(page)).sort(), inBucket('settled'));
  const address = new URL(page.url());
  assert.deepEqual(Object.fromEntries(address.searchParams), {
    status: 'settled',
    createdFrom: bucket.start,
    createdBefore: bucket.end,
  });
  assert.equal(await page.getByLabel('Status', { exact: true }).inputValue(), 'settled');
  // Clearing the created range shows every settled payment again.
  await page.getByRole('button', { name: 'Clear created range' }).click();
  await page.getByText('Created from').waitFor({ state: 'detached' });
  assert.equal(new URL(page.url()).search, '');

  // The table's link: back to the overview (its range kept in the address), the failed count of that row.
  await page.goBack();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
  await page.getByText('Table: Payouts by status, per hour').click();
  const row = page.getByRole('table', { name: 'Payouts by status, per hour' }).locator('tbody tr').nth(index);
  await row
    .locator('td')
    .nth(1 + REPORT_STATUSES.indexOf('failed'))
    .getByRole('link')
    .click();
  assert.deepEqual((await statementIds(page)).sort(), inBucket('failed'));
  assert.equal(inBucket('failed').length, bucket.byStatus.failed.count);
  await page.goBack();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
  await page
    .locator('table[aria-label="Payouts by status, per hour"]')
    .waitFor({ state: 'attached', timeout: WAIT_MS });
}

/** axe-core on the screen with every table behind a chart opened. */
async function accessibility(page: Page, what: string): Promise<void> {
  const closed = page.locator('details:not([open]) > summary');
  while ((await closed.count()) > 0) await closed.first().click();
  assert.deepEqual(await accessibilityViolations(page), [], what);
}

/** The platform key: the same report over every tenant (test mode), then one tenant, and the cards. */
async function platformView(page: Page, base: string, admin: string, today: string, payments: Seeded[]): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').fill(admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
  const all: PayoutReport = (
    await call(base, admin, 'GET', `/v1/reports/payouts?from=${today}&to=${today}&granularity=hour&mode=test`)
  ).json;
  assert.equal(all.tenantId, null);
  await page
    .locator('table[aria-label="Payouts by status, per hour"]')
    .waitFor({ state: 'attached', timeout: WAIT_MS });
  await assertTablesMatch(page, all);
  // Over every tenant together there is no one statement to open: no bar or count links, and the screen says why.
  assert.equal(await page.locator('table[aria-label="Payouts by status, per hour"] a').count(), 0);
  await page.getByText('pick a tenant to open its statement').waitFor();
  // The cards: no anomaly is open, the rails are listed, no reconciliation has run.
  await page
    .getByRole('region', { name: 'Open anomalies' })
    .getByText('0', { exact: true })
    .waitFor({ timeout: WAIT_MS });
  await page
    .getByRole('region', { name: 'Rails' })
    .getByText(/rails: \d+ healthy/)
    .waitFor({ timeout: WAIT_MS });
  await page
    .getByRole('region', { name: 'Last reconciliation run' })
    .getByText(/No run yet|clean|discrepanc|queued|running/)
    .waitFor({ timeout: WAIT_MS });
  // The sandbox alone gives no statement: the bank-side card says how to check one.
  await page
    .getByRole('region', { name: 'Last bank-side check' })
    .getByText("No bank connector: post a rail's statement to check it.")
    .waitFor({ timeout: WAIT_MS });

  // One tenant and then live mode: the address and the tables follow.
  const tenants = (await call(base, admin, 'GET', '/v1/admin/tenants?limit=100')).json.data as Array<{
    id: string;
    name: string;
  }>;
  const tenant = tenants[0]!;
  await page.getByLabel('Tenant', { exact: true }).selectOption(tenant.id);
  await until(
    'the overview of one tenant',
    async () => (new URL(page.url()).searchParams.get('tenantId') === tenant.id ? true : undefined),
    WAITS,
  );
  const one: PayoutReport = (
    await call(
      base,
      admin,
      'GET',
      `/v1/reports/payouts?from=${today}&to=${today}&granularity=hour&mode=test&tenantId=${tenant.id}`,
    )
  ).json;
  await until(
    'the tables of one tenant',
    async () => {
      const rows = await tableRows(page, 'Prefunded balance and credit drawn');
      return JSON.stringify(rows) === JSON.stringify(expectedTables(one)['Prefunded balance and credit drawn'])
        ? true
        : undefined;
    },
    WAITS,
  );
  await assertTablesMatch(page, one);
  await platformClickThrough(page, one, payments, tenant.id);
}

/** The platform's bar of one tenant opens that tenant's statement through the admin API: the bucket's payments of that status, no more. */
async function platformClickThrough(
  page: Page,
  report: PayoutReport,
  payments: Seeded[],
  tenantId: string,
): Promise<void> {
  const { index, bucket, inBucket } = busiestBucket(report, payments);
  assert.equal(inBucket('settled').length, bucket.byStatus.settled.count);
  await clickSettledBar(page, report, index);
  assert.deepEqual((await statementIds(page)).sort(), inBucket('settled'));
  const address = new URL(page.url());
  assert.equal(address.pathname, `/console/tenants/${tenantId}/payments`);
  assert.deepEqual(Object.fromEntries(address.searchParams), {
    mode: 'test',
    status: 'settled',
    createdFrom: bucket.start,
    createdBefore: bucket.end,
  });
  await page.getByText('test mode, read with the platform key').waitFor();
  // A row opens the platform's view of that payment.
  const first = page.locator('table tbody tr td:nth-child(2) a').first();
  assert.equal(await first.getAttribute('href'), `/console/tenants/${tenantId}/payments/${await first.textContent()}`);
  await accessibility(page, "the platform's statement of one tenant");
  await page.goBack();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
  await page
    .locator('table[aria-label="Payouts by status, per hour"]')
    .waitFor({ state: 'attached', timeout: WAIT_MS });
  assert.ok(
    (await page.locator('table[aria-label="Payouts by status, per hour"] a').count()) > 0,
    'the counts of one tenant link to its statement',
  );
}
