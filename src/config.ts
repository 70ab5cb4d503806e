// Every knob is an environment variable, parsed once at start. A bad value stops the start with a
// message that names the variable and what it accepts, so an operator never runs a half-configured
// service.

import path from 'node:path';
import { isIP } from 'node:net';

type Role = 'all' | 'api' | 'worker';
type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  dbPoolSize: number;
  dbConnectionMaxLifetimeS: number;
  dbStatementTimeoutMs: number;
  dbLockTimeoutMs: number;
  /** How long a start waits for an unreachable or restarting PostgreSQL before giving up. */
  dbConnectWaitS: number;
  /** What DATABASE_URL reaches: PostgreSQL itself (none) or a transaction pooler such as PgBouncer (docs/pooler.md). */
  databasePooler: 'none' | 'transaction';
  /** PostgreSQL itself, for the work that needs a session (migrations' lock); required behind a transaction pooler. */
  databaseDirectUrl: string | undefined;
  bootstrap: boolean;
  platformApiKey: string | undefined;
  publicBaseUrl: string | undefined;
  role: Role;
  logLevel: LogLevel;
  rateLimitRps: number;
  /** Requests per second per client address to the routes that need no key (health, docs, sandbox receivers, metrics); 0 disables. */
  publicRateLimitRps: number;
  railCallbackRps: number;
  /** Bearer token that /metrics requires; unset: /metrics is not served on the API port. */
  metricsToken: string | undefined;
  /** A second, internal listener that serves /metrics only; unset: none. */
  metricsPort: number | undefined;
  /** The interface of the METRICS_PORT listener (default HOST). */
  metricsHost: string;
  /** Failed authentications per client address per window before 429; 0 disables. */
  authFailureLimit: number;
  /** Failed lookups of well-formed keys per key prefix (all addresses) per window before 429; 0 disables. */
  authFailurePrefixLimit: number;
  authFailureWindowS: number;
  /**
   * Which peers' X-Forwarded-For is believed for the client address (the auth-failure limiter's key,
   * logs): false (none), or the proxies' addresses, CIDR ranges or range names. A hop count is not
   * offered: it would believe a header any direct client can write.
   */
  trustProxy: false | string[];
  quoteTtlSeconds: number;
  rateMaxAgeSeconds: number;
  sandboxSettleDelayMs: number;
  sandboxReverseDelayMs: number;
  sandboxRailTimeoutMs: number;
  /** Connections to one rail refused in a row that open its circuit breaker (per process). */
  railBreakerFailures: number;
  /** The sliding window a rail's failure rate is taken over. */
  railBreakerWindowMs: number;
  /** Calls the window must hold before its failure rate can open the breaker. */
  railBreakerMinCalls: number;
  /** Failed calls, in percent of the window's, that open the breaker. */
  railBreakerFailureRate: number;
  /** Payouts that may wait for a half-open breaker's probe at once. */
  railBreakerHalfOpenWaiters: number;
  /** How long a payout may wait for a rail to admit it before it fails `bank_unreachable`. */
  railQueueMaxAgeS: number;
  /** How long an open breaker skips its rail before one health probe. */
  railBreakerOpenMs: number;
  reaperIntervalMs: number;
  reportFoldIntervalMs: number;
  reaperCheckAttemptsMax: number;
  reaperBackoffMaxMs: number;
  webhookBackoffScale: number;
  webhookTimeoutMs: number;
  webhookSecretOverlapHours: number;
  webhookConcurrency: number;
  dispatcherIntervalMs: number;
  idempotencyTtlHours: number;
  /** The most items of one payout batch. */
  payoutBatchMaxItems: number;
  /** Payout batches of one tenant and mode being recorded at once. */
  payoutBatchesInProgressMax: number;
  /** Payout batch items per second a tenant may send across its keys (each key also has RATE_LIMIT_RPS); 0 = unlimited. */
  payoutBatchTenantItemsPerS: number;
  /** How often every tenant and mode is reconciled (worker role); 0 = only on demand. */
  reconcileIntervalS: number;
  /** The schedule's runs prove what changed since the last one; the whole history once this long after the last full proof. */
  reconcileFullIntervalS: number;
  /** Audit rows older than this many days are archived to auditArchiveDir and removed; 0: kept for ever. */
  auditRetentionDays: number;
  auditArchiveDir: string;
  /** Minutes after Caracas midnight from which the worker pulls each live connector's statement of the day before; null: off. */
  railStatementPullAtMinutes: number | null;
  shutdownGraceMs: number;
  /**
   * RAILS_FILE: the path of the file listing the connectors, the rails beside the sandbox (none
   * without one). Read and checked at start by rails/rails-file.ts (readRailsFile).
   */
  railsFile: string | null;
  /** A streaming replica of DATABASE_URL that serves the list reads (docs/read-replica.md); PostgreSQL only. */
  databaseReadUrl: string | undefined;
  /** Past this lag behind the primary, the replica's reads go to the primary. */
  readReplicaMaxLagMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly accepts: string,
    readonly got: string,
    detail?: string,
  ) {
    super(
      `Invalid configuration: ${variable}=${JSON.stringify(got)}; ${variable} accepts ${accepts}.${detail ? ` ${detail}` : ''}`,
    );
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(name, `an integer from ${min} to ${max}`, raw);
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `an integer from ${min} to ${max}`, raw);
  }
  return value;
}

