// A client generated from the committed openapi.json by a mainstream generator (@hey-api/openapi-ts,
// fetch client) must be one an integrator can trust: a strict integration against its types compiles,
// and the mistakes the server answers with a 400 do not (no Idempotency-Key on a payout, `{}` as a
// quote, a sender block with only an email). Needs no database: it reads the committed document.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@hey-api/openapi-ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** What an integrator writes: quote → beneficiary → payout, reading the answers and branching on error codes. */
const INTEGRATION = `
import { createClient } from './client/client/index.js';
import { createPayout, createQuote, getPayment, registerBeneficiary } from './client/sdk.gen.js';
import type { CreatePayoutError, PaymentFailedEvent, PayoutResult, WebhookEvent } from './client/types.gen.js';

const client = createClient({ baseUrl: 'http://localhost:3000', headers: { 'x-api-key': 'bsk_test_example' } });

export async function disburse(orderId: string): Promise<PayoutResult['status'] | 'retry' | 'new quote' | 'refused'> {
  const quote = await createQuote({ client, body: { deliver: { asset: 'BS', amount: 5_000_000 }, metadata: { order_id: orderId } } });
  if (quote.error) return quote.error.error.code === 'rate_unavailable' ? 'retry' : 'refused';
  const quoteId: string = quote.data.id;
  const fixed: 'deliver' | 'spend' = quote.data.fixed;
  void fixed;

  const converted = await createQuote({ client, body: { spend: { asset: 'USD', amount: 10_000 }, deliver: { asset: 'BS' } } });
  if (converted.data) {
    const rate: string | undefined = converted.data.rate?.value;
    void rate;
  }

  const registered = await registerBeneficiary({
    client,
    body: { fullName: 'María Pérez', nationalId: 'V12345678', bankCode: '0102', phone: '04141234567' },
    headers: { 'Idempotency-Key': \`beneficiary-\${orderId}\` },
  });
  if (registered.error) return 'refused';
  const created: boolean = registered.data.created;
  void created;

  const payout = await createPayout({
    client,
    headers: { 'Idempotency-Key': \`payout-\${orderId}\` },
    body: {
      quoteId,
      method: 'pago_movil',
      beneficiaryId: registered.data.id,
      sender: { nationalId: 'V12345678', firstName: 'Ana', lastName: 'Rojas', phone: '04141234567', email: 'ana@example.com' },
      metadata: { order_id: orderId },
    },
  });
  if (payout.error) return branch(payout.error);
  const replayed = payout.response.headers.get('idempotent-replayed') === 'true';
  void replayed;
  const status: 'created' | 'pending' | 'submitted' | 'unknown' | 'settled' | 'failed' | 'returned' | 'reversed' = payout.data.status;
  if (status === 'failed' && payout.data.reason === 'beneficiary_mismatch') return 'refused';

  const payment = await getPayment({ client, path: { id: payout.data.id } });
  for (const step of payment.data?.events ?? []) {
    const actor: 'api' | 'provider_event' | 'reaper' | 'system' = step.actor;
    const to: PayoutResult['status'] = step.to_status;
    void actor;
    void to;
  }
  return status;
}

/** Every code POST /v1/payouts can answer is one of its own: a code of another operation does not compile. */
function branch(error: CreatePayoutError): 'retry' | 'new quote' | 'refused' {
  const code = error.error.code;
  switch (code) {
    case 'quote_expired':
    case 'quote_already_consumed':
      return 'new quote';
    case 'idempotency_request_in_progress':
    case 'service_unavailable':
    case 'overloaded':
    case 'rate_unavailable':
    case 'rate_limited':
      return 'retry';
    // @ts-expect-error payment_not_settled is a code of the sandbox simulation, never of a payout
    case 'payment_not_settled':
      return 'refused';
    default:
      return 'refused';
  }
}

/** A webhook receiver, typed by the callbacks' bodies. */
export function onWebhook(event: WebhookEvent): string {
  switch (event.eventType) {
    case 'payment.settled':
      return event.payload.bankReference;
    case 'payment.failed': {
      const failed: PaymentFailedEvent = event;
      return failed.payload.reason;
    }
    case 'payment.reversed':
      return event.payload.metadata['order_id'] ?? event.payload.reason;
  }
}

export async function mistakes(quoteId: string): Promise<void> {
  const body = { quoteId, method: 'pago_movil' as const, beneficiaryId: quoteId };
  // @ts-expect-error the Idempotency-Key header is required on a payout
  await createPayout({ client, body });
  // @ts-expect-error still required when other headers are given
  await createPayout({ client, body, headers: { 'x-request-id': 'abc' } });
  // @ts-expect-error a quote fixes an amount on one side: {} is no quote
  await createQuote({ client, body: {} });
  // @ts-expect-error a deliver amount is in BS
  await createQuote({ client, body: { deliver: { asset: 'USD', amount: 5 } } });
  // @ts-expect-error spend mode needs deliver: {asset: 'BS'}
  await createQuote({ client, body: { spend: { asset: 'USD', amount: 5 } } });
  // @ts-expect-error an unknown field is refused
  await createQuote({ client, body: { deliver: { asset: 'BS', amount: 5 }, amount: 5 } });
  // @ts-expect-error a sender block has every field but nationality
  await createPayout({ client, body: { ...body, sender: { email: 'ana@example.com' } }, headers: { 'Idempotency-Key': 'k' } });
  // @ts-expect-error an amount is an integer, not a string
  await createQuote({ client, body: { deliver: { asset: 'BS', amount: '5000000' } } });
  // @ts-expect-error transition actors are a closed set
  const actor: NonNullable<Awaited<ReturnType<typeof getPayment>>['data']>['events'][number]['actor'] = 'operator';
  void actor;
}
`;

describe('a TypeScript client generated from the committed openapi.json', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'bolivar-openapi-client-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('compiles a strict integration, and refuses to compile what the server would refuse', async (ctx) => {
    const started = performance.now();
    await createClient({
      input: path.join(ROOT, 'openapi.json'),
      output: { path: path.join(dir, 'client') },
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
      logs: { level: 'silent' },
    });
    const generated = performance.now();
    writeFileSync(path.join(dir, 'integration.ts'), INTEGRATION);
    const tsc = spawnSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--strict',
        '--noEmit',
        '--noUncheckedIndexedAccess',
        '--target',
        'es2022',
        '--module',
        'esnext',
        '--moduleResolution',
        'bundler',
        '--lib',
        'es2022,dom',
        '--types',
        'node',
        '--typeRoots',
        path.join(ROOT, 'node_modules/@types'),
        path.join(dir, 'integration.ts'),
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    ctx.diagnostic(
      `generated in ${Math.round(generated - started)} ms, compiled in ${Math.round(performance.now() - generated)} ms`,
    );
    assert.equal(tsc.status, 0, `tsc --strict failed:\n${tsc.stdout}${tsc.stderr}`);
  });
});
