// The operator CLI: the admin API from a terminal. It talks HTTP to a running
// service (BOLIVAR_URL, default http://localhost:$PORT) with PLATFORM_API_KEY, or the platform key
// the first start wrote to $DATA_DIR/bootstrap.json; `migrate` and `config` need no service.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CONFIG_DOC, ConfigError, loadConfig } from '../config.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';

const USAGE = `bolivar <command> [options]

  tenants create --name NAME [--credit] [--credit-limit N] [--fee-bps N] [--fee-fixed N] [--spread-bps N]
  tenants get --tenant ID
  keys issue --tenant ID --mode test|live [--scopes a,b]
  keys revoke --key-id ID
  fund --tenant ID --mode test|live --amount MINOR [--asset BS]
  close --tenant ID --mode test|live
  rates set --asset USD|USDC|VESC --market DECIMAL
  webhook set --tenant ID --mode test|live --url URL
  webhook rotate --tenant ID --mode test|live
  limits add --scope platform|tenant|customer|beneficiary [--tenant ID] [--subject ID] --method M --per-tx N --daily N [--monthly N] [--daily-count N]
  limits list [--tenant ID]
  migrate                 apply pending migrations (DATABASE_URL or the embedded database)
  config                  list the environment variables the service reads

Environment: BOLIVAR_URL (default http://localhost:$PORT), PLATFORM_API_KEY (else data/bootstrap.json).`;

function platformKey(): string {
  if (process.env.PLATFORM_API_KEY) return process.env.PLATFORM_API_KEY;
  const file = path.resolve(process.env.DATA_DIR ?? './data', 'bootstrap.json');
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { platformApiKey?: string };
    if (saved.platformApiKey) return saved.platformApiKey;
  } catch {
    // fall through
  }
  throw new Error(`no platform key: set PLATFORM_API_KEY (or start the service once to create ${file})`);
}

async function call(method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  const base = (process.env.BOLIVAR_URL ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(/\/$/, '');
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { 'x-api-key': platformKey(), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : {};
  if (!response.ok) throw new Error(`${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

const int = (value: string | undefined, name: string): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new Error(`--${name} must be an integer`);
  return Number(value);
};

function need(value: string | undefined, name: string): string {
  if (!value) throw new Error(`--${name} is required\n\n${USAGE}`);
  return value;
}

async function main(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' }, tenant: { type: 'string' }, mode: { type: 'string' }, scopes: { type: 'string' },
      'key-id': { type: 'string' }, amount: { type: 'string' }, asset: { type: 'string' }, market: { type: 'string' },
      url: { type: 'string' }, credit: { type: 'boolean' }, 'credit-limit': { type: 'string' }, 'fee-bps': { type: 'string' },
      'fee-fixed': { type: 'string' }, 'spread-bps': { type: 'string' }, scope: { type: 'string' }, subject: { type: 'string' },
      method: { type: 'string' }, 'per-tx': { type: 'string' }, daily: { type: 'string' }, monthly: { type: 'string' },
      'daily-count': { type: 'string' }, help: { type: 'boolean' },
    },
  });
  const command = positionals.join(' ');
  switch (command) {
    case 'tenants create':
      return call('POST', '/v1/admin/tenants', {
        name: need(values.name, 'name'),
        ...(values.credit ? { creditEnabled: true } : {}),
        creditLimit: int(values['credit-limit'], 'credit-limit'),
        feeBps: int(values['fee-bps'], 'fee-bps'),
        feeFixed: int(values['fee-fixed'], 'fee-fixed'),
        spreadBps: int(values['spread-bps'], 'spread-bps'),
      });
    case 'tenants get':
      return call('GET', `/v1/admin/tenants/${need(values.tenant, 'tenant')}`);
    case 'keys issue':
      return call('POST', `/v1/admin/tenants/${need(values.tenant, 'tenant')}/api-keys`, {
        mode: need(values.mode, 'mode'),
        ...(values.scopes ? { scopes: values.scopes.split(',') } : {}),
      });
    case 'keys revoke':
      return call('DELETE', `/v1/admin/api-keys/${need(values['key-id'], 'key-id')}`);
    case 'fund':
      return call(
        'POST',
        `/v1/admin/tenants/${need(values.tenant, 'tenant')}/fundings`,
        { mode: need(values.mode, 'mode'), asset: values.asset ?? 'BS', amount: int(need(values.amount, 'amount'), 'amount') },
        { 'idempotency-key': `cli-${randomUUID()}` },
      );
    case 'close':
      return call('POST', `/v1/admin/tenants/${need(values.tenant, 'tenant')}/close`, { mode: need(values.mode, 'mode') });
    case 'rates set':
      return call('PUT', `/v1/admin/rates/${need(values.asset, 'asset')}`, { market: need(values.market, 'market') });
    case 'webhook set':
      return call('PUT', `/v1/admin/tenants/${need(values.tenant, 'tenant')}/webhook-endpoint`, { mode: need(values.mode, 'mode'), url: need(values.url, 'url') });
    case 'webhook rotate':
      return call('POST', `/v1/admin/tenants/${need(values.tenant, 'tenant')}/webhook-endpoint/rotate-secret`, { mode: need(values.mode, 'mode') });
    case 'limits add':
      return call('POST', '/v1/admin/limit-rules', {
        scope: need(values.scope, 'scope'),
        tenantId: values.tenant,
        subjectId: values.subject,
        method: need(values.method, 'method'),
        per_tx_max: int(need(values['per-tx'], 'per-tx'), 'per-tx'),
        daily_max: int(need(values.daily, 'daily'), 'daily'),
        monthly_max: int(values.monthly, 'monthly'),
        daily_count_max: int(values['daily-count'], 'daily-count'),
      });
    case 'limits list':
      return call('GET', `/v1/admin/limit-rules${values.tenant ? `?tenantId=${values.tenant}` : ''}`);
    case 'migrate': {
      const db = await openDatabase(loadConfig(), { purpose: 'bolivar migrate' });
      try {
        return await migrate(db);
      } finally {
        await db.close();
      }
    }
    case 'config':
      return Object.fromEntries(CONFIG_DOC.map(([name, fallback, meaning]) => [name, `${meaning} (default ${fallback})`]));
    default:
      process.stdout.write(`${USAGE}\n`);
      return values.help || command === '' ? undefined : Promise.reject(new Error(`unknown command: ${command}`));
  }
}

try {
  const result = await main(process.argv.slice(2));
  if (result !== undefined) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `bolivar: ${(error as Error).message}`}\n`);
  process.exit(1);
}