function decimal(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw.trim())) throw new ConfigError(name, `a decimal number from ${min} to ${max}`, raw);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `a decimal number from ${min} to ${max}`, raw);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim().toLowerCase() as T;
  if (!allowed.includes(value)) throw new ConfigError(name, `one of ${allowed.join(', ')}`, raw);
  return value;
}

/** `HH:MM` (24 h) as minutes after midnight, or `off` (null). */
function timeOfDay(env: Env, name: string, fallback: number): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim().toLowerCase();
  if (value === 'off') return null;
  const match = /^([01][0-9]|2[0-3]):([0-5][0-9])$/.exec(value);
  if (!match) throw new ConfigError(name, 'a time of day HH:MM (00:00 to 23:59) or off', raw);
  return Number(match[1]) * 60 + Number(match[2]);
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim().toLowerCase();
  if (['on', 'true', '1', 'yes'].includes(value)) return true;
  if (['off', 'false', '0', 'no'].includes(value)) return false;
  throw new ConfigError(name, 'on or off', raw);
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    const parsed = new URL(raw);
    if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
    return raw;
  } catch {
    throw new ConfigError(name, `a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`, redactUrl(raw));
  }
}

function redactUrl(raw: string): string {
  return raw.replace(/\/\/([^:@/]+):([^@/]+)@/, '//$1:***@');
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
const TRUST_PROXY_ACCEPTS =
  "off, or a comma-separated list of the proxies' addresses or CIDR ranges (loopback, linklocal and uniquelocal name the usual ranges)";

function trustProxy(env: Env, name: string): false | string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '' || raw.trim().toLowerCase() === 'off') return false;
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const validPrefix = prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !validPrefix || extra !== undefined) throw new ConfigError(name, TRUST_PROXY_ACCEPTS, raw);
  }
  return entries;
}

/** One DNS name (RFC 1123 labels, at most 253 characters) or an IPv4/IPv6 address. */
const HOST_NAME =
  /^(?=.{1,253}\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

function host(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim();
  if (isIP(value) === 0 && !HOST_NAME.test(value))
    throw new ConfigError(
      name,
      'an IP address to listen on (0.0.0.0 for all, 127.0.0.1 for this machine only, :: for all IPv6) or a host name of this machine',
      raw,
    );
  return value;
}

/** A secret a scraper sends as `Authorization: Bearer …`: long enough not to be guessed, no spaces. */
const BEARER_TOKEN = /^[\x21-\x7e]{16,512}$/;

function bearerToken(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (!BEARER_TOKEN.test(raw))
    throw new ConfigError(
      name,
      '16 to 512 printable ASCII characters without spaces (for example the output of `openssl rand -hex 32`)',
      '…(hidden)',
    );
  return raw;
}

function metricsPort(env: Env, name: string, apiPort: string | undefined): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const port = integer(env, name, 0, 0, 65535);
  const api = integer({ PORT: apiPort }, 'PORT', 3000, 0, 65535);
  if (port !== 0 && port === api) throw new ConfigError(name, 'a port other than PORT (0 picks a free one)', raw);
  return port;
}

