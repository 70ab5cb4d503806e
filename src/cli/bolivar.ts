// The operator CLI: the admin API from a terminal. It talks HTTP to a running
// service (BOLIVAR_URL, default http://localhost:$PORT) with PLATFORM_API_KEY, or the platform key
// the first start wrote to $DATA_DIR/bootstrap.json; `migrate` and `config` need no service.
//
// Every command has its own `--help`. Failures are one line on stderr, never a stack trace: a usage
// mistake exits 2, anything else (the service unreachable, an error answer, no platform key) exits 1.
import { randomUUID } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import ipaddr from 'ipaddr.js';
import { CONFIG_DOC, ConfigError, loadConfig } from '../config.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';

/** How long one call to the service may take before the CLI gives up. */
const CALL_TIMEOUT_MS = 30_000;
/** `reconcile --wait`: how often it reads a run again, and how long it waits by default. */
const RECONCILE_POLL_MS = 1_000;
const RECONCILE_WAIT_DEFAULT_S = 600;
/** Exit code of `reconcile --wait` when a run found discrepancies or did not complete. */
const EXIT_NOT_CLEAN = 3;

const ENVIRONMENT = `Environment:
  BOLIVAR_URL        base URL of the running service (default http://localhost:$PORT; PORT defaults to 3000)
  PLATFORM_API_KEY   the platform key (default: platformApiKey in $DATA_DIR/bootstrap.json; DATA_DIR defaults to ./data)`;

interface Flag {
  type: 'string' | 'boolean';
  /** Placeholder shown in the usage line, for a string flag. */
  value?: string;
  required?: boolean;
  description: string;
}

type Values = Record<string, string | boolean | undefined>;

interface Command {
  name: string;
  summary: string;
  /** Extra lines of help after the summary. */
  details?: string;
  flags: Record<string, Flag>;
  run(values: Values): Promise<unknown>;
  /** The exit code of a result printed (default 0). */
  exitCode?(result: unknown): number;
}

/** A mistake in how the CLI was called: exit 2, with a pointer to the help. */
class UsageError extends Error {}

/** Anything else that stops a command (the service, the key, the database): exit 1. */
class CliError extends Error {}

const TENANT: Flag = { type: 'string', value: 'ID', required: true, description: 'the tenant id' };
const MODE: Flag = { type: 'string', value: 'test|live', required: true, description: 'the mode (program) it applies to' };

const SENDER_FLAGS: Record<string, Flag> = {
  'national-id': { type: 'string', value: 'ID', required: true, description: 'V, E or J and 4 to 9 digits (Venezuelan); 5 to 20 letters and digits (foreign)' },
  nationality: { type: 'string', value: 'ISO3', description: 'ISO 3166-1 alpha-3 code (default VEN)' },
  'first-name': { type: 'string', value: 'NAME', required: true, description: 'first name' },
  'last-name': { type: 'string', value: 'NAME', required: true, description: 'last name' },
  phone: { type: 'string', value: 'PHONE', required: true, description: 'Venezuelan mobile, e.g. 04141234567' },
  email: { type: 'string', value: 'EMAIL', required: true, description: 'email address' },
};

const ANOMALY: Flag = { type: 'string', value: 'ID', required: true, description: 'the anomaly id (anomalies list shows it)' };

/** The paging flags of a list command. */
function pageFlags(what: string): Record<string, Flag> {
  return {
    limit: { type: 'string', value: 'N', description: 'page size, 1 to 100 (default 25; 100 with --all)' },
    cursor: { type: 'string', value: 'CURSOR', description: 'the next_cursor of the previous page' },
    all: { type: 'boolean', description: `read every page and print all ${what} as one list` },
  };
}

/** One page of a cursor-paginated admin list, or every page from --cursor on with --all. */
async function listPages(route: string, filters: Record<string, string | undefined>, v: Values): Promise<unknown> {
  const limit = int(v.limit, 'limit');
  const query = (cursor: string | undefined, size: number | undefined) => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(filters)) if (value !== undefined) params.set(name, value);
    if (size !== undefined) params.set('limit', String(size));
    if (cursor !== undefined) params.set('cursor', cursor);
    const text = params.toString();
    return `${route}${text ? `?${text}` : ''}`;
  };
  if (!v.all) return call('GET', query(v.cursor as string | undefined, limit));
  const data: unknown[] = [];
  let cursor = v.cursor as string | undefined;
  do {
    const page = (await call('GET', query(cursor, limit ?? 100))) as { data: unknown[]; next_cursor: string | null };
    data.push(...page.data);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return { data, has_more: false, next_cursor: null };
}

function senderOf(v: Values): Record<string, unknown> {
  return {
    nationalId: v['national-id'],
    ...(v.nationality === undefined ? {} : { nationality: v.nationality }),
    firstName: v['first-name'],
    lastName: v['last-name'],
    phone: v.phone,
    email: v.email,
  };
}

function onOff(value: string | boolean | undefined, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`--${name} must be on or off, got ${JSON.stringify(value)}`);
}

/**
 * `rails statement import`: how long the whole upload and matching may take. A 100,000-line statement
 * (about 8 MB) takes seconds; the bound leaves room for the largest statement the service accepts.
 */
const STATEMENT_CALL_TIMEOUT_MS = 300_000;


const RAIL: Flag = { type: 'string', value: 'NAME', required: true, description: 'the rail name (rails list shows them)' };

/** The route of a rail's statements. */
const statementsOf = (rail: string | boolean | undefined) => `/v1/admin/rails/${segment(rail)}/statements`;

