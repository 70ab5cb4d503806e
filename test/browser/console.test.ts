// The operator console in a real browser (the system's Chromium) against the real service, started
// as `npm start` starts it on a fresh database with its first-start sandbox tenant: sign in, find a
// payout made through the API, read its timeline, export the statement, retry a dead event and see it
// requeued and delivered, make a test payout from the sandbox screen; with the platform key, see which
// key made a payment and read the audit trail; the strict CSP is served and obeyed (no violation), and
// the key never appears in a URL.
// requeued and delivered, make a test payout from the sandbox screen, resolve an anomaly on the platform
// key's Needs review screen, see the rail that carried a payment and the rail-health screen (checked
// by axe-core); the strict CSP is served and obeyed (no violation), and the key never
// appears in a URL.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DOCS_CSP } from '../../src/http/plugins/openapi.ts';
import { CONSOLE_CSP } from '../../src/http/routes/console.ts';
import { accessibilityViolations, call, CHROMIUM, launchConsoleBrowser, tearDown } from '../support/console-browser.ts';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { startService } from '../support/process.ts';
import { until } from '../support/until.ts';

/** Bound of every wait on the service (settlement, dead queue, delivery) and on the page. */
const WAIT_MS = 30_000;

const UNKNOWN_PAYMENT = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
const SENDER = {
  nationalId: 'V11222333',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '04121234567',
  email: 'ana@example.com',
};

const WAITS = { timeoutMs: WAIT_MS, intervalMs: 100 };

