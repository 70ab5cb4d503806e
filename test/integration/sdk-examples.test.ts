// The SDK's examples, run as an integrator runs them: plain `node examples/payout.mjs` against the
// service started as `npm start` starts it (first-start sandbox tenant and key), the receiver
// example getting the service's real webhook delivery for that payout, and the TypeScript example
// compiled under --strict against the built package.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Bolivar } from '../../sdk/src/index.ts';
import { signatureHeader } from '../../src/domain/webhook-signature.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { freePort, startService, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/until.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Bound of every wait for a process's output (the payout settles within about a second here). */
const OUTPUT_WAIT_MS = 30_000;
const POLL_MS = 50;

interface Running {
  child: ChildProcessWithoutNullStreams;
  output(): string;
}

function run(script: string, env: Record<string, string>): Running {
  const child = spawn(process.execPath, [script], { cwd: ROOT, env: { ...process.env, ...env } });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return { child, output: () => output };
}

/** The first match of `pattern` in what `running` has printed, bounded by OUTPUT_WAIT_MS. */
function waitFor(what: string, running: Running, pattern: RegExp): Promise<RegExpMatchArray> {
  return until(`${what}: ${pattern}`, () => running.output().match(pattern) ?? undefined, {
    timeoutMs: OUTPUT_WAIT_MS,
    intervalMs: POLL_MS,
    detail: () => running.output(),
  });
}

async function exited(running: Running): Promise<number | null> {
  if (running.child.exitCode !== null) return running.child.exitCode;
  return new Promise((resolve) => running.child.on('exit', (code) => resolve(code)));
}