/** The statement file as a stream the request sends as it reads it (never read whole). */
function statementFile(file: string): ReadableStream<Uint8Array> {
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
  } catch (error) {
    throw new CliError(`cannot read the statement file ${file}: ${(error as Error).message}`);
  }
  return Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>;
}

const RAIL_STATEMENT_COMMANDS: Command[] = [
  {
    name: 'rails statement import',
    summary: "Match a rail's statement for a day against our payments (POST /v1/admin/rails/{rail}/statements)",
    details:
      'Sends the CSV file as it reads it and prints the statement with its counts by result (docs/rail-statements.md).\n' +
      'The same file for the same rail and day again prints the statement stored the first time; nothing new is stored.\n' +
      'A malformed file is refused with its line (400 statement_malformed) and nothing is stored.',
    flags: {
      rail: RAIL,
      day: { type: 'string', value: 'YYYY-MM-DD', required: true, description: "the statement's value date (America/Caracas)" },
      file: { type: 'string', value: 'PATH', required: true, description: 'the statement, CSV' },
      columns: { type: 'string', value: 'MAP', description: 'header names of a bank that names columns otherwise, e.g. reference:Referencia,amount:Monto' },
    },
    run: (v) => {
      const query = new URLSearchParams({ day: v.day as string });
      if (typeof v.columns === 'string') query.set('columns', v.columns);
      const data = statementFile(v.file as string);
      return send('POST', `${statementsOf(v.rail)}?${query}`, { contentType: 'text/csv', data, timeoutMs: STATEMENT_CALL_TIMEOUT_MS });
    },
  },
  {
    name: 'rails statement list',
    summary: "List a rail's statements, newest first (GET /v1/admin/rails/{rail}/statements)",
    details: 'Prints one page with has_more and next_cursor, or every page with --all.',
    flags: { rail: RAIL, ...pageFlags('statements') },
    run: (v) => listPages(statementsOf(v.rail), {}, v),
  },
  {
    name: 'rails statement show',
    summary: 'Show a rail statement with a page of its mismatches (GET /v1/admin/rails/{rail}/statements/{id})',
    details: 'Pass mismatches.next_cursor as --cursor for the next page of mismatches.',
    flags: {
      rail: RAIL,
      statement: { type: 'string', value: 'ID', required: true, description: 'the statement id (import and list print it)' },
      limit: { type: 'string', value: 'N', description: 'mismatches per page, 1 to 100 (default 25)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the mismatches.next_cursor of the previous page' },
    },
    run: (v) => {
      const query = new URLSearchParams();
      const limit = int(v.limit, 'limit');
      if (limit !== undefined) query.set('limit', String(limit));
      if (typeof v.cursor === 'string') query.set('cursor', v.cursor);
      const text = query.toString();
      return call('GET', `${statementsOf(v.rail)}/${segment(v.statement)}${text ? `?${text}` : ''}`);
    },
  },
  {
    name: 'rails statement pull',
    summary: "Pull a bank connector's statement of a day now and match it (POST /v1/admin/rails/{rail}/statement-pulls)",
    details:
      'What the worker does each morning for the day before (RAIL_STATEMENT_PULL_AT), now, for any day up to today.\n' +
      'Prints the pull: done with its statementId, retrying with lastError and nextAttemptAt, or gave_up (docs/rails.md).',
    flags: {
      rail: RAIL,
      day: { type: 'string', value: 'YYYY-MM-DD', required: true, description: 'the statement day (America/Caracas)' },
    },
    run: (v) => send('POST', `/v1/admin/rails/${segment(v.rail)}/statement-pulls`, { contentType: 'application/json', data: JSON.stringify({ day: v.day }), timeoutMs: STATEMENT_CALL_TIMEOUT_MS }),
  },
];

/** A comma-separated list flag (`--modes test,live`); undefined when not given. */
function listOf(value: string | boolean | undefined, name: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new UsageError(`--${name} takes a comma-separated list`);
  return value === '' ? [] : value.split(',').map((item) => item.trim());
}

/** The rails, their settings and routing rules (docs/rails.md). */
const RAIL_COMMANDS: Command[] = [
  {
    name: 'rails list',
    summary: 'List the rails with their settings, breaker, health and counts, and the routing rules (GET /v1/admin/rails)',
    flags: {},
    run: () => call('GET', '/v1/admin/rails'),
  },
  {
    name: 'rails set',
    summary: "Change a rail's settings (PATCH /v1/admin/rails/{name})",
    details: 'Only the settings given change. Every process routes by them within a few seconds.',
    flags: {
      rail: RAIL,
      modes: { type: 'string', value: 'test,live', description: 'the modes it serves (comma-separated; empty for none)' },
      instruments: { type: 'string', value: 'pago_movil,transferencia', description: 'the instruments it serves (comma-separated)' },
      enabled: { type: 'string', value: 'on|off', description: 'off: no new payout is routed to it' },
    },
    run: (v) => {
      const body = { modes: listOf(v.modes, 'modes'), instruments: listOf(v.instruments, 'instruments'), enabled: onOff(v.enabled, 'enabled') };
      if (Object.values(body).every((value) => value === undefined)) throw new UsageError('rails set: give at least one setting to change; see "bolivar rails set --help"');
      return call('PATCH', `/v1/admin/rails/${segment(v.rail)}`, body);
    },
  },
  {
    name: 'rails routes',
    summary: 'List the routing rules in the order they apply (GET /v1/admin/rails/routes)',
    flags: {},
    run: () => call('GET', '/v1/admin/rails/routes'),
  },
  {
    name: 'rails add-route',
    summary: 'Add a routing rule (POST /v1/admin/rails/routes)',
    details: 'A payout matching every condition given is tried on the rail first; rules apply by priority, lowest first. Amounts are delivered BS, minor units.',
    flags: {
      priority: { type: 'string', value: 'N', required: true, description: 'lower applies first (0 to 1000000)' },
      rail: RAIL,
      tenant: { type: 'string', value: 'ID', description: "only this tenant's payouts" },
      mode: { type: 'string', value: 'test|live', description: 'only this mode' },
      method: { type: 'string', value: 'pago_movil|transferencia', description: 'only this instrument' },
      bank: { type: 'string', value: 'CODE', description: "only this beneficiary bank code (4 digits)" },
      min: { type: 'string', value: 'MINOR', description: 'only amounts delivered of at least this' },
      max: { type: 'string', value: 'MINOR', description: 'only amounts delivered of at most this' },
    },
    run: (v) =>
      call('POST', '/v1/admin/rails/routes', {
        priority: int(v.priority, 'priority'),
        rail: v.rail,
        tenantId: v.tenant,
        mode: v.mode,
        instrument: v.method,
        bankCode: v.bank,
        minAmount: int(v.min, 'min'),
        maxAmount: int(v.max, 'max'),
      }),
  },
  {
    name: 'rails delete-route',
    summary: 'Remove a routing rule (DELETE /v1/admin/rails/routes/{id})',
    flags: { rule: { type: 'string', value: 'ID', required: true, description: 'the rule id (rails routes shows it)' } },
    run: (v) => call('DELETE', `/v1/admin/rails/routes/${segment(v.rule)}`),
  },
];

