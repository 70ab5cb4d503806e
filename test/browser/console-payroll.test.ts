// The payroll screen in a real browser (the system's Chromium) against the real service, started as
// `npm start` starts it with its first-start sandbox tenant: a CSV of payouts is uploaded through the
// file input, checked row by row before anything is sent (an invalid row blocks Submit; a row only
// the service refuses is marked from its 400), submitted as a payout batch whose first answer is
// lost on the way back (Submit pressed again pays nothing twice), and followed until completed, its
// counts and items those of GET /v1/payout-batches/{id}; then the batch from the list. axe-core finds
// nothing on the preview and the progress; no CSP violation, no script error. Against a service bound
// to 2 items a batch, the file is split again at that bound and followed as several batches.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { formatMinor } from '../../console/format.ts';
import { PAYROLL_COLUMNS, PAYROLL_TEMPLATE } from '../../console/payroll.ts';
import { accessibilityViolations, call, CHROMIUM, launchConsoleBrowser, tearDown } from '../support/console-browser.ts';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { startService } from '../support/process.ts';
import { until } from '../support/until.ts';

/** Bound of every wait on the service (the batch completing) and on the page. */
const WAIT_MS = 30_000;
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
const SENDER = 'V11222333,Ana,Rojas,04121234567,ana@example.com';
/** No beneficiary has this id: its item is refused (resource_not_found), as a single payout would be. */
const UNKNOWN_BENEFICIARY = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

/** A payroll file: the header and the rows, as a spreadsheet exports them. */
const payroll = (...rows: string[]) => Buffer.from(`${[PAYROLL_COLUMNS.join(','), ...rows].join('\r\n')}\r\n`, 'utf8');

// V99990001 settles at once, V99990004 fails with beneficiary_mismatch (docs/sandbox.md). Amounts
// are above the rail floor (925.00 Bs) and under the Pago Móvil cap (100,000.00 Bs).
const SETTLES = `pay-1,1500.50,pago_movil,,"Pérez, María",V99990001,0102,04141234567,,${SENDER}`;
const MISMATCH = `pay-2,2250,pago_movil,,José Díaz,V99990004,0102,04141234568,,${SENDER}`;
/** No sender columns: the program's default sender, set below. */
const DEFAULT_SENDER = 'pay-3,1000.05,pago_movil,,Luis Gómez,V99990001,0105,04161234567,,,,,,';
const REFUSED = `pay-4,1234.56,pago_movil,${UNKNOWN_BENEFICIARY},,,,,,${SENDER}`;
const INVALID = 'pay-5,12.345,cheque,,,,,,,V11222333,Ana,,,';
const FIXED = `pay-5,990,pago_movil,,Rosa Lima,V99990001,0108,04241234567,,${SENDER}`;
/** Well-formed for the console, refused by the service: a phone is 04 and 9 digits. */
const BAD_PHONE = `pay-5,990,pago_movil,,Rosa Lima,V99990001,0108,0424123,,${SENDER}`;

async function upload(page: Page, name: string, file: Buffer, status: RegExp): Promise<void> {
  await page.getByLabel('Payroll file (CSV)').setInputFiles({ name, mimeType: 'text/csv', buffer: file });
  await page.locator('.payroll-status').filter({ hasText: status }).waitFor({ timeout: WAIT_MS });
}

/** The preview's row `row` (spreadsheet numbering): its cells' text. */
const previewRow = (page: Page, row: number) =>
  page
    .getByRole('table', { name: 'Payroll preview' })
    .getByRole('row', { name: new RegExp(`^${row} `) })
    .innerText();

