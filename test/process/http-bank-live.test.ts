// Going live through the HTTP bank connector with real processes: the service as `npm start` runs it,
// configured by a rails file, and the gateway simulator in its own process. A live tenant's payout
// settles; a send the gateway received but never answered stays `unknown` across a gateway crash and
// restart, and is resolved by asking, never sent twice. A bad rails file stops the start.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { connectorConfigOf, startGatewaySimulator, type GatewaySimulator } from '../support/gateway-simulator.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { SENDER, beneficiary, idempotencyKey } from '../support/payouts.ts';
import { runToExit, startService, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/until.ts';

/** Payouts here resolve within a few reaper passes; a busy machine gets this long. */
const SETTLE_BOUND_MS = 30_000;

describe(`going live through the HTTP bank connector (service and gateway processes) on ${ENGINE}`, () => {
  let sim: GatewaySimulator;
  let service: ServiceProcess;
  let database: TestDatabase | undefined;
  const platformKey = generateApiKey('platform');

  before(async () => {
    sim = await startGatewaySimulator({ settleDelayMs: 100 });
    const railsFile = path.join(sim.dir, 'service-rails.json');
    const connector = connectorConfigOf(sim);
    // Secrets by secretEnv, as an operator would keep them out of the file.
    const keys = connector.keys.map((key, i) => ({ id: key.id, secretEnv: `BANK_SIM_KEY_${i}` }));
    const callbackKeys = connector.callbackKeys.map((key, i) => ({
      id: key.id,
      secretEnv: `BANK_SIM_CALLBACK_KEY_${i}`,
    }));
    writeFileSync(railsFile, JSON.stringify({ connectors: [{ ...connector, keys, callbackKeys }] }));
    database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    service = await startService({
      DATA_DIR: path.join(mkdtempSync(path.join(tmpdir(), 'bds-live-')), 'data'),
      DATABASE_URL: database?.url ?? '',
      PLATFORM_API_KEY: platformKey,
      RAILS_FILE: railsFile,
      SANDBOX_RAIL_TIMEOUT_MS: '1000',
      REAPER_INTERVAL_MS: '200',
      ...Object.fromEntries(connector.keys.map((key, i) => [`BANK_SIM_KEY_${i}`, key.secret])),
      ...Object.fromEntries(connector.callbackKeys.map((key, i) => [`BANK_SIM_CALLBACK_KEY_${i}`, key.secret])),
    });
    await sim.control('POST', '/_control/callbacks', {
      url: `${service.baseUrl}/v1/rails/${connector.name}/callbacks`,
    });
  });

  after(async () => {
    await service?.stop('SIGTERM');
    await sim?.close();
    await database?.drop();
  });

  async function call(
    method: string,
    route: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const answer = await fetch(`${service.baseUrl}${route}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: answer.status, body: (await answer.json()) as any };
  }

  async function liveTenant(): Promise<string> {
    const tenant = await call('POST', '/v1/admin/tenants', platformKey, { name: 'Remesas En Vivo' });
    assert.equal(tenant.status, 201, JSON.stringify(tenant.body));
    const key = await call('POST', `/v1/admin/tenants/${tenant.body.id}/api-keys`, platformKey, { mode: 'live' });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const funded = await call(
      'POST',
      `/v1/admin/tenants/${tenant.body.id}/fundings`,
      platformKey,
      { mode: 'live', asset: 'BS', amount: 100_000_000 },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(funded.status, 201, JSON.stringify(funded.body));
    return key.body.key;
  }

  async function pay(key: string, nationalId: string) {
    const quote = await call('POST', '/v1/quotes', key, { deliver: { asset: 'BS', amount: 1_000_000 } });
    assert.equal(quote.status, 201, JSON.stringify(quote.body));
    const made = await call(
      'POST',
      '/v1/payouts',
      key,
      { quoteId: quote.body.id, method: 'pago_movil', sender: SENDER, beneficiary: beneficiary(nationalId) },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return made.body as { id: string; status: string };
  }

  const statusOf = async (key: string, id: string) =>
    (await call('GET', `/v1/payments/${id}`, key)).body.status as string;

  it('a live payout goes to the gateway, settles, and its callback is recorded (2xx)', async () => {
    const key = await liveTenant();
    const made = await pay(key, 'V31000001');
    await until(`payment ${made.id} settled`, async () => (await statusOf(key, made.id)) === 'settled', {
      timeoutMs: SETTLE_BOUND_MS,
      intervalMs: 100,
    });
    assert.equal((await sim.control('GET', `/_control/transfers/${made.id}`)).submissions, 1);
    await until(
      'the settlement callback delivered',
      async () => (await sim.control('GET', '/_control/state')).callbacks.counters.delivered >= 1,
    );
    assert.equal((await sim.control('GET', '/_control/state')).callbacks.counters.refused, 0);
  });

  it('received but never answered, then the gateway is killed and restarted: unknown, resolved by asking, sent once', async () => {
    const key = await liveTenant();
    await sim.control('POST', '/_control/scenarios/nid:V31000002', { kind: 'hang' });
    const made = await pay(key, 'V31000002');
    assert.equal(made.status, 'unknown');
    await sim.restart();
    await until(`payment ${made.id} settled`, async () => (await statusOf(key, made.id)) === 'settled', {
      timeoutMs: SETTLE_BOUND_MS,
      intervalMs: 100,
    });
    assert.equal((await sim.control('GET', `/_control/transfers/${made.id}`)).submissions, 1, 'never sent again');
  });

  it('a bad rails file stops the start (exit 78) naming RAILS_FILE and the problem', async () => {
    const file = path.join(sim.dir, 'bad-rails.json');
    writeFileSync(
      file,
      JSON.stringify({
        connectors: [{ ...connectorConfigOf(sim), keys: [{ id: 'k', secretEnv: 'NOT_SET_ANYWHERE' }] }],
      }),
    );
    const result = await runToExit({
      RAILS_FILE: file,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-bad-rails-')),
      DATABASE_URL: '',
    });
    assert.equal(result.code, 78, result.output);
    assert.match(result.output, /RAILS_FILE=.*secretEnv names NOT_SET_ANYWHERE, which is not set/s);
  });

  it('a rails file holding secrets inline that others can read stops the start (exit 78), saying chmod 600', async () => {
    const file = path.join(sim.dir, 'readable-rails.json');
    writeFileSync(file, JSON.stringify({ connectors: [connectorConfigOf(sim)] }), { mode: 0o644 });
    chmodSync(file, 0o644); // whatever the umask
    const result = await runToExit({
      RAILS_FILE: file,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bds-readable-rails-')),
      DATABASE_URL: '',
    });
    assert.equal(result.code, 78, result.output);
    assert.ok(result.output.includes(`chmod 600 ${file}`), result.output);
    assert.ok(!result.output.includes(connectorConfigOf(sim).keys[0]!.secret), 'the secret is not printed');
  });
});