const COMMANDS: Command[] = [
  {
    name: 'tenants create',
    summary: 'Create a customer tenant (POST /v1/admin/tenants)',
    details: 'Defaults: prefunded, fee 100 bps + 0, spread 50 bps, no credit ceiling.',
    flags: {
      name: { type: 'string', value: 'NAME', required: true, description: 'display name, 1 to 200 characters' },
      credit: { type: 'boolean', description: 'a credit tenant (daily close) instead of a prefunded one' },
      'credit-limit': { type: 'string', value: 'MINOR', description: 'BS credit ceiling in minor units (none when omitted)' },
      'fee-bps': { type: 'string', value: 'N', description: 'fee in basis points of the delivered amount, 0 to 10000 (default 100)' },
      'fee-fixed': { type: 'string', value: 'MINOR', description: 'fixed fee in BS minor units (default 0)' },
      'spread-bps': { type: 'string', value: 'N', description: 'FX margin in basis points, 0 to 9999 (default 50)' },
      'reject-invalid-accounts': { type: 'boolean', description: 'fail transferencia payouts to account numbers with wrong check digits before the rail' },
    },
    run: (v) =>
      call('POST', '/v1/admin/tenants', {
        name: v.name,
        ...(v.credit ? { creditEnabled: true } : {}),
        creditLimit: int(v['credit-limit'], 'credit-limit'),
        feeBps: int(v['fee-bps'], 'fee-bps'),
        feeFixed: int(v['fee-fixed'], 'fee-fixed'),
        spreadBps: int(v['spread-bps'], 'spread-bps'),
        ...(v['reject-invalid-accounts'] ? { rejectInvalidAccounts: true } : {}),
      }),
  },
  {
    name: 'tenants list',
    summary: 'List customer tenants, newest first (GET /v1/admin/tenants)',
    details: 'Prints one page with has_more and next_cursor; pass next_cursor as --cursor for the next one, or use --all.',
    flags: pageFlags('tenants'),
    run: (v) => listPages('/v1/admin/tenants', {}, v),
  },
  {
    name: 'tenants get',
    summary: "Read one tenant's settings (GET /v1/admin/tenants/{id})",
    flags: { tenant: TENANT },
    run: (v) => call('GET', `/v1/admin/tenants/${segment(v.tenant)}`),
  },
  {
    name: 'tenants update',
    summary: "Change a tenant's settings (PATCH /v1/admin/tenants/{id})",
    details: 'Only the flags given change (at least one). New quotes use a new fee schedule and spread; quotes already given keep theirs.',
    flags: {
      tenant: TENANT,
      name: { type: 'string', value: 'NAME', description: 'display name, 1 to 200 characters' },
      credit: { type: 'string', value: 'on|off', description: 'on: a credit tenant (daily close); off: prefunded' },
      'credit-limit': { type: 'string', value: 'MINOR|none', description: 'BS credit ceiling in minor units, or none' },
      'fee-bps': { type: 'string', value: 'N', description: 'fee in basis points of the delivered amount, 0 to 10000' },
      'fee-fixed': { type: 'string', value: 'MINOR', description: 'fixed fee in BS minor units' },
      'spread-bps': { type: 'string', value: 'N', description: 'FX margin in basis points, 0 to 9999' },
      'reject-invalid-accounts': { type: 'string', value: 'on|off', description: 'on: fail transferencia payouts to account numbers with wrong check digits before the rail' },
    },
    run: (v) => {
      const body = {
        name: v.name,
        creditEnabled: onOff(v.credit, 'credit'),
        creditLimit: v['credit-limit'] === 'none' ? null : int(v['credit-limit'], 'credit-limit'),
        feeBps: int(v['fee-bps'], 'fee-bps'),
        feeFixed: int(v['fee-fixed'], 'fee-fixed'),
        spreadBps: int(v['spread-bps'], 'spread-bps'),
        rejectInvalidAccounts: onOff(v['reject-invalid-accounts'], 'reject-invalid-accounts'),
      };
      if (Object.values(body).every((value) => value === undefined)) throw new UsageError('tenants update: give at least one setting to change; see "bolivar tenants update --help"');
      return call('PATCH', `/v1/admin/tenants/${segment(v.tenant)}`, body);
    },
  },
  {
    name: 'keys list',
    summary: "List a tenant's API keys, revoked ones included (GET /v1/admin/tenants/{id}/api-keys)",
    details: 'Shows each key\'s id, mode, scopes, prefix and last 4 characters, never the key itself.',
    flags: { tenant: TENANT },
    run: (v) => call('GET', `/v1/admin/tenants/${segment(v.tenant)}/api-keys`),
  },
  {
    name: 'keys issue',
    summary: 'Issue an API key for a tenant (POST /v1/admin/tenants/{id}/api-keys)',
    details: 'The key is printed once; only its prefix and last 4 characters are kept readable.',
    flags: {
      tenant: TENANT,
      mode: { ...MODE, description: 'test (sandbox rail) or live' },
      scopes: { type: 'string', value: 'a,b', description: 'comma-separated scopes (default: all eight customer scopes)' },
    },
    run: (v) =>
      call('POST', `/v1/admin/tenants/${segment(v.tenant)}/api-keys`, {
        mode: v.mode,
        ...(v.scopes ? { scopes: (v.scopes as string).split(',').map((s) => s.trim()) } : {}),
      }),
  },
  {
    name: 'keys revoke',
    summary: 'Revoke an API key (DELETE /v1/admin/api-keys/{id})',
    details: 'The key fails with api_key_invalid from the next request, on every process.',
    flags: { 'key-id': { type: 'string', value: 'ID', required: true, description: 'the id of the key (not the key itself)' } },
    run: (v) => call('DELETE', `/v1/admin/api-keys/${segment(v['key-id'])}`),
  },
  {
    name: 'fund',
    summary: "Credit a tenant's prefunding balance (POST /v1/admin/tenants/{id}/fundings)",
    details:
      'Prints the treasury position of that asset afterwards. Each run sends a new Idempotency-Key, so two runs are two\n' +
      'fundings; to retry one safely (an answer lost on the way), give the same --idempotency-key both times.',
    flags: {
      tenant: TENANT,
      mode: MODE,
      amount: { type: 'string', value: 'MINOR', required: true, description: 'integer minor units (5000000 = 50,000.00 Bs)' },
      asset: { type: 'string', value: 'ASSET', description: 'BS (default), USD, USDC or VESC' },
      'idempotency-key': { type: 'string', value: 'KEY', description: 'the Idempotency-Key to send (default: a new one per run)' },
    },
    run: (v) =>
      call(
        'POST',
        `/v1/admin/tenants/${segment(v.tenant)}/fundings`,
        { mode: v.mode, asset: v.asset ?? 'BS', amount: int(v.amount, 'amount') },
        { 'idempotency-key': (v['idempotency-key'] as string | undefined) ?? `cli-${randomUUID()}` },
      ),
  },
  {
    name: 'close',
    summary: 'Run the daily close of a tenant now, every asset (POST /v1/admin/tenants/{id}/close)',
    flags: { tenant: TENANT, mode: MODE },
    run: (v) => call('POST', `/v1/admin/tenants/${segment(v.tenant)}/close`, { mode: v.mode }),
  },
  {
    name: 'senders default',
    summary: "Set a program's default sender (PUT /v1/admin/tenants/{id}/default-sender)",
    details: 'The sender of payouts that carry no sender block and no customer with a stored one.',
    flags: { tenant: TENANT, mode: MODE, ...SENDER_FLAGS },
    run: (v) => call('PUT', `/v1/admin/tenants/${segment(v.tenant)}/default-sender`, { mode: v.mode, sender: senderOf(v) }),
  },
  {
    name: 'senders customer',
    summary: "Set one customer's stored sender (PUT /v1/admin/tenants/{id}/customers/{customerId})",
    details: 'The sender of that customer\'s payouts that carry no sender block (the customerId the tenant sends with its payouts).',
    flags: { tenant: TENANT, customer: { type: 'string', value: 'UUID', required: true, description: 'the customerId' }, mode: MODE, ...SENDER_FLAGS },
    run: (v) => call('PUT', `/v1/admin/tenants/${segment(v.tenant)}/customers/${segment(v.customer)}`, { mode: v.mode, sender: senderOf(v) }),
  },
  {
    name: 'rates set',
    summary: 'Set the market rate of an asset, in BS per unit (PUT /v1/admin/rates/{asset})',
    flags: {
      asset: { type: 'string', value: 'USD|USDC|VESC', required: true, description: 'the asset priced in BS' },
      market: { type: 'string', value: 'DECIMAL', required: true, description: 'BS per 1 unit, e.g. 930.50 (at most 8 decimals)' },
    },
    run: (v) => call('PUT', `/v1/admin/rates/${segment(v.asset)}`, { market: v.market }),
  },
  {
    name: 'rates list',
    summary: 'List the FX rates, in BS per unit, with when each was set (GET /v1/admin/rates)',
    flags: {},
    run: () => call('GET', '/v1/admin/rates'),
  },
  {
    name: 'webhook set',
    summary: "Set a program's webhook endpoint (PUT /v1/admin/tenants/{id}/webhook-endpoint)",
    details: 'The first call creates the signing secret and prints it; later calls change the URL and keep the secret.',
    flags: { tenant: TENANT, mode: MODE, url: { type: 'string', value: 'URL', required: true, description: 'http:// or https:// URL (live mode: public hosts only; test mode: public hosts or loopback)' } },
    run: (v) => call('PUT', `/v1/admin/tenants/${segment(v.tenant)}/webhook-endpoint`, { mode: v.mode, url: v.url }),
  },
  {
    name: 'webhook rotate',
    summary: "Rotate a program's webhook signing secret (POST /v1/admin/tenants/{id}/webhook-endpoint/rotate-secret)",
    details: 'The old secret keeps signing, as the second signature, until previousSecretExpiresAt.',
    flags: { tenant: TENANT, mode: MODE },
    run: (v) => call('POST', `/v1/admin/tenants/${segment(v.tenant)}/webhook-endpoint/rotate-secret`, { mode: v.mode }),
  },
  {
    name: 'limits add',
    summary: 'Create a limit rule (POST /v1/admin/limit-rules)',
    details: 'A rule for the same scope, tenant, subject and method replaces the previous one. Amounts are delivered BS, minor units.',
    flags: {
      scope: { type: 'string', value: 'platform|tenant|customer|beneficiary', required: true, description: 'whom the rule applies to' },
      tenant: { type: 'string', value: 'ID', description: 'the tenant id (every scope but platform)' },
      subject: { type: 'string', value: 'ID', description: 'the customerId or beneficiary id (customer and beneficiary scopes)' },
      method: { type: 'string', value: "pago_movil|transferencia|'*'", required: true, description: 'the instrument, or * for any' },
      'per-tx': { type: 'string', value: 'MINOR', required: true, description: 'largest single payout' },
      daily: { type: 'string', value: 'MINOR', required: true, description: 'delivered per Caracas day' },
      monthly: { type: 'string', value: 'MINOR', description: 'delivered per Caracas month (none when omitted)' },
      'daily-count': { type: 'string', value: 'N', description: 'payouts per Caracas day (none when omitted)' },
    },
    run: (v) =>
      call('POST', '/v1/admin/limit-rules', {
        scope: v.scope,
        tenantId: v.tenant,
        subjectId: v.subject,
        method: v.method,
        per_tx_max: int(v['per-tx'], 'per-tx'),
        daily_max: int(v.daily, 'daily'),
        monthly_max: int(v.monthly, 'monthly'),
        daily_count_max: int(v['daily-count'], 'daily-count'),
      }),
  },
  {
    name: 'limits list',
    summary: 'List the live limit rules, oldest first (GET /v1/admin/limit-rules)',
    flags: { tenant: { type: 'string', value: 'ID', description: "only the rules that can apply to this tenant (its own and the platform's)" } },
    run: (v) => call('GET', `/v1/admin/limit-rules${v.tenant ? `?tenantId=${encodeURIComponent(v.tenant as string)}` : ''}`),
  },
  {
    name: 'reconcile',
    summary: 'Reconcile the books now (POST /v1/admin/reconciliation/runs)',
    details:
      'Queues a run for one tenant (one mode, or both) or, without --tenant, for every tenant and mode with books, and prints\n' +
      'the runs. A run proves the whole history; --incremental proves what was written since the last completed run, as\n' +
      'the schedule does. With --wait it follows each run until it ends and prints each with its discrepancies; it then exits 0 when\n' +
      `every run completed clean, ${EXIT_NOT_CLEAN} when one found discrepancies, failed or was abandoned.`,
    flags: {
      tenant: { type: 'string', value: 'ID', description: 'only this tenant (default: every tenant and mode with books)' },
      mode: { type: 'string', value: 'test|live', description: 'only this mode (default: both)' },
      incremental: { type: 'boolean', description: 'prove only what was written since the last completed run (default: the whole history)' },
      wait: { type: 'boolean', description: 'follow the runs until they end' },
      'timeout-s': { type: 'string', value: 'N', description: `with --wait, give up after N seconds (default ${RECONCILE_WAIT_DEFAULT_S})` },
    },
    run: async (v) => {
      const timeoutS = int(v['timeout-s'], 'timeout-s') ?? RECONCILE_WAIT_DEFAULT_S;
      const started = (await call('POST', '/v1/admin/reconciliation/runs', { tenantId: v.tenant, mode: v.mode, scope: v.incremental ? 'incremental' : undefined })) as { data: Array<{ id: string }>; total: number };
      if (!v.wait) return started;
      const deadline = Date.now() + timeoutS * 1000;
      const data: unknown[] = [];
      for (const { id } of started.data) data.push(await runWhenEnded(id, deadline, timeoutS));
      return { data, total: started.total };
    },
    exitCode: (result) => {
      const runs = (result as { data: Array<{ status: string; clean?: boolean | null }> }).data;
      return runs.some((r) => r.status !== 'queued' && r.status !== 'running' && r.clean !== true) ? EXIT_NOT_CLEAN : 0;
    },
  },
  {
    name: 'reconciliation list',
    summary: 'List reconciliation runs, newest first (GET /v1/admin/reconciliation/runs)',
    details: 'Prints one page with has_more and next_cursor; pass next_cursor as --cursor for the next one.',
    flags: {
      tenant: { type: 'string', value: 'ID', description: "only this tenant's runs" },
      mode: { type: 'string', value: 'test|live', description: 'only runs of this mode' },
      status: { type: 'string', value: 'STATUS', description: 'only runs in this status: queued, running, completed, failed or abandoned' },
      limit: { type: 'string', value: 'N', description: 'page size, 1 to 100 (default 25)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the next_cursor of the previous page' },
    },
    run: (v) => {
      const params = new URLSearchParams();
      for (const [flag, name] of [['tenant', 'tenantId'], ['mode', 'mode'], ['status', 'status'], ['cursor', 'cursor']] as const) {
        if (typeof v[flag] === 'string') params.set(name, v[flag] as string);
      }
      const limit = int(v.limit, 'limit');
      if (limit !== undefined) params.set('limit', String(limit));
      const query = params.toString();
      return call('GET', `/v1/admin/reconciliation/runs${query ? `?${query}` : ''}`);
    },
  },
  {
    name: 'reconciliation show',
    summary: 'Show a reconciliation run with its discrepancies (GET /v1/admin/reconciliation/runs/{id})',
    flags: { run: { type: 'string', value: 'ID', required: true, description: 'the run id (reconcile and reconciliation list print it)' } },
    run: (v) => call('GET', `/v1/admin/reconciliation/runs/${segment(v.run)}`),
  },
  {
    name: 'limits delete',
    summary: 'Delete a limit rule (DELETE /v1/admin/limit-rules/{id})',
    details: 'It stops applying from the next payout.',
    flags: { rule: { type: 'string', value: 'ID', required: true, description: 'the rule id (limits list shows it)' } },
    run: (v) => call('DELETE', `/v1/admin/limit-rules/${segment(v.rule)}`),
  },
  {
    name: 'recheck',
    summary: 'Ask the rail about an unresolved payment again, now (POST /v1/admin/payments/{id}/recheck)',
    details: 'For a payment the reaper stopped asking about after REAPER_CHECK_ATTEMPTS_MAX questions: back on the schedule with a fresh backoff.',
    flags: { payment: { type: 'string', value: 'ID', required: true, description: 'the payment id' } },
    run: (v) => call('POST', `/v1/admin/payments/${segment(v.payment)}/recheck`),
  },
  {
    name: 'audit',
    summary: 'Read the audit trail: who did what, newest first (GET /v1/admin/audit)',
    details: `Prints one page with has_more and next_cursor; pass next_cursor as --cursor for the next one.
What a key did: --actor-key with its id (keys list shows it); what was done to a tenant: --tenant.`,
    flags: {
      'actor-key': { type: 'string', value: 'ID', description: 'only what this API key did' },
      tenant: { type: 'string', value: 'ID', description: "only actions on this tenant's objects" },
      'target-type': { type: 'string', value: 'TYPE', description: 'only actions on this kind of target (tenant, api_key, funding, payment…)' },
      'target-id': { type: 'string', value: 'ID', description: 'only actions on this target' },
      action: { type: 'string', value: 'ACTION', description: 'only this action (tenant.update, api_key.revoke…)' },
      from: { type: 'string', value: 'TIME', description: 'only actions at or after this ISO-8601 instant' },
      to: { type: 'string', value: 'TIME', description: 'only actions before this ISO-8601 instant' },
      limit: { type: 'string', value: 'N', description: 'page size, 1 to 100 (default 25)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the next_cursor of the previous page' },
    },
    run: (v) => {
      const limit = int(v.limit, 'limit');
      const query = new URLSearchParams();
      const pairs: Array<[string, unknown]> = [
        ['actorKeyId', v['actor-key']],
        ['tenantId', v.tenant],
        ['targetType', v['target-type']],
        ['targetId', v['target-id']],
        ['action', v.action],
        ['from', v.from],
        ['to', v.to],
        ['limit', limit],
        ['cursor', v.cursor],
      ];
      for (const [name, value] of pairs) if (value !== undefined) query.set(name, String(value));
      const text = query.toString();
      return call('GET', `/v1/admin/audit${text ? `?${text}` : ''}`);
    },
  },
  {
    name: 'anomalies list',
    summary: 'List anomalies, newest first (GET /v1/admin/anomalies)',
    details:
      'What the rail said that contradicts our records, and what reconciliation found; our records were left as they were.\n' +
      '--status open lists those waiting for an operator. Prints one page with has_more and next_cursor, or every page with --all.',
    flags: {
      status: { type: 'string', value: 'open|resolved', description: 'only open or only resolved anomalies' },
      kind: { type: 'string', value: 'KIND', description: 'only this kind, e.g. settled_after_failed (docs/operations.md lists them)' },
      mode: { type: 'string', value: 'live|test|all', description: 'default live (with those of no mode); test: what test programs made the sandbox say' },
      tenant: { type: 'string', value: 'TENANT_ID', description: "only this tenant's anomalies" },
      ...pageFlags('anomalies'),
    },
    run: (v) =>
      listPages(
        '/v1/admin/anomalies',
        { status: v.status as string | undefined, kind: v.kind as string | undefined, mode: v.mode as string | undefined, tenantId: v.tenant as string | undefined },
        v,
      ),
  },
  {
    name: 'anomalies get',
    summary: 'Read one anomaly with its evidence (GET /v1/admin/anomalies/{id})',
    flags: { anomaly: ANOMALY },
    run: (v) => call('GET', `/v1/admin/anomalies/${segment(v.anomaly)}`),
  },
  {
    name: 'anomalies resolve',
    summary: 'Resolve an open anomaly with a note (POST /v1/admin/anomalies/{id}/resolve)',
    details: 'The note says what was found and done; the platform key\'s id is stored as resolvedBy. Nothing else changes.',
    flags: { anomaly: ANOMALY, note: { type: 'string', value: 'TEXT', required: true, description: 'what was found and done, 1 to 2000 characters' } },
    run: (v) => call('POST', `/v1/admin/anomalies/${segment(v.anomaly)}/resolve`, { note: v.note }),
  },
  ...RAIL_STATEMENT_COMMANDS,
  ...RAIL_COMMANDS,
  {
    name: 'migrate',
    summary: 'Apply pending migrations (DATABASE_URL, or the embedded database in DATA_DIR); needs no running service',
    flags: {},
    run: async () => {
      const db = await openDatabase(loadConfig(), { purpose: 'bolivar migrate' });
      try {
        return await migrate(db);
      } finally {
        await db.close();
      }
    },
  },
  {
    name: 'config',
    summary: 'List the environment variables the service reads, with their defaults; needs no running service',
    flags: {},
    run: async () => Object.fromEntries(CONFIG_DOC.map(([name, fallback, meaning]) => [name, `${meaning} (default ${fallback})`])),
  },
];