const pooler = (env: Env) => oneOf<Config['databasePooler']>(env, 'DATABASE_POOLER', 'none', ['none', 'transaction']);

/**
 * DATABASE_DIRECT_URL, which DATABASE_POOLER=transaction requires with DATABASE_URL: migrations hold
 * a session advisory lock, which a transaction pooler would leave on one of its server connections.
 */
function directUrl(env: Env, mode: Config['databasePooler']): string | undefined {
  const direct = url(env, 'DATABASE_DIRECT_URL', ['postgres:', 'postgresql:']);
  if (mode === 'transaction' && env.DATABASE_URL && direct === undefined) {
    throw new ConfigError(
      'DATABASE_DIRECT_URL',
      'a postgres:// URL of the same database that reaches PostgreSQL itself, not the pooler',
      '',
      'DATABASE_POOLER=transaction needs it: migrations hold a session lock (docs/pooler.md).',
    );
  }
  return direct;
}

const PLATFORM_KEY_PATTERN = /^bsk_platform_[0-9A-Za-z]{32,}$/;

/** The platform admin key, checked before any other setting; the error never echoes the key itself. */
function platformApiKey(env: Env): string | undefined {
  const key = env.PLATFORM_API_KEY || undefined;
  if (key !== undefined && !PLATFORM_KEY_PATTERN.test(key)) {
    throw new ConfigError(
      'PLATFORM_API_KEY',
      'bsk_platform_ followed by at least 32 base62 characters',
      'bsk_…(hidden)',
    );
  }
  return key;
}

