// The operator CLI (`npx bolivar …`) against a listening test server: its commands are the admin API.
// A file of its own: each command is a process of its own, and with the help and reachability cases in
// one file it came within seconds of the runner's bound per file (120 s) on a loaded machine.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertOneLine, bolivar, startCliTarget, type CliTarget } from '../support/cli.ts';
import { client, type TestApp } from '../support/harness.ts';

const UNKNOWN_UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

describe('bolivar CLI', () => {
  let target: CliTarget;
  let t: TestApp;
  let env: Record<string, string>;
  let cwd: string;

  before(async () => {
    target = await startCliTarget();
    ({ t, env, cwd } = target);
  });
  after(async () => {
    await target.close();
  });

  describe('against the service', () => {
    it('tenants create, list and get; fund; the answers are the API answers as JSON', async () => {
      const created: string[] = [];
      for (const name of ['Uno', 'Dos', 'Tres']) {
        const run = await bolivar(['tenants', 'create', '--name', name, '--fee-bps', '80'], env, cwd);
        assert.equal(run.code, 0, run.stderr);
        const tenant = JSON.parse(run.stdout);
        assert.equal(tenant.name, name);
        assert.equal(tenant.feeBps, 80);
        created.push(tenant.id);
      }

      const page = await bolivar(['tenants', 'list', '--limit', '2'], env, cwd);
      assert.equal(page.code, 0, page.stderr);
      const first = JSON.parse(page.stdout);
      assert.deepEqual(
        first.data.map((row: { id: string }) => row.id),
        [created[2], created[1]],
      );
      assert.equal(first.has_more, true);
      const next = JSON.parse(
        (await bolivar(['tenants', 'list', '--limit', '2', '--cursor', first.next_cursor], env, cwd)).stdout,
      );
      assert.deepEqual(
        next.data.map((row: { id: string }) => row.id),
        [created[0]],
      );
      assert.equal(next.next_cursor, null);

      const all = JSON.parse((await bolivar(['tenants', 'list', '--all', '--limit', '1'], env, cwd)).stdout);
      assert.deepEqual(all, {
        data: (await client(t.app, t.platformKey).get('/v1/admin/tenants')).body.data,
        has_more: false,
        next_cursor: null,
      });

      const got = await bolivar(['tenants', 'get', '--tenant', created[0]!], env, cwd);
      assert.deepEqual(
        JSON.parse(got.stdout),
        (await client(t.app, t.platformKey).get(`/v1/admin/tenants/${created[0]}`)).body,
      );

      const funded = await bolivar(
        ['fund', '--tenant', created[0]!, '--mode', 'test', '--amount', '500000000', '--idempotency-key', 'cli-test-1'],
        env,
        cwd,
      );
      assert.equal(funded.code, 0, funded.stderr);
      assert.equal(JSON.parse(funded.stdout).prefundingBalance, '500000000');
      // The same key again is a replay, not a second funding.
      const again = await bolivar(
        ['fund', '--tenant', created[0]!, '--mode', 'test', '--amount', '500000000', '--idempotency-key', 'cli-test-1'],
        env,
        cwd,
      );
      assert.equal(JSON.parse(again.stdout).prefundingBalance, '500000000');
    });

    it('tenants update, keys list, senders, rates list, limits delete and recheck are the admin API too', async () => {
      const admin = client(t.app, t.platformKey);
      const ok = async (args: string[]) => {
        const run = await bolivar(args, env, cwd);
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        return JSON.parse(run.stdout);
      };
      const tenant = (await ok(['tenants', 'create', '--name', 'Cuatro'])).id as string;
      const updated = await ok([
        'tenants',
        'update',
        '--tenant',
        tenant,
        '--credit',
        'on',
        '--credit-limit',
        '700000',
        '--fee-bps',
        '90',
      ]);
      assert.deepEqual(
        [updated.creditEnabled, updated.creditLimit, updated.feeBps, updated.name],
        [true, '700000', 90, 'Cuatro'],
      );
      assert.equal((await ok(['tenants', 'update', '--tenant', tenant, '--credit-limit', 'none'])).creditLimit, null);
      const nothing = await bolivar(['tenants', 'update', '--tenant', tenant], env, cwd);
      assert.equal(nothing.code, 2);
      assertOneLine(nothing, /give at least one setting to change/);

      await ok(['keys', 'issue', '--tenant', tenant, '--mode', 'test', '--scopes', 'payments:read']);
      assert.deepEqual(
        await ok(['keys', 'list', '--tenant', tenant]),
        (await admin.get(`/v1/admin/tenants/${tenant}/api-keys`)).body,
      );

      const sender = [
        '--national-id',
        'V12345678',
        '--first-name',
        'Ana',
        '--last-name',
        'Rojas',
        '--phone',
        '+584121234567',
        '--email',
        'ana@example.com',
      ];
      const stored = await ok(['senders', 'default', '--tenant', tenant, '--mode', 'test', ...sender]);
      assert.equal(stored.sender.phone, '04121234567', 'stored as the API stores it');
      const customer = await ok([
        'senders',
        'customer',
        '--tenant',
        tenant,
        '--customer',
        UNKNOWN_UUID,
        '--mode',
        'test',
        ...sender,
        '--nationality',
        'VEN',
      ]);
      assert.equal(customer.sender.nationality, 'VEN');

      assert.deepEqual(await ok(['rates', 'list']), (await admin.get('/v1/admin/rates')).body);

      const rule = await ok([
        'limits',
        'add',
        '--scope',
        'tenant',
        '--tenant',
        tenant,
        '--method',
        '*',
        '--per-tx',
        '1000',
        '--daily',
        '5000',
      ]);
      assert.deepEqual(await ok(['limits', 'delete', '--rule', rule.id]), { id: rule.id, deleted: true });

      const recheck = await bolivar(['recheck', '--payment', UNKNOWN_UUID], env, cwd);
      assert.equal(recheck.code, 1);
      assertOneLine(recheck, /404 resource_not_found/);
    });

    it('audit reads the trail: what the CLI itself did, narrowed by key, tenant and action', async () => {
      const admin = client(t.app, t.platformKey);
      const keyId = (await admin.get('/v1/tenant/me')).body.apiKeyId as string;
      const ok = async (args: string[]) => {
        const run = await bolivar(args, env, cwd);
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        return JSON.parse(run.stdout);
      };
      const tenant = (await ok(['tenants', 'create', '--name', 'Cinco'])).id as string;
      await ok(['tenants', 'update', '--tenant', tenant, '--fee-bps', '75']);
      const ofTenant = await ok(['audit', '--tenant', tenant, '--actor-key', keyId]);
      assert.deepEqual(ofTenant, (await admin.get(`/v1/admin/audit?tenantId=${tenant}&actorKeyId=${keyId}`)).body);
      assert.deepEqual(
        ofTenant.data.map((r: { action: string }) => r.action),
        ['tenant.update', 'tenant.create'],
      );
      assert.deepEqual(ofTenant.data[0].after, { feeBps: 75 });
      const page = await ok([
        'audit',
        '--action',
        'tenant.update',
        '--target-type',
        'tenant',
        '--target-id',
        tenant,
        '--limit',
        '1',
      ]);
      assert.equal(page.data.length, 1);
      const refused = await bolivar(['audit', '--actor-key', 'not-an-id'], env, cwd);
      assert.equal(refused.code, 1);
      assertOneLine(refused, /400 validation_failed/);
    });

    it('rails list, set, add-route, routes and delete-route are the admin API, audited', async () => {
      const admin = client(t.app, t.platformKey);
      const ok = async (args: string[]) => {
        const run = await bolivar(args, env, cwd);
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        return JSON.parse(run.stdout);
      };
      assert.deepEqual(
        (await ok(['rails', 'list'])).data.map((r: { name: string }) => r.name),
        ['sandbox'],
      );
      // A change each time (a set that changes nothing is not audited): narrowed, then back.
      assert.deepEqual((await ok(['rails', 'set', '--rail', 'sandbox', '--instruments', 'pago_movil'])).instruments, [
        'pago_movil',
      ]);
      const set = await ok([
        'rails',
        'set',
        '--rail',
        'sandbox',
        '--instruments',
        'pago_movil,transferencia',
        '--enabled',
        'on',
      ]);
      assert.deepEqual([set.name, set.configured, set.instruments], ['sandbox', true, ['pago_movil', 'transferencia']]);
      const rule = await ok([
        'rails',
        'add-route',
        '--priority',
        '7',
        '--rail',
        'sandbox',
        '--bank',
        '0134',
        '--min',
        '100',
        '--max',
        '900',
      ]);
      assert.deepEqual([rule.rail, rule.bankCode, rule.minAmount, rule.maxAmount], ['sandbox', '0134', '100', '900']);
      assert.deepEqual(await ok(['rails', 'routes']), (await admin.get('/v1/admin/rails/routes')).body);
      assert.equal((await ok(['rails', 'delete-route', '--rule', rule.id])).id, rule.id);
      const unknown = await bolivar(['rails', 'add-route', '--priority', '1', '--rail', 'ghost'], env, cwd);
      assert.equal(unknown.code, 1);
      assertOneLine(unknown, /404 resource_not_found/);
      const usage = await bolivar(['rails', 'set', '--rail', 'sandbox'], env, cwd);
      assert.equal(usage.code, 2);
      const trail = (await admin.get('/v1/admin/audit?limit=3')).body.data.map(
        (r: { action: string; target_id?: string; targetId?: string }) => r.action,
      );
      assert.deepEqual(trail, ['rail_route.delete', 'rail_route.create', 'rail.update']);
    });

    it('reconcile --wait follows the run to its end: exit 0 when clean, 3 with the discrepancies; reconciliation list and show', async () => {
      const admin = client(t.app, t.platformKey);
      const tenant = (await admin.post('/v1/admin/tenants', { name: 'Cinco' })).body.id as string;
      const funded = await admin.post(
        `/v1/admin/tenants/${tenant}/fundings`,
        { mode: 'test', asset: 'BS', amount: 5_000 },
        { 'idempotency-key': 'cli-reconcile' },
      );
      assert.equal(funded.status, 201, funded.raw);

      const clean = await bolivar(['reconcile', '--tenant', tenant, '--mode', 'test', '--wait'], env, cwd);
      assert.equal(clean.code, 0, clean.stderr);
      const cleanRun = JSON.parse(clean.stdout).data[0];
      assert.deepEqual(
        [cleanRun.tenantId, cleanRun.mode, cleanRun.status, cleanRun.clean, cleanRun.discrepancies],
        [tenant, 'test', 'completed', true, []],
      );

      await t.db.query(
        `UPDATE ledger_accounts SET balance = balance - 1 WHERE tenant_id = $1 AND kind = 'prefunding'`,
        [tenant],
      );
      const broken = await bolivar(['reconcile', '--tenant', tenant, '--mode', 'test', '--wait'], env, cwd);
      assert.equal(broken.code, 3, broken.stderr);
      const brokenRun = JSON.parse(broken.stdout).data[0];
      assert.equal(brokenRun.clean, false);
      assert.deepEqual(
        brokenRun.discrepancies.map(
          (d: { check: string; expected: string; found: string }) => `${d.check} ${d.expected} -> ${d.found}`,
        ),
        ['account_balances -5000 -> -5001', 'prefunding 5000 -> 5001'],
      );
      await t.db.query(
        `UPDATE ledger_accounts SET balance = balance + 1 WHERE tenant_id = $1 AND kind = 'prefunding'`,
        [tenant],
      );

      const queued = await bolivar(['reconcile', '--tenant', tenant], env, cwd);
      assert.equal(queued.code, 0, queued.stderr);
      assert.deepEqual(
        JSON.parse(queued.stdout)
          .data.map((r: { mode: string }) => r.mode)
          .sort(),
        ['live', 'test'],
        'both modes without --mode',
      );
      await t.services.reconciliation.drain();

      const list = await bolivar(
        ['reconciliation', 'list', '--tenant', tenant, '--mode', 'test', '--limit', '1'],
        env,
        cwd,
      );
      assert.equal(list.code, 0, list.stderr);
      const page = JSON.parse(list.stdout);
      assert.deepEqual(
        page,
        (await admin.get(`/v1/admin/reconciliation/runs?tenantId=${tenant}&mode=test&limit=1`)).body,
      );
      assert.equal(page.has_more, true);
      const shown = await bolivar(['reconciliation', 'show', '--run', brokenRun.id], env, cwd);
      assert.equal(shown.code, 0, shown.stderr);
      assert.deepEqual(
        JSON.parse(shown.stdout),
        (await admin.get(`/v1/admin/reconciliation/runs/${brokenRun.id}`)).body,
      );

      const missing = await bolivar(['reconciliation', 'show'], env, cwd);
      assert.equal(missing.code, 2);
      assertOneLine(missing, /reconciliation show: --run is required/);
      const unknown = await bolivar(['reconciliation', 'show', '--run', UNKNOWN_UUID], env, cwd);
      assert.equal(unknown.code, 1);
      assertOneLine(unknown, /404 resource_not_found: No such reconciliation run\./);
    });

    it('an error answer is one line with its status, code, message and request id; exit 1', async () => {
      const run = await bolivar(['tenants', 'get', '--tenant', UNKNOWN_UUID], env, cwd);
      assert.equal(run.code, 1);
      assertOneLine(run, /^bolivar: 404 resource_not_found: No such tenant\. \(request_id req_[0-9a-f]{32}\)\n$/);
      assert.equal(run.stdout, '');

      const invalid = await bolivar(['tenants', 'list', '--cursor', 'garbage'], env, cwd);
      assert.equal(invalid.code, 1);
      assertOneLine(invalid, /^bolivar: 400 validation_failed: cursor: must be the next_cursor/);

      const wrongKey = await bolivar(
        ['tenants', 'list'],
        { ...env, PLATFORM_API_KEY: `bsk_platform_${'x'.repeat(40)}` },
        cwd,
      );
      assert.equal(wrongKey.code, 1);
      assertOneLine(wrongKey, /^bolivar: 401 api_key_invalid: /);
    });

    it('without a platform key it says where the key comes from', async () => {
      const run = await bolivar(['tenants', 'list'], { BOLIVAR_URL: env.BOLIVAR_URL! }, cwd);
      assert.equal(run.code, 1);
      assertOneLine(
        run,
        /no platform key: set PLATFORM_API_KEY, or start the service once to create .*bootstrap\.json/,
      );
    });
  });
});