/** The commands' names, as typed after `bolivar` (docs/admin.md lists each; a test checks it). */
export const COMMAND_NAMES: readonly string[] = COMMANDS.map((c) => c.name);

function usageLine(command: Command): string {
  const parts = Object.entries(command.flags).map(([name, flag]) => {
    const text = flag.type === 'boolean' ? `--${name}` : `--${name} ${flag.value ?? 'VALUE'}`;
    return flag.required ? text : `[${text}]`;
  });
  return ['bolivar', command.name, ...parts].join(' ');
}

function commandHelp(command: Command): string {
  const rows: Array<[string, string]> = Object.entries(command.flags).map(([name, flag]) => [
    flag.type === 'boolean' ? `--${name}` : `--${name} ${flag.value ?? 'VALUE'}`,
    `${flag.description}${flag.required ? ' (required)' : ''}`,
  ]);
  rows.push(['--help', 'show this help']);
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `Usage: ${usageLine(command)}`,
    '',
    command.summary + '.',
    ...(command.details ? [command.details] : []),
    '',
    'Flags:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
    ENVIRONMENT,
  ].join('\n');
}

function overview(commands: readonly Command[] = COMMANDS, heading = 'Usage: bolivar <command> [flags]'): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    heading,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run "bolivar <command> --help" for the flags of a command.',
    '',
    ENVIRONMENT,
  ].join('\n');
}