export function loadConfig(env: Env = process.env): Config {
  const platformKey = platformApiKey(env);
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: host(env, 'HOST', '0.0.0.0'),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dataDir: env.DATA_DIR || './data',
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 20, 1, 500),
    dbConnectionMaxLifetimeS: integer(env, 'DB_CONNECTION_MAX_LIFETIME_S', 60, 0, 86_400),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 15_000, 100, 3_600_000),
    dbLockTimeoutMs: integer(env, 'DB_LOCK_TIMEOUT_MS', 5_000, 10, 3_600_000),
    dbConnectWaitS: integer(env, 'DB_CONNECT_WAIT_S', 60, 0, 3_600),
    databasePooler: pooler(env),
    databaseDirectUrl: directUrl(env, pooler(env)),
    bootstrap: onOff(env, 'BOOTSTRAP', true),
    platformApiKey: platformKey,
    publicBaseUrl: url(env, 'PUBLIC_BASE_URL', ['http:', 'https:']),
    role: oneOf<Role>(env, 'ROLE', 'all', ['all', 'api', 'worker']),
    logLevel: oneOf<LogLevel>(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    rateLimitRps: integer(env, 'RATE_LIMIT_RPS', 1000, 0, 1_000_000),
    publicRateLimitRps: integer(env, 'PUBLIC_RATE_LIMIT_RPS', 100, 0, 1_000_000),
    railCallbackRps: integer(env, 'RAIL_CALLBACK_RPS', 1000, 1, 1_000_000),
    metricsToken: bearerToken(env, 'METRICS_TOKEN'),
    metricsPort: metricsPort(env, 'METRICS_PORT', env.PORT),
    metricsHost: host(env, 'METRICS_HOST', host(env, 'HOST', '0.0.0.0')),
    authFailureLimit: integer(env, 'AUTH_FAILURE_LIMIT', 300, 0, 100_000),
    authFailurePrefixLimit: integer(env, 'AUTH_FAILURE_PREFIX_LIMIT', 3000, 0, 1_000_000),
    authFailureWindowS: integer(env, 'AUTH_FAILURE_WINDOW_S', 60, 1, 86_400),
    trustProxy: trustProxy(env, 'TRUST_PROXY'),
    quoteTtlSeconds: integer(env, 'QUOTE_TTL_SECONDS', 60, 1, 86_400),
    rateMaxAgeSeconds: integer(env, 'RATE_MAX_AGE_SECONDS', 86_400, 1, 31_536_000),
    sandboxSettleDelayMs: integer(env, 'SANDBOX_SETTLE_DELAY_MS', 3000, 0, 86_400_000),
    sandboxReverseDelayMs: integer(env, 'SANDBOX_REVERSE_DELAY_MS', 10_000, 0, 86_400_000),
    sandboxRailTimeoutMs: integer(env, 'SANDBOX_RAIL_TIMEOUT_MS', 2000, 1, 60_000),
    railBreakerFailures: integer(env, 'RAIL_BREAKER_FAILURES', 5, 1, 1000),
    railBreakerOpenMs: integer(env, 'RAIL_BREAKER_OPEN_MS', 30_000, 10, 3_600_000),
    railBreakerWindowMs: integer(env, 'RAIL_BREAKER_WINDOW_MS', 30_000, 1_000, 3_600_000),
    railBreakerMinCalls: integer(env, 'RAIL_BREAKER_MIN_CALLS', 20, 2, 100_000),
    railBreakerFailureRate: integer(env, 'RAIL_BREAKER_FAILURE_RATE', 50, 1, 100),
    railBreakerHalfOpenWaiters: integer(env, 'RAIL_BREAKER_HALF_OPEN_WAITERS', 100, 0, 10_000),
    railQueueMaxAgeS: integer(env, 'RAIL_QUEUE_MAX_AGE_S', 900, 1, 604_800),
    reaperIntervalMs: integer(env, 'REAPER_INTERVAL_MS', 1000, 10, 3_600_000),
    reportFoldIntervalMs: integer(env, 'REPORT_FOLD_INTERVAL_MS', 1000, 10, 3_600_000),
    reaperCheckAttemptsMax: integer(env, 'REAPER_CHECK_ATTEMPTS_MAX', 24, 1, 1000),
    reaperBackoffMaxMs: integer(env, 'REAPER_BACKOFF_MAX_MS', 600_000, 10, 86_400_000),
    webhookBackoffScale: decimal(env, 'WEBHOOK_BACKOFF_SCALE', 1, 0, 1000),
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 5000, 1, 60_000),
    webhookSecretOverlapHours: decimal(env, 'WEBHOOK_SECRET_OVERLAP_HOURS', 24, 0, 720),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 64, 1, 1024),
    dispatcherIntervalMs: integer(env, 'DISPATCHER_INTERVAL_MS', 200, 10, 60_000),
    idempotencyTtlHours: integer(env, 'IDEMPOTENCY_TTL_HOURS', 24, 1, 8760),
    payoutBatchMaxItems: integer(env, 'PAYOUT_BATCH_MAX_ITEMS', 1000, 1, 5000),
    payoutBatchesInProgressMax: integer(env, 'PAYOUT_BATCHES_IN_PROGRESS_MAX', 4, 1, 64),
    payoutBatchTenantItemsPerS: integer(env, 'PAYOUT_BATCH_TENANT_ITEMS_PER_S', 2000, 0, 1_000_000),
    reconcileIntervalS: integer(env, 'RECONCILE_INTERVAL_S', 300, 0, 604_800),
    reconcileFullIntervalS: integer(env, 'RECONCILE_FULL_INTERVAL_S', 604_800, 60, 31_536_000),
    railStatementPullAtMinutes: timeOfDay(env, 'RAIL_STATEMENT_PULL_AT', 6 * 60),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 400, 0, 36_500),
    auditArchiveDir: env.AUDIT_ARCHIVE_DIR || path.join(env.DATA_DIR || './data', 'audit-archive'),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 300_000),
    railsFile: env.RAILS_FILE === undefined || env.RAILS_FILE.trim() === '' ? null : env.RAILS_FILE,
    databaseReadUrl: readUrl(env, 'DATABASE_READ_URL'),
    readReplicaMaxLagMs: integer(env, 'READ_REPLICA_MAX_LAG_MS', 5_000, 100, 600_000),
  };
}

/** A replica of the PostgreSQL of DATABASE_URL: the embedded engine has none, so it is refused without one. */
function readUrl(env: Env, name: string): string | undefined {
  const value = url(env, name, ['postgres:', 'postgresql:']);
  if (value !== undefined && !env.DATABASE_URL) {
    throw new ConfigError(
      name,
      "a postgres:// URL of a streaming replica of DATABASE_URL's server, with DATABASE_URL set",
      redactUrl(value),
      'The embedded engine (DATABASE_URL unset) has no replica: unset DATABASE_READ_URL, or set DATABASE_URL.',
    );
  }
  return value;
}