describe(
  `the payroll screen in Chromium, on ${ENGINE}`,
  {
    skip: existsSync(CHROMIUM)
      ? false
      : `${CHROMIUM} is absent: install the Debian package chromium to run the browser test`,
  },
  () => {
    it(
      'previews a payroll file row by row, submits it once, and follows the batch until completed',
      { timeout: 120_000 },
      async () => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-payroll-'));
        const profile = mkdtempSync(path.join(tmpdir(), 'bds-chromium-'));
        const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
        const service = await startService({
          DATA_DIR: dataDir,
          DATABASE_URL: database?.url ?? '',
          SANDBOX_SETTLE_DELAY_MS: '200',
        });
        const base = service.baseUrl;
        const context = await launchConsoleBrowser(profile);
        try {
          const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
          const key: string = saved.apiKey;
          const api = (method: string, url: string, body?: unknown) => call(base, key, method, url, body);
          const defaultSender = await call(
            base,
            saved.platformApiKey,
            'PUT',
            `/v1/admin/tenants/${saved.tenantId}/default-sender`,
            {
              mode: 'test',
              sender: {
                nationalId: 'V20111222',
                firstName: 'Nómina',
                lastName: 'Central',
                phone: '04141112233',
                email: 'nomina@example.com',
              },
            },
          );
          assert.equal(defaultSender.status, 200, defaultSender.text);

          const page = context.pages()[0] ?? (await context.newPage());
          await context.addInitScript(() =>
            document.addEventListener('securitypolicyviolation', (e) =>
              console.error(`csp-violation ${e.violatedDirective} ${e.blockedURI}`),
            ),
          );
          const problems: string[] = [];
          page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
          page.on('pageerror', (error) => problems.push(String(error)));
          const posts: string[] = [];
          page.on(
            'request',
            (request) =>
              request.method() === 'POST' &&
              posts.push(`${new URL(request.url()).pathname} ${request.headers()['idempotency-key']}`),
          );

          await page.goto(`${base}/console`);
          await page.getByLabel('API key').fill(key);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
          await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Payroll' }).click();
          await page.getByRole('heading', { name: 'Payroll', level: 1 }).waitFor();

          // The template, downloaded from the page, is the documented one.
          await page.getByText('CSV template and columns').click();
          const [download] = await Promise.all([
            page.waitForEvent('download'),
            page.getByRole('button', { name: 'Download template' }).click(),
          ]);
          assert.equal(download.suggestedFilename(), 'payroll-template.csv');
          assert.equal(readFileSync(await download.path(), 'utf8'), PAYROLL_TEMPLATE);

          // One invalid row: named with its problems, and nothing can be sent.
          await upload(
            page,
            'payroll.csv',
            payroll(SETTLES, MISMATCH, DEFAULT_SENDER, REFUSED, INVALID),
            /5 rows, 4 valid, 1 with problems/,
          );
          const invalid = await previewRow(page, 6);
          assert.match(invalid, /amount: "12\.345" has more than 2 decimals/);
          assert.match(invalid, /method: "cheque" is not pago_movil or transferencia/);
          assert.match(invalid, /beneficiary: neither beneficiary_id nor the beneficiary/);
          assert.match(invalid, /sender: sender_last_name, sender_phone, sender_email missing/);
          assert.match(
            await previewRow(page, 2),
            /pay-1\s+1,500\.50 Bs\s+pago_movil\s+Pérez, María · V99990001.*\s+ok/,
          );
          assert.equal(await page.getByRole('button', { name: 'Submit 5 payouts' }).isDisabled(), true);
          await page.getByLabel('Show only rows with problems').check();
          assert.equal(await page.getByRole('table', { name: 'Payroll preview' }).locator('tbody tr').count(), 1);
          assert.deepEqual(
            await accessibilityViolations(page),
            [],
            'axe finds nothing on the preview with a row in error',
          );
          await page.getByLabel('Show only rows with problems').uncheck();

          // Valid for the console, refused by the service: its 400 marks the row, nothing is written.
          await upload(
            page,
            'payroll-2.csv',
            payroll(SETTLES, MISMATCH, DEFAULT_SENDER, REFUSED, BAD_PHONE),
            /5 rows, 5 valid, 0 with problems/,
          );
          await submit(page, 5);
          await page
            .locator('.payroll-status')
            .filter({ hasText: /5 rows, 4 valid, 1 with problems\. The service refused a batch/ })
            .waitFor({ timeout: WAIT_MS });
          assert.match(await previewRow(page, 6), /phone: /);
          assert.equal(await page.getByRole('button', { name: 'Submit 5 payouts' }).isDisabled(), true);
          assert.equal((await api('GET', '/v1/payout-batches')).json.data.length, 0);

          // The corrected file. Its batch's first answer is lost on the way back (the service records
          // it); Submit pressed again sends the same key and is answered with the same batch.
          await upload(
            page,
            'payroll-3.csv',
            payroll(SETTLES, MISMATCH, DEFAULT_SENDER, REFUSED, FIXED),
            /5 rows, 5 valid, 0 with problems/,
          );
          let lost = false;
          await page.route('**/v1/payout-batches', async (route) => {
            if (lost || route.request().method() !== 'POST') return route.continue();
            lost = true;
            await route.fetch();
            await route.abort('connectionreset');
          });
          await submit(page, 5);
          await page
            .locator('.payroll-status')
            .filter({ hasText: /Not every batch was sent: submit again/ })
            .waitFor({ timeout: WAIT_MS });
          await page.getByText('network_error').waitFor();
          const recorded = await until(
            'the batch recorded despite the lost answer',
            async () => (await api('GET', '/v1/payout-batches')).json.data[0] as { id: string } | undefined,
            { timeoutMs: WAIT_MS, intervalMs: 100 },
          );
          await submit(page, 5);
          const progress = page.getByRole('region', { name: 'Batch 1 of 1' });
          await progress.getByRole('heading', { name: `Batch 1 of 1: ${recorded.id}` }).waitFor({ timeout: WAIT_MS });
          await progress
            .getByRole('status')
            .filter({ hasText: /^completed 5 of 5 items final/ })
            .waitFor({ timeout: WAIT_MS });
          const batchPosts = posts.filter((p) => p.startsWith('/v1/payout-batches '));
          assert.equal(batchPosts.length, 3, batchPosts.join('\n'));
          assert.equal(batchPosts[1], batchPosts[2], 'the retry sends the same Idempotency-Key');
          assert.notEqual(batchPosts[0], batchPosts[1], 'a new upload, a new key');

          // What the screen shows is what the API answers, and each row paid once.
          const batches = (await api('GET', '/v1/payout-batches')).json.data;
          assert.equal(batches.length, 1);
          const batch = (await api('GET', `/v1/payout-batches/${recorded.id}`)).json;
          assert.equal(batch.status, 'completed');
          assert.deepEqual(
            { settled: batch.counts.settled, failed: batch.counts.failed, refused: batch.counts.refused },
            { settled: 3, failed: 1, refused: 1 },
          );
          assert.equal(batch.totals.settled, String(150050 + 100005 + 99000));
          assert.equal((await api('GET', `/v1/payments?batchId=${recorded.id}`)).json.data.length, 4);
          await checkShown(page, 'Batch 1 of 1', batch);
          const items = progress.getByRole('table', { name: 'Batch 1 of 1 items' });
          assert.match(
            await items.getByRole('row', { name: /pay-2/ }).innerText(),
            /^3\s+pay-2\s+failed\s+2,250\.00 Bs\s+beneficiary_mismatch/,
          );
          assert.match(
            await items.getByRole('row', { name: /pay-4/ }).innerText(),
            /^5\s+pay-4\s+refused\s+.*resource_not_found: .*\s+none$/,
          );
          const settled = batch.items.find((item: { reference: string }) => item.reference === 'pay-1');
          await items.getByRole('link', { name: settled.paymentId }).waitFor();
          assert.equal(await page.getByRole('button', { name: 'Submitted' }).isDisabled(), true);
          assert.deepEqual(await accessibilityViolations(page), [], 'axe finds nothing on the progress');

          // The batch again from the list of batches, and its page.
          await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Payout batches' }).click();
          await page.getByRole('heading', { name: 'Payout batches', level: 1 }).waitFor();
          await page.getByRole('table', { name: 'Payout batches' }).getByRole('link', { name: recorded.id }).click();
          await page.getByRole('heading', { name: 'Payout batch', level: 1 }).waitFor();
          assert.equal(new URL(page.url()).pathname, `/console/batches/${recorded.id}`);
          await page
            .getByRole('region', { name: 'Batch', exact: true })
            .getByRole('status')
            .filter({ hasText: /^completed 5 of 5 items final/ })
            .waitFor({ timeout: WAIT_MS });
          await checkShown(page, 'Batch', batch);
          assert.deepEqual(await accessibilityViolations(page), [], 'axe finds nothing on the batch page');
          await page.getByRole('table', { name: 'Batch items' }).getByRole('link', { name: settled.paymentId }).click();
          await page.getByRole('heading', { name: 'Payment', level: 1 }).waitFor();

          assert.deepEqual(
            problems.filter((p) => !/ERR_CONNECTION_RESET|status of 400/.test(p)),
            [],
            'no script error and no CSP violation (but the answer this test cut, and the 400 it provoked)',
          );
        } finally {
          await tearDown({ context, service, database, profile, dataDir });
        }
      },
    );
  },
);