describe(
  `the operator console in Chromium, on ${ENGINE}`,
  {
    skip: existsSync(CHROMIUM)
      ? false
      : `${CHROMIUM} is absent: install the Debian package chromium to run the browser test`,
  },
  () => {
    it(
      "signs in, shows a payout's timeline, exports the statement, and retries a dead event",
      { timeout: 120_000 },
      async () => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-console-'));
        const profile = mkdtempSync(path.join(tmpdir(), 'bds-chromium-'));
        const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
        const service = await startService({
          DATA_DIR: dataDir,
          DATABASE_URL: database?.url ?? '',
          SANDBOX_SETTLE_DELAY_MS: '200',
          WEBHOOK_BACKOFF_SCALE: '0',
          DISPATCHER_INTERVAL_MS: '50',
        });
        const base = service.baseUrl;
        const context = await launchConsoleBrowser(profile);
        try {
          const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
          const key: string = saved.apiKey;
          const admin: string = saved.platformApiKey;
          const api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) =>
            call(base, key, method, url, body, headers);
          const payout = async (nationalId: string, reference: string) => {
            const quote = await api('POST', '/v1/quotes', { deliver: { asset: 'BS', amount: 1_234_567 } });
            assert.equal(quote.status, 201, quote.text);
            const made = await api(
              'POST',
              '/v1/payouts',
              {
                quoteId: quote.json.id,
                method: 'pago_movil',
                sender: SENDER,
                beneficiary: { fullName: 'María Pérez', nationalId, bankCode: '0102', phone: '04141234567' },
              },
              { 'idempotency-key': reference },
            );
            assert.equal(made.status, 201, made.text);
            return made.json.id as string;
          };
          const eventOf = (paymentId: string, status: string) =>
            until(
              `an event of ${paymentId} ${status}`,
              async () => {
                const list = await api('GET', `/v1/events?paymentId=${paymentId}`);
                return list.json.data.find((e: { status: string }) => e.status === status) as
                  { id: string; attempts: number } | undefined;
              },
              WAITS,
            );

          // A payout delivered to the sink, then one whose event dies at the failing receiver.
          const delivered = await payout('V99990001', 'console-test-1');
          const published = await eventOf(delivered, 'published');
          const endpoint = (url: string) =>
            call(base, admin, 'PUT', `/v1/admin/tenants/${saved.tenantId}/webhook-endpoint`, { mode: 'test', url });
          assert.equal((await endpoint(`${base}/v1/sandbox/webhooks/failing`)).status, 200);
          const failing = await payout('V99990001', 'console-test-2');
          const dead = await eventOf(failing, 'dead');
          assert.equal(dead.attempts, 12);
          assert.equal((await endpoint(`${base}/v1/sandbox/webhooks/sink`)).status, 200);

          const page = context.pages()[0] ?? (await context.newPage());
          const problems: string[] = [];
          const urls: string[] = [];
          page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
          page.on('pageerror', (error) => problems.push(String(error)));
          page.on('request', (request) => urls.push(request.url()));
          page.on('framenavigated', (frame) => urls.push(frame.url()));

          const answer = await page.goto(`${base}/console`);
          assert.equal(answer?.status(), 200);
          const headers = answer!.headers();
          assert.equal(headers['content-security-policy'], CONSOLE_CSP);
          assert.equal(headers['x-content-type-options'], 'nosniff');
          assert.equal(headers['referrer-policy'], 'no-referrer');

          // Sign in with the sandbox tenant's key.
          await page.getByLabel('API key').fill(key);
          await page.getByRole('button', { name: 'Sign in' }).click();
          // The overview is the home screen; the statement is one link away.
          await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
          assert.equal(new URL(page.url()).pathname, '/console/overview');
          await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Payments' }).click();
          await page.getByRole('heading', { name: 'Payments', level: 1 }).waitFor({ timeout: WAIT_MS });

          // The statement lists the payout made through the API; its page shows the timeline.
          await page.getByRole('link', { name: delivered }).click();
          await page.getByRole('heading', { name: 'Payment', level: 1 }).waitFor();
          assert.equal(new URL(page.url()).pathname, `/console/payments/${delivered}`);
          const transitions = page.getByRole('table', { name: 'Transitions' });
          await transitions.getByText('ledger_committed').waitFor();
          assert.match(await transitions.innerText(), /api/);
          await page.getByRole('table', { name: 'Ledger entry payout', exact: true }).waitFor();
          await page.getByRole('table', { name: 'Ledger entry payout_settlement' }).waitFor();
          // 12,345.67 Bs delivered and the 1 % fee (123.46 Bs, rounded up): 12,469.13 Bs charged to prefunding.
          assert.match(
            await page.getByRole('table', { name: 'Ledger entry payout', exact: true }).innerText(),
            /prefunding BS\s+12,469\.13 Bs/,
          );
          await page.getByRole('link', { name: `Event ${published.id}` }).waitFor();
          assert.match(
            await page.getByRole('table', { name: 'Delivery attempts' }).innerText(),
            /HTTP 200\s+delivered/,
          );
          await page.getByText('Latest payments to this beneficiary').waitFor();

          // The CSV export arrives as a download made with the key in a header, not in a URL.
          await page.getByRole('link', { name: 'Payments', exact: true }).click();
          await page.getByRole('heading', { name: 'Payments', level: 1 }).waitFor();
          const [download] = await Promise.all([
            page.waitForEvent('download'),
            page.getByRole('button', { name: 'Export CSV' }).click(),
          ]);
          assert.equal(download.suggestedFilename(), 'payments-all-all.csv');
          const csv = readFileSync(await download.path(), 'utf8');
          assert.match(csv, /^id,customer_id,beneficiary_id,status/);
          assert.ok(csv.includes(delivered) && csv.includes(failing), csv);

          // The dead event, retried from the events screen after a confirmation.
          await page.getByRole('link', { name: 'Events' }).click();
          await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();
          assert.equal(
            await page.getByRole('button', { name: 'dead', exact: true }).getAttribute('aria-pressed'),
            'true',
          );
          await page.getByRole('button', { name: `Retry event ${dead.id}` }).click();
          const dialog = page.getByRole('dialog', { name: `Retry event ${dead.id}?` });
          await dialog.waitFor();
          await dialog.getByRole('button', { name: 'Retry now' }).click();
          await page
            .getByRole('status')
            .getByText(`Event ${dead.id} requeued: now pending`)
            .waitFor({ timeout: WAIT_MS });
          // Requeued, the event reaches the sink again: published, one attempt more.
          const redelivered = await eventOf(failing, 'published');
          assert.equal(redelivered.attempts, 13);
          await page.getByRole('button', { name: 'published', exact: true }).click();
          await page.getByRole('link', { name: dead.id, exact: true }).waitFor({ timeout: WAIT_MS });

          // The sandbox: the sink's verified deliveries, and a test payout followed until it resolves
          // (V99990006 is accepted, then fails at the rail; the reaper finds out).
          await page.getByRole('link', { name: 'Sandbox' }).click();
          await page.getByRole('heading', { name: 'Sandbox', level: 1 }).waitFor();
          await page.getByRole('table', { name: 'Sink deliveries' }).getByText('verified').first().waitFor();
          await page.getByLabel('Test national id').selectOption('V99990006');
          await page.getByLabel('Delivered amount (Bs)').fill('1,500.00');
          await page.getByRole('button', { name: 'Quote, register and pay out' }).click();
          await page.getByText('Resolved.').waitFor({ timeout: WAIT_MS });
          const outcome = await page.locator('.card').innerText();
          assert.match(outcome, /failed\s+invalid_destination_account/);
          assert.match(outcome, /1,500\.00 Bs/);

          // A contradiction: a payout failed at once (V99990004), then the rail says it settled. The
          // reaper records an anomaly and changes nothing.
          const contradicted = await payout('V99990004', 'console-test-3');
          const notice = await api('POST', '/v1/sandbox/rail-notifications', {
            paymentId: contradicted,
            status: 'settled',
            bankReference: '000000000777',
          });
          assert.equal(notice.status, 202, notice.text);
          const anomaly = await until(
            'the anomaly of the contradicted payout',
            async () => {
              const open = await call(base, admin, 'GET', '/v1/admin/anomalies?status=open&mode=test');
              return open.json.data.find((a: { paymentId: string }) => a.paymentId === contradicted) as
                { id: string } | undefined;
            },
            WAITS,
          );

          // The platform key gets the admin screens and is told what it cannot read.
          await page.getByRole('button', { name: 'Sign out' }).click();
          await page.getByLabel('API key').fill(admin);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: WAIT_MS });
          await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Tenants' }).click();
          await page.getByRole('heading', { name: 'Tenants', level: 1 }).waitFor({ timeout: WAIT_MS });
          await page.getByText("It cannot read a tenant's events").waitFor();
          await page.getByRole('link', { name: 'Sandbox' }).click();
          await page.getByRole('heading', { name: 'Sandbox', level: 1 }).waitFor();

          // The platform sees which key made a payment: found by its id from the tenant's page.
          const tenantKeyId: string = (await api('GET', '/v1/tenant/me')).json.apiKeyId;
          await page.getByLabel('Payment id').fill(delivered);
          await page.getByRole('button', { name: 'Open payment' }).click();
          await page.getByRole('heading', { name: 'Payment', level: 1 }).waitFor();
          assert.equal(new URL(page.url()).pathname, `/console/tenants/${saved.tenantId}/payments/${delivered}`);
          await page.getByText(tenantKeyId).waitFor();
          await page.getByRole('table', { name: 'Transitions' }).getByText('ledger_committed').waitFor();
          // The rail that carried it, linked to the rail-health screen.
          await page.getByRole('link', { name: 'sandbox', exact: true }).waitFor();

          // The audit trail: the platform key's two endpoint changes above and the tenant key's retry
          // from the events screen; then only what the tenant's key did, from the payment's page.
          await page.getByRole('link', { name: 'Audit trail' }).click();
          await page.getByRole('heading', { name: 'Audit trail', level: 1 }).waitFor();
          const trail = page.getByRole('table', { name: 'Audit trail' });
          await trail.getByText('event.retry', { exact: true }).waitFor({ timeout: WAIT_MS });
          assert.equal(await trail.getByText('webhook_endpoint.set', { exact: true }).count(), 2);
          assert.match(await trail.innerText(), /\/v1\/sandbox\/webhooks\/failing/);
          await page.goBack();
          await page.getByRole('link', { name: 'What else this key did' }).click();
          await page.getByRole('heading', { name: 'Audit trail', level: 1 }).waitFor();
          assert.equal(await page.getByLabel('Actor key id').inputValue(), tenantKeyId);
          await trail.getByText('event.retry', { exact: true }).waitFor({ timeout: WAIT_MS });
          assert.equal(await trail.locator('tbody tr').count(), 1, await trail.innerText());
          assert.equal(await trail.getByText('webhook_endpoint.set', { exact: true }).count(), 0);
          // Needs review: the open anomaly with both sides, resolved with a note.
          await page.getByRole('link', { name: 'Needs review' }).click();
          await page.getByRole('heading', { name: 'Needs review', level: 1 }).waitFor();
          // Live money first: a test program's anomaly is shown when test is asked for, never by default.
          await page.getByText('Nothing needs review.').waitFor({ timeout: WAIT_MS });
          await page.getByLabel('Mode').selectOption('test');
          const card = page.getByRole('article', { name: 'The rail says settled; we recorded failed' });
          await card.waitFor({ timeout: WAIT_MS });
          const evidence = await card.getByRole('table', { name: `Evidence of anomaly ${anomaly.id}` }).innerText();
          assert.match(evidence, /status\s+failed\s+settled\s+differs/);
          assert.match(evidence, /bankReference\s+—\s+000000000777/);
          assert.match(await card.innerText(), new RegExp(contradicted));
          await card
            .getByLabel('Resolution note')
            .fill('Bank statement checked: the transfer did not leave. The rail was wrong.');
          await card.getByRole('button', { name: 'Resolve' }).click();
          await page.getByRole('status').getByText(`Anomaly ${anomaly.id} resolved.`).waitFor({ timeout: WAIT_MS });
          await page.getByText('Nothing needs review.').waitFor({ timeout: WAIT_MS });
          const stored = await call(base, admin, 'GET', `/v1/admin/anomalies/${anomaly.id}`);
          assert.equal(stored.json.status, 'resolved');
          assert.equal(
            stored.json.resolutionNote,
            'Bank statement checked: the transfer did not leave. The rail was wrong.',
          );
          assert.equal(stored.json.resolvedBy, (await call(base, admin, 'GET', '/v1/tenant/me')).json.apiKeyId);
          assert.equal(
            (await api('GET', `/v1/payments/${contradicted}`)).json.status,
            'failed',
            'the payment is as it was',
          );

          // Rail health: the sandbox with its modes, breaker and health, what it sent; no routing rule yet.
          await page.getByRole('link', { name: 'Rail health' }).click();
          await page.getByRole('heading', { name: 'Rail health', level: 1 }).waitFor();
          const rails = page.getByRole('table', { name: 'Rails' });
          await rails.waitFor({ timeout: WAIT_MS });
          const sandboxRow = await rails.getByRole('row', { name: /sandbox/ }).innerText();
          assert.match(sandboxRow, /modes: test; instruments: pago_movil, transferencia/);
          assert.match(sandboxRow, /closed/);
          assert.match(sandboxRow, /answers/);
          await page.getByText('No routing rule').waitFor();
          assert.deepEqual(await accessibilityViolations(page), [], 'axe finds nothing on the rail-health screen');

          assert.deepEqual(problems, [], 'no script error and no CSP violation');
          assert.ok(urls.length > 0);
          for (const url of urls) {
            assert.ok(!url.includes(key) && !url.includes(admin), `a key in the URL ${url}`);
          }
          const logLines = service
            .output()
            .split('\n')
            .filter((line) => line.startsWith('{'));
          assert.doesNotMatch(
            logLines.join('\n'),
            new RegExp(`${key}|${admin}`),
            'no key in the JSON log (the first start prints the keys once, as text)',
          );
        } finally {
          await tearDown({ context, service, database, profile, dataDir });
        }
      },
    );

    it(
      'follows no crafted id into an API path, and serves /docs under its CSP, unframeable',
      { timeout: 120_000 },
      async () => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-console-'));
        const profile = mkdtempSync(path.join(tmpdir(), 'bds-chromium-'));
        const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
        const service = await startService({ DATA_DIR: dataDir, DATABASE_URL: database?.url ?? '' });
        const base = service.baseUrl;
        const context = await launchConsoleBrowser(profile);
        try {
          const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
          const page = context.pages()[0] ?? (await context.newPage());
          // Every CSP violation of every page and frame, reported by the browser itself.
          await context.addInitScript(() =>
            document.addEventListener('securitypolicyviolation', (e) =>
              console.error(`csp-violation ${e.violatedDirective} ${e.blockedURI} on ${location.href}`),
            ),
          );
          const errors: string[] = [];
          const apiCalls: string[] = [];
          page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
          page.on('pageerror', (error) => errors.push(String(error)));
          page.on('request', (request) => {
            const url = new URL(request.url());
            if (url.pathname.startsWith('/v1/') || !url.pathname.startsWith('/console')) apiCalls.push(url.pathname);
          });
          const signIn = async (key: string, screen: string) => {
            await page.goto(`${base}/console`);
            await page.getByLabel('API key').fill(key);
            await page.getByRole('button', { name: 'Sign in' }).click();
            await page.getByRole('heading', { name: screen, level: 1 }).waitFor({ timeout: WAIT_MS });
            // The first screen's own calls are over before the crafted links are counted.
            await page.waitForLoadState('networkidle');
          };
          const crafted = async (paths: string[]) => {
            for (const screen of paths) {
              apiCalls.length = 0;
              await page.goto(`${base}/console${screen}`);
              await page
                .getByRole('heading', { name: 'Not a screen of this console', level: 1 })
                .waitFor({ timeout: WAIT_MS });
              // The page signs in again from the tab's storage, and calls nothing else.
              assert.deepEqual(apiCalls, ['/v1/tenant/me'], screen);
            }
          };

          await signIn(saved.apiKey, 'Overview');
          await crafted([
            '/payments/..%2F..%2Fadmin%2Ftenants',
            `/payments/${UNKNOWN_PAYMENT}%2F..%2F..%2F..%2Fv1%2Fadmin%2Ftenants`,
            '/events/..%2Fretry-dead',
            '/events/42%2F..%2F..%2Fadmin%2Frates',
            '/beneficiaries/%2E%2E%2F..%2Fadmin%2Frates',
          ]);
          // An id of the right shape is still a screen: it asks for that payment, and for nothing else.
          apiCalls.length = 0;
          await page.goto(`${base}/console/payments/${UNKNOWN_PAYMENT}`);
          await page.getByText('resource_not_found').first().waitFor({ timeout: WAIT_MS });
          assert.ok(apiCalls.includes(`/v1/payments/${UNKNOWN_PAYMENT}`), apiCalls.join(' '));
          assert.ok(
            apiCalls.every((p) => p === '/v1/tenant/me' || p.startsWith(`/v1/payments/${UNKNOWN_PAYMENT}`)),
            apiCalls.join(' '),
          );

          await page.getByRole('button', { name: 'Sign out' }).click();
          await signIn(saved.platformApiKey, 'Overview');
          await crafted([
            '/tenants/..%2F..%2Fadmin%2Frates',
            '/tenants/%2E%2E%2Fapi-keys',
            `/tenants/${UNKNOWN_PAYMENT}%2Fapi-keys`,
          ]);

          // The API reference: rendered, its operations listed and tried on this origin, under its CSP.
          const docs = await page.goto(`${base}/docs`);
          assert.equal(docs?.headers()['content-security-policy'], DOCS_CSP);
          assert.equal(docs?.headers()['x-frame-options'], 'DENY');
          await page
            .locator('.swagger-ui .info .title')
            .getByText('Bolivar Disbursement Service')
            .waitFor({ timeout: WAIT_MS });
          const me = page
            .locator('.opblock', { has: page.locator('.opblock-summary-path[data-path="/v1/tenant/me"]') })
            .first();
          await me.locator('.opblock-summary').click();
          await me.getByRole('button', { name: 'Try it out' }).click();
          await me.getByRole('button', { name: 'Execute' }).click();
          await me.locator('.live-responses-table .response-col_status').getByText('401').waitFor({ timeout: WAIT_MS });
          assert.deepEqual(
            errors.filter((e) => !/status of (401|404)/.test(e)),
            [],
            'no script error and no CSP violation on the console or /docs',
          );

          // Framed by another page, even one of the same origin, neither /docs nor the console loads; a
          // route without those headers (the control) does, so the refusal is theirs.
          await page.goto(`${base}/health/live`);
          await page.setContent(
            ['/docs', '/console', '/health/live'].map((p) => `<iframe src="${base}${p}"></iframe>`).join(''),
          );
          const framed = await until(
            'the three frames settled',
            async () => {
              const urls = page
                .frames()
                .slice(1)
                .map((frame) => frame.url());
              return urls.length === 3 && urls.every((url) => url !== '' && url !== 'about:blank') ? urls : undefined;
            },
            WAITS,
          );
          assert.deepEqual(framed, [
            'chrome-error://chromewebdata/',
            'chrome-error://chromewebdata/',
            `${base}/health/live`,
          ]);
        } finally {
          await tearDown({ context, service, database, profile, dataDir });
        }
      },
    );
  },
);