/** The documented table: docs/settings.md is generated from it (npm run docs:settings), and `bolivar config` prints it. */
export const CONFIG_DOC: ReadonlyArray<[string, string, string]> = [
  ['PORT', '3000', 'HTTP port (every role listens: a worker answers only /health/* and /metrics on it)'],
  ['HOST', '0.0.0.0', 'Interface to bind: an IP address (:: for all IPv6) or a host name of this machine'],
  ['DATABASE_URL', '(unset)', 'postgres://… to use PostgreSQL; unset = embedded PGlite under DATA_DIR'],
  [
    'DATA_DIR',
    './data',
    'Embedded database files and bootstrap.json; created (with its parents) when missing, mode 0700; a start is refused (exit 78) when it is open to its group or other users (chmod 700 it)',
  ],
  ['DB_POOL_SIZE', '20', 'PostgreSQL connections per process'],
  [
    'DB_CONNECTION_MAX_LIFETIME_S',
    '60',
    'A PostgreSQL connection is replaced after this many seconds (0 = never), so cached plans are made again against current table sizes',
  ],
  [
    'DB_STATEMENT_TIMEOUT_MS',
    '15000',
    'PostgreSQL: the longest one statement of the service may run (migrations are not bound)',
  ],
  [
    'DB_LOCK_TIMEOUT_MS',
    '5000',
    'PostgreSQL: the longest a statement waits for a row lock; past it the request answers 503 (retryable)',
  ],
  [
    'DATABASE_POOLER',
    'none',
    "What DATABASE_URL reaches: none (PostgreSQL itself) or transaction (a transaction pooler such as PgBouncer with pool_mode=transaction: statements go unnamed and the service's settings are made in each transaction, never per session; docs/pooler.md)",
  ],
  [
    'DATABASE_DIRECT_URL',
    '(unset)',
    'postgres://… of the same database straight to PostgreSQL, not through the pooler: required with DATABASE_POOLER=transaction, for migrations (they hold a session lock)',
  ],
  [
    'DB_CONNECT_WAIT_S',
    '60',
    'PostgreSQL: how long a start waits for a database that is unreachable or restarting, retrying with a logged, doubling wait (0.25 s to 5 s); past it the start fails naming the database (host, port, name), exit code 69',
  ],
  [
    'BOOTSTRAP',
    'on',
    'off skips the first-start sandbox tenant (created by the first api or all process, with its own port in the printed curl and the sandbox webhook endpoint; a worker process never creates it)',
  ],
  [
    'PLATFORM_API_KEY',
    '(unset)',
    'bsk_platform_… (at least 32 base62 characters) admin key accepted as given (stored hashed)',
  ],
  ['PUBLIC_BASE_URL', 'http://localhost:$PORT', 'Base URL used for the sandbox webhook sink and printed curl'],
  [
    'ROLE',
    'all',
    'all, api (the API, no background loops) or worker (the background loops; its PORT serves the health checks and /metrics only)',
  ],
  ['LOG_LEVEL', 'info', 'fatal, error, warn, info, debug, trace or silent'],
  ['RATE_LIMIT_RPS', '1000', 'Requests per second per API key, per process (0 = unlimited)'],
  [
    'PUBLIC_RATE_LIMIT_RPS',
    '100',
    "Requests per second per client address, per process, to the routes that need no key: /health/*, /metrics, /docs, /v1/openapi.json, the console's files, the sandbox receivers, all together (0 = unlimited)",
  ],
  [
    'RAIL_CALLBACK_RPS',
    '1000',
    'Verified callbacks per second, per rail and per process, that POST /v1/rails/{rail}/callbacks takes; past it 503 overloaded with Retry-After (a gateway redelivers), never 429. Not counted in any other limit; callbacks that do not verify are counted per address at PUBLIC_RATE_LIMIT_RPS',
  ],
  [
    'METRICS_TOKEN',
    '(unset)',
    'Bearer token for /metrics (Authorization: Bearer …), 16 to 512 printable characters. Unset: /metrics is not served on PORT',
  ],
  [
    'METRICS_PORT',
    '(unset)',
    'A second listener, for an internal network, that serves /metrics only (with METRICS_TOKEN, if set, required there too); 0 picks a free port',
  ],
  ['METRICS_HOST', '$HOST', 'The interface METRICS_PORT listens on (127.0.0.1 for this machine only)'],
  [
    'AUTH_FAILURE_LIMIT',
    '300',
    "Failed authentications (unknown, revoked or malformed key) per client address per AUTH_FAILURE_WINDOW_S, per process; past it that address's keys that are not active get 429 without a lookup, while a valid key is still served (0 = unlimited)",
  ],
  [
    'AUTH_FAILURE_PREFIX_LIMIT',
    '3000',
    'The same across all addresses, per key prefix (bsk_test_, bsk_live_, bsk_platform_), counting well-formed keys that are not active (0 = unlimited)',
  ],
  ['AUTH_FAILURE_WINDOW_S', '60', 'The sliding window of AUTH_FAILURE_LIMIT and AUTH_FAILURE_PREFIX_LIMIT, in seconds'],
  [
    'TRUST_PROXY',
    'off',
    "Behind a load balancer or reverse proxy: its addresses or CIDR ranges, comma-separated (loopback, linklocal, uniquelocal name the usual ranges). A request from one of them has its client address (AUTH_FAILURE_LIMIT's key, logs) taken from X-Forwarded-For; off: always the connection's peer",
  ],
  ['QUOTE_TTL_SECONDS', '60', 'Quote lifetime'],
  ['RATE_MAX_AGE_SECONDS', '86400', 'An FX rate older than this is not fresh'],
  ['SANDBOX_SETTLE_DELAY_MS', '3000', 'Sandbox rail: time until a submitted payout settles'],
  ['SANDBOX_REVERSE_DELAY_MS', '10000', 'Sandbox rail: time until V99990007 is reversed'],
  ['SANDBOX_RAIL_TIMEOUT_MS', '2000', 'Time the payout path waits for the rail before answering unknown'],
  [
    'RAIL_BREAKER_FAILURES',
    '5',
    'Connections to one connector refused in a row that open its circuit breaker in this process: new payouts wait for a rail instead of being sent to it (docs/rails.md). Timeouts and errors of unknown fate never open it by themselves; the sandbox rail is never judged',
  ],
  [
    'RAIL_BREAKER_WINDOW_MS',
    '30000',
    "The sliding window over which a connector's failure rate is taken (refusals, timeouts, errors against all its calls)",
  ],
  ['RAIL_BREAKER_MIN_CALLS', '20', 'Calls the window must hold before its failure rate can open the breaker'],
  ['RAIL_BREAKER_FAILURE_RATE', '50', "Failed calls, in percent of the window's calls, that open the breaker"],
  [
    'RAIL_BREAKER_OPEN_MS',
    '30000',
    'How long an open rail breaker skips its rail; then one health probe (never a payment) closes it or opens it again. Any answer of the rail (a status, a callback, a rejection) closes it too',
  ],
  [
    'RAIL_BREAKER_HALF_OPEN_WAITERS',
    '100',
    "Payouts that may wait for a half-open breaker's probe at once instead of waiting in the rail queue",
  ],
  [
    'RAIL_QUEUE_MAX_AGE_S',
    '900',
    "How long a payout no rail could take (every candidate's breaker open) waits, `pending` `awaiting_rail`, before it fails `bank_unreachable` with its money back",
  ],
  [
    'REAPER_INTERVAL_MS',
    '1000',
    'The longest the reaper sleeps between passes when idle (it wakes sooner when the next submitted/unknown payment falls due, at most ten times a second); also the first wait of its per-payment backoff',
  ],
  [
    'REAPER_CHECK_ATTEMPTS_MAX',
    '24',
    'Questions to the rail about one unresolved payment before the reaper stops asking (it stays submitted/unknown, is logged and counted)',
  ],
  [
    'REPORT_FOLD_INTERVAL_MS',
    '1000',
    "How often a worker folds new payment changes and webhook attempts into the payout report's rollups (one worker at a time; reports read what is not folded yet from the history, so this bounds their work, not their freshness; docs/reports.md)",
  ],
  ['REAPER_BACKOFF_MAX_MS', '600000', 'The longest wait between two questions to the rail about one payment'],
  ['WEBHOOK_BACKOFF_SCALE', '1', 'Multiplies every wait of the webhook retry schedule'],
  ['WEBHOOK_TIMEOUT_MS', '5000', 'Webhook receiver timeout'],
  ['WEBHOOK_SECRET_OVERLAP_HOURS', '24', 'How long a rotated signing secret keeps signing'],
  ['WEBHOOK_CONCURRENCY', '64', 'Webhook deliveries in flight per worker process'],
  ['DISPATCHER_INTERVAL_MS', '200', 'Idle poll interval of the webhook dispatcher'],
  ['IDEMPOTENCY_TTL_HOURS', '24', "How long an Idempotency-Key is remembered (and a payout batch item's reference)"],
  [
    'PAYOUT_BATCH_MAX_ITEMS',
    '1000',
    'Most items in one payout batch (1 to 5000); the body of POST /v1/payout-batches may take 4 KiB per item (docs/payout-batches.md)',
  ],
  [
    'PAYOUT_BATCH_TENANT_ITEMS_PER_S',
    '2000',
    'Payout batch items per second one tenant may send across all its keys (each key may send RATE_LIMIT_RPS items per second; a full batch passes at once, the next waits for the refill); past it 429 rate_limited with Retry-After, nothing written (0 = unlimited); docs/payout-batches.md#cost-a-batch-costs-what-its-payouts-cost',
  ],
  [
    'PAYOUT_BATCHES_IN_PROGRESS_MAX',
    '4',
    'Payout batches of one tenant and mode being recorded at once; one more is 429 payout_batches_in_progress',
  ],
  [
    'AUDIT_RETENTION_DAYS',
    '400',
    'Audit rows older than this many days are archived by the worker role to AUDIT_ARCHIVE_DIR (JSON lines, each with the hash of the one before) and then removed, the one removal the database allows (0 to 36500; 0 = kept for ever); docs/operations.md#the-audit-trails-retention',
  ],
  [
    'AUDIT_ARCHIVE_DIR',
    '$DATA_DIR/audit-archive',
    'Where the audit archive files are written (created mode 0700; keep it on durable storage, shared if several machines run the worker role); npm run audit:verify checks its chain',
  ],
  [
    'RAIL_STATEMENT_PULL_AT',
    '06:00',
    "Caracas time of day (HH:MM) from which the worker role pulls each live connector's statement of the day before from the bank and matches it against our payments; retried with a backoff, given up after 10 attempts with an anomaly; off turns it off (docs/rails.md#the-daily-bank-statement-pull)",
  ],
  [
    'RECONCILE_INTERVAL_S',
    '300',
    'How often the worker role reconciles each tenant and mode (0 to 604800; 0 = only when asked: POST /v1/admin/reconciliation/runs, bolivar reconcile). Each scheduled run proves what was written since the last one (incremental); docs/operations.md#reconciliation',
  ],
  [
    'RECONCILE_FULL_INTERVAL_S',
    '604800',
    "How long (60 to 31536000 s; a week by default) a tenant and mode's scheduled runs stay incremental after its last full proof of the whole history; the next scheduled run then proves it whole. An operator's run is full unless asked otherwise; docs/operations.md#full-and-incremental-runs",
  ],
  [
    'RAILS_FILE',
    '(unset)',
    'A JSON file listing the bank connectors (HTTP bank gateways) beside the sandbox rail: URL, signing keys (inline or named by secretEnv), callback keys, timeout, modes (docs/http-bank.md#configuration-the-rails-file). A bad file stops the start (exit 78)',
  ],
  ['SHUTDOWN_GRACE_MS', '10000', 'Time allowed for in-flight work on SIGTERM'],
  [
    'DATABASE_READ_URL',
    '(unset)',
    "PostgreSQL only: postgres://… of a streaming replica of DATABASE_URL's server, which then serves the statement, its export, the payout report and the long lists (events, beneficiaries, anomalies, audit); payouts, reads by id and every money path stay on the primary (docs/read-replica.md). Refused (exit 78) without DATABASE_URL",
  ],
  [
    'READ_REPLICA_MAX_LAG_MS',
    '5000',
    'How far behind the primary (100 to 600000 ms) the replica may be and still serve reads, measured in the background by WAL position; past it, or while it is unreachable, they go to the primary (bolivar_read_replica_fallbacks_total)',
  ],
];