const wantsHelp = (args: readonly string[]) => args.includes('--help') || args.includes('-h');

/** The URL path segment of an id given on the command line (kept whole, never a path of its own). */
function segment(value: string | boolean | undefined): string {
  return encodeURIComponent(String(value));
}

function int(value: string | boolean | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

function platformKey(): string {
  if (process.env.PLATFORM_API_KEY) return process.env.PLATFORM_API_KEY;
  const file = path.resolve(process.env.DATA_DIR ?? './data', 'bootstrap.json');
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { platformApiKey?: string };
    if (saved.platformApiKey) return saved.platformApiKey;
  } catch {
    // fall through
  }
  throw new CliError(`no platform key: set PLATFORM_API_KEY, or start the service once to create ${file}`);
}

/** Where warnings go: stderr, or the `err` that runCli was given. */
let warn = (text: string): void => void process.stderr.write(text);
let plainHttpWarned = false;

/** This machine only: `localhost` (and `*.localhost`) or a loopback address. */
export function isLocalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(host)) return false;
  const address = ipaddr.process(host); // an IPv4-mapped IPv6 address is judged as its IPv4 address
  return address.range() === 'loopback';
}

/** Plain http beyond this machine carries the platform key in clear text: said once per run. */
function warnOnPlainHttp(url: URL): void {
  if (url.protocol !== 'http:' || isLocalHost(url.hostname) || plainHttpWarned) return;
  plainHttpWarned = true;
  warn(`bolivar: warning: BOLIVAR_URL is plain http to ${url.host}, not this machine: the platform key crosses the network unencrypted; use https://\n`);
}