describe(`the SDK examples against the service as a process, on ${ENGINE}`, () => {
  let database: TestDatabase | undefined;
  let service: ServiceProcess;
  let receiver: Running;
  let receiverUrl: string;
  let apiKey: string;
  let secret: string;

  before(async () => {
    database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-sdk-examples-'));
    service = await startService({
      DATA_DIR: dataDir,
      DATABASE_URL: database?.url ?? '',
      SANDBOX_SETTLE_DELAY_MS: '200',
      REAPER_INTERVAL_MS: '100',
      DISPATCHER_INTERVAL_MS: '50',
    });
    const saved = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
    apiKey = saved.apiKey;

    // The sandbox tenant's test endpoint, moved from the built-in sink to the receiver example.
    const port = await freePort();
    receiverUrl = `http://127.0.0.1:${port}/webhooks/bolivar`;
    const admin = new Bolivar({ apiKey: saved.platformApiKey, baseUrl: service.baseUrl });
    secret = (await admin.admin.tenants.setWebhookEndpoint(saved.tenantId, { mode: 'test', url: receiverUrl })).secret;
    receiver = run('examples/receiver.mjs', { WEBHOOK_SECRET: secret, PORT: String(port) });
    await waitFor('receiver', receiver, /listening on/);
  });

  after(async () => {
    receiver?.child.kill('SIGTERM');
    await service?.stop();
    await database?.drop();
  });

  it('payout.mjs runs in plain node: quote, beneficiary, payout, a settled payment, found by its order id', async () => {
    const payout = run('examples/payout.mjs', { BOLIVAR_API_KEY: apiKey, BOLIVAR_BASE_URL: service.baseUrl });
    assert.equal(await exited(payout), 0, payout.output());
    const text = payout.output();
    assert.match(text, /^quote [0-9a-f-]{36}: deliver 5000000, fee 50000, you pay 5050000 \(BS minor units\)$/m);
    assert.match(text, /^beneficiary [0-9a-f-]{36} \(registered\)$/m);
    const paymentId = text.match(/^payout ([0-9a-f-]{36}): (submitted|settled)$/m)?.[1];
    assert.ok(paymentId, text);
    assert.match(text, new RegExp(`^payment ${paymentId}: settled, bank reference [0-9]+`, 'm'));
    assert.match(text, new RegExp(`^statement: ${paymentId} settled 5000000 BS$`, 'm'));
    assert.equal(text.match(/^statement: /gm)?.length, 1, 'the order id finds this payment only');

    // The service delivered payment.settled to the receiver example, which verified it.
    await waitFor('receiver', receiver, new RegExp(`^payment\\.settled ${paymentId} 5000000 BS ref [0-9]+$`, 'm'));
  });

  it('receiver.mjs answers 401 to a forged, stale or unsigned delivery and 200 once to a signed one (then acknowledges the duplicate)', async () => {
    const body = JSON.stringify({
      id: '900001',
      eventType: 'payment.failed',
      attempt: 1,
      payload: {
        paymentId: 'c0ffee00-0000-4000-8000-000000000001',
        asset: 'BS',
        amount: '100',
        method: 'pago_movil',
        reason: 'bank_unreachable',
        metadata: {},
      },
    });
    const deliver = (headers: Record<string, string>, raw = body) =>
      fetch(receiverUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw });
    const now = String(Date.now());

    assert.equal(
      (await deliver({ 'x-timestamp': now, 'x-signature': signatureHeader('whsec_forged', now, body) })).status,
      401,
    );
    assert.equal(
      (
        await deliver(
          { 'x-timestamp': now, 'x-signature': signatureHeader(secret, now, body) },
          body.replace('"100"', '"999"'),
        )
      ).status,
      401,
    );
    const stale = String(Date.now() - 10 * 60_000);
    assert.equal(
      (await deliver({ 'x-timestamp': stale, 'x-signature': signatureHeader(secret, stale, body) })).status,
      401,
    );
    assert.equal((await deliver({ 'x-timestamp': now })).status, 401);
    await waitFor(
      'receiver',
      receiver,
      /refused: signature_mismatch[\s\S]*refused: signature_mismatch[\s\S]*refused: timestamp_outside_tolerance[\s\S]*refused: missing_signature/,
    );

    const signed = { 'x-timestamp': now, 'x-signature': signatureHeader(secret, now, body), 'x-event-id': '900001' };
    assert.equal((await deliver(signed)).status, 200);
    await waitFor('receiver', receiver, /^payment\.failed c0ffee00-0000-4000-8000-000000000001 bank_unreachable$/m);
    assert.equal((await deliver(signed)).status, 200);
    await waitFor('receiver', receiver, /^duplicate 900001$/m);
  });

  it("docs/webhooks.md's receiver is examples/receiver.mjs, verbatim", () => {
    assert.ok(
      readFileSync(path.join(ROOT, 'docs/webhooks.md'), 'utf8').includes(
        `\`\`\`js\n${readFileSync(path.join(ROOT, 'examples/receiver.mjs'), 'utf8')}\`\`\``,
      ),
    );
  });

  it('reconcile.ts compiles under tsc --strict against the built @bolivar/sdk, and the types refuse what the API would', () => {
    const dir = mkdtempSync(path.join(ROOT, '.tmp-sdk-types-'));
    try {
      // Mistakes a caller could make, each one a compile error.
      writeFileSync(
        path.join(dir, 'mistakes.ts'),
        `import { Bolivar, BolivarError, constructEvent } from '@bolivar/sdk';
const client = new Bolivar({ apiKey: 'k', baseUrl: 'http://localhost:3000' });
export async function mistakes(error: BolivarError): Promise<void> {
  // @ts-expect-error a quote fixes one side: {} is no quote
  await client.quotes.create({});
  // @ts-expect-error a deliver amount is in BS
  await client.quotes.create({ deliver: { asset: 'USD', amount: 5n } });
  // @ts-expect-error the statement has no such filter
  client.payments.list({ metadata: 'x' });
  // @ts-expect-error no such error code
  if (error.code === 'quote_missing') return;
  const event = constructEvent('{}', {}, 'whsec_x');
  // @ts-expect-error payload.reason is not on every event: narrow on eventType first
  void event.payload.reason;
  await client.quotes.create({ deliver: { asset: 'BS', amount: 5_000_000n } });
  await client.quotes.create({ deliver: { asset: 'BS', amount: '5000000' } });
}
`,
      );
      const tsc = spawnSync(
        process.execPath,
        [
          path.join(ROOT, 'node_modules/typescript/bin/tsc'),
          '--strict',
          '--noEmit',
          '--noUncheckedIndexedAccess',
          '--skipLibCheck',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--types',
          'node',
          path.join(ROOT, 'examples/reconcile.ts'),
          path.join(dir, 'mistakes.ts'),
        ],
        { cwd: ROOT, encoding: 'utf8' },
      );
      assert.equal(tsc.status, 0, `tsc --strict failed:\n${tsc.stdout}${tsc.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