describe(
  `the payroll screen in Chromium, on ${ENGINE}, with a service bound to 2 items a batch`,
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent` },
  () => {
    it(
      "splits the file again at the service's bound and follows every batch, each row under its own",
      { timeout: 120_000 },
      async () => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-payroll-'));
        const profile = mkdtempSync(path.join(tmpdir(), 'bds-chromium-'));
        const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
        const service = await startService({
          DATA_DIR: dataDir,
          DATABASE_URL: database?.url ?? '',
          SANDBOX_SETTLE_DELAY_MS: '200',
          PAYOUT_BATCH_MAX_ITEMS: '2',
        });
        const base = service.baseUrl;
        const context = await launchConsoleBrowser(profile);
        try {
          const key: string = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')).apiKey;
          const page = context.pages()[0] ?? (await context.newPage());
          const problems: string[] = [];
          page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
          page.on('pageerror', (error) => problems.push(String(error)));
          const keys: string[] = [];
          page.on(
            'request',
            (request) => request.method() === 'POST' && keys.push(request.headers()['idempotency-key'] ?? ''),
          );
          await page.goto(`${base}/console/payroll`);
          await page.getByLabel('API key').fill(key);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.getByRole('heading', { name: 'Payroll', level: 1 }).waitFor({ timeout: WAIT_MS });

          const rows = [1, 2, 3, 4, 5].map(
            (n) => `split-${n},${1000 + n},pago_movil,,Ana Mora,V99990001,0102,0414123456${n},,${SENDER}`,
          );
          await upload(page, 'split.csv', payroll(...rows), /5 rows, 5 valid, 0 with problems/);
          await submit(page, 5);
          for (const n of [1, 2, 3]) {
            await page
              .getByRole('region', { name: `Batch ${n} of 3` })
              .getByRole('status')
              .filter({ hasText: /^completed/ })
              .waitFor({ timeout: WAIT_MS });
          }
          // The first try (5 items) was refused whole (payout_batch_too_large); then 3 batches under a new upload key.
          assert.equal(keys.length, 4, keys.join('\n'));
          const upload3 = keys[1]!.replace(/:0$/, '');
          assert.deepEqual(
            keys.slice(1),
            [0, 1, 2].map((n) => `${upload3}:${n}`),
          );
          assert.notEqual(keys[0], keys[1]);
          const listed = (await call(base, key, 'GET', '/v1/payout-batches')).json.data as Array<{
            itemCount: number;
            counts: { settled: number };
          }>;
          assert.deepEqual(
            listed.map((b) => [b.itemCount, b.counts.settled]),
            [
              [1, 1],
              [2, 2],
              [2, 2],
            ],
          );
          // Each batch's items are named by the rows of the file they came from.
          assert.match(
            await page.getByRole('table', { name: 'Batch 3 of 3 items' }).innerText(),
            /\n6\s+split-5\s+settled\s+1,005\.00 Bs/,
          );
          assert.match(
            await page.getByRole('table', { name: 'Batch 2 of 3 items' }).innerText(),
            /\n4\s+split-3\s+settled[\s\S]*\n5\s+split-4\s+settled/,
          );
          assert.deepEqual(
            problems.filter((p) => !/status of 400/.test(p)),
            [],
            'no script error and no CSP violation',
          );
        } finally {
          await tearDown({ context, service, database, profile, dataDir });
        }
      },
    );
  },
);

async function submit(page: Page, payouts: number): Promise<void> {
  await page.getByRole('button', { name: `Submit ${payouts} payouts` }).click();
  const dialog = page.getByRole('dialog', { name: `Pay ${payouts} payouts?` });
  await dialog.getByRole('button', { name: 'Pay now' }).click();
  await dialog.waitFor({ state: 'hidden', timeout: WAIT_MS });
}

/** The counts table of the batch section `title` says, status by status, what the API answered. */
async function checkShown(
  page: Page,
  title: string,
  batch: { counts: Record<string, number>; totals: Record<string, string> },
): Promise<void> {
  const table = page.getByRole('table', { name: `${title} by status` });
  const shown = (await table.locator('tbody tr').allInnerTexts()).map((row) => row.split(/\s*\t\s*/).join(' | '));
  assert.deepEqual(
    shown,
    STATUSES.map((status) => `${status} | ${batch.counts[status]} | ${formatMinor(batch.totals[status])}`),
  );
}