function serviceBase(): { base: string; source: string } {
  const given = process.env.BOLIVAR_URL;
  const raw = given || `http://localhost:${process.env.PORT || 3000}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`BOLIVAR_URL=${JSON.stringify(raw)} is not a URL; give the service's base URL, such as http://localhost:3000`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`BOLIVAR_URL=${JSON.stringify(raw)} is not an http:// or https:// URL; give the service's base URL, such as http://localhost:3000`);
  }
  warnOnPlainHttp(url);
  return { base: raw.replace(/\/+$/, ''), source: given ? 'BOLIVAR_URL' : 'the default; BOLIVAR_URL is not set' };
}

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** The system error code behind a failed fetch (undici puts it on `cause`, or on each error of an AggregateError). */
function networkCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown; errors?: Array<{ code?: unknown }> } })?.cause;
  const code = cause?.code ?? cause?.errors?.find((e) => typeof e?.code === 'string')?.code;
  return typeof code === 'string' ? code : undefined;
}

/** One line for an error answer: status, code, message and request id, from the error envelope when there is one. */
function errorAnswer(status: number, text: string, url: string): string {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: string; message?: string; request_id?: string } };
    if (error?.code) return `${status} ${error.code}: ${error.message ?? ''}${error.request_id ? ` (request_id ${error.request_id})` : ''}`;
  } catch {
    // not the envelope: shown as text below
  }
  const body = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  return `HTTP ${status} from ${url}${body ? `: ${body}` : ''} (is BOLIVAR_URL the Bolivar service?)`;
}

async function call(method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  return send(method, route, body === undefined ? undefined : { contentType: 'application/json', data: JSON.stringify(body) }, headers);
}

/** A request with any body: a JSON text, or a stream sent as it is read (`stream`, e.g. a statement file). */
interface Body {
  contentType: string;
  data: string | ReadableStream<Uint8Array>;
  /** How long the whole call may take (default CALL_TIMEOUT_MS). */
  timeoutMs?: number;
}

async function send(method: string, route: string, body?: Body, headers: Record<string, string> = {}): Promise<unknown> {
  const { base, source } = serviceBase();
  const key = platformKey();
  const url = `${base}${route}`;
  const timeoutMs = body?.timeoutMs ?? CALL_TIMEOUT_MS;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': body.contentType }), ...headers },
      body: body?.data,
      // A stream body is sent as it is read (fetch requires saying so).
      ...(typeof body?.data === 'object' ? { duplex: 'half' } : {}),
      // Never follow a redirect with the platform key (the same refusal as 'error', but the answer
      // stays readable, so the message can say where it pointed).
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    } as RequestInit);
  } catch (error) {
    if ((error as Error)?.name === 'TimeoutError') {
      throw new CliError(`no answer from the service at ${base} (${source}) within ${timeoutMs / 1000} s`);
    }
    const code = networkCode(error);
    const why = code ? `${NETWORK_REASONS[code] ?? code}` : ((error as Error)?.message ?? String(error));
    throw new CliError(
      `cannot reach the service at ${base} (${source}): ${why}. Start it (npm start), or set BOLIVAR_URL to its base URL, e.g. BOLIVAR_URL=http://localhost:3000`,
    );
  }
  const text = await response.text();
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get('location');
    throw new CliError(
      `the service at ${base} (${source}) answered with a redirect (HTTP ${response.status}${location ? ` to ${location.slice(0, 200)}` : ''}), ` +
        'which the CLI does not follow so that the platform key goes to BOLIVAR_URL only; set BOLIVAR_URL to the service\'s own URL',
    );
  }
  if (!response.ok) throw new CliError(errorAnswer(response.status, text, url));
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`the answer from ${url} is not JSON (is BOLIVAR_URL the Bolivar service?)`);
  }
}

/** Reads a run until it has ended (completed, failed or abandoned), up to `deadline`. */
async function runWhenEnded(id: string, deadline: number, timeoutS: number): Promise<unknown> {
  for (;;) {
    const run = (await call('GET', `/v1/admin/reconciliation/runs/${segment(id)}`)) as { status: string };
    if (run.status !== 'queued' && run.status !== 'running') return run;
    if (Date.now() + RECONCILE_POLL_MS > deadline) {
      throw new CliError(`run ${id} is still ${run.status} after ${timeoutS} s; see it later with: bolivar reconciliation show --run ${id}`);
    }
    await new Promise((resolve) => setTimeout(resolve, RECONCILE_POLL_MS));
  }
}

/** Finds the command named by the leading words of argv: its own flags follow it. */
function resolve(argv: readonly string[]): { command?: Command; rest: string[]; words: string[] } {
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-')) break;
    words.push(arg);
  }
  for (const count of [3, 2, 1]) {
    const name = words.slice(0, count).join(' ');
    const command = words.length >= count ? COMMANDS.find((c) => c.name === name) : undefined;
    if (command) return { command, rest: argv.slice(count), words };
  }
  return { rest: [...argv], words };
}

function parseFlags(command: Command, rest: string[]): Values {
  const hint = `see "bolivar ${command.name} --help"`;
  let values: Values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: Object.fromEntries(Object.entries(command.flags).map(([name, flag]) => [name, { type: flag.type }])),
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    const message = ((error as Error).message ?? String(error)).split('\n')[0]!.replace(/\. This command does not take positional arguments$/, '');
    throw new UsageError(`${command.name}: ${message}; ${hint}`);
  }
  const missing = Object.entries(command.flags)
    .filter(([name, flag]) => flag.required && (values[name] === undefined || values[name] === ''))
    .map(([name]) => `--${name}`);
  if (missing.length > 0) throw new UsageError(`${command.name}: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required; ${hint}`);
  return values;
}

/** Runs the CLI; returns the exit code. Output goes to `out`, the one-line failure to `err`. */
export async function runCli(argv: readonly string[], out: (text: string) => void, err: (text: string) => void): Promise<number> {
  warn = err;
  try {
    const { command, rest, words } = resolve(argv);
    if (!command) {
      if (words.length === 0) {
        // `bolivar`, `bolivar --help`: the overview.
        if (argv.length > 0 && !wantsHelp(argv)) throw new UsageError(`give a command before ${argv[0]}; see "bolivar --help"`);
        out(`${overview()}\n`);
        return 0;
      }
      const prefix = words.join(' ');
      const group = COMMANDS.filter((c) => c.name.startsWith(`${prefix} `));
      if (group.length > 0) {
        if (wantsHelp(argv)) {
          const next = [...new Set(group.map((c) => c.name.slice(prefix.length + 1).split(' ')[0]))];
          out(`${overview(group, `Usage: bolivar ${prefix} <${next.join('|')}> [flags]`)}\n`);
          return 0;
        }
        throw new UsageError(`"${prefix}" needs a subcommand: ${group.map((c) => c.name).join(', ')}; see "bolivar ${prefix} --help"`);
      }
      throw new UsageError(`unknown command "${words.join(' ')}"; see "bolivar --help" for the list`);
    }
    if (wantsHelp(rest)) {
      out(`${commandHelp(command)}\n`);
      return 0;
    }
    const result = await command.run(parseFlags(command, rest));
    if (result !== undefined) out(`${JSON.stringify(result, null, 2)}\n`);
    return command.exitCode?.(result) ?? 0;
  } catch (error) {
    if (error instanceof UsageError) {
      err(`bolivar: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      err(`bolivar: ${error.message}\n`);
      return 1;
    }
    const message = error instanceof Error ? error.message : String(error);
    err(`bolivar: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
    return 1;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await runCli(
    process.argv.slice(2),
    (text) => process.stdout.write(text),
    (text) => process.stderr.write(text),
  );
}
