// Where the service is (BOLIVAR_URL, default http://localhost:$PORT) and the key the CLI calls it
// with (PLATFORM_API_KEY, or the platform key the first start wrote to $DATA_DIR/bootstrap.json),
// and each call of the admin API through the SDK with the CLI's own bounds.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
// The SDK's source, not `@bolivar/sdk`: the CLI runs through tsx with no build step, and sdk/dist is
// built only where the development dependencies are installed (src/index.ts imports it so too).
import { Bolivar } from '../../sdk/src/index.ts';
import { AnswerLog, failureOf, type Service } from './answers.ts';
import { CliError, UsageError } from './command.ts';

/** How long one call to the service may take before the CLI gives up. */
const CALL_TIMEOUT_MS = 30_000;

export type Admin = Bolivar['admin'];

/** Where warnings go: stderr, or the `err` that runCli was given. */
let warn = (text: string): void => void process.stderr.write(text);
let plainHttpWarned = false;

export function warnTo(write: (text: string) => void): void {
  warn = write;
}

/**
 * This machine only: `localhost` (and `*.localhost`) or a loopback address.
 * @internal Exported for its tests, not used elsewhere.
 */
export function isLocalHost(hostname: string): boolean {
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(host)) return false;
  const address = ipaddr.process(host); // an IPv4-mapped IPv6 address is judged as its IPv4 address
  return address.range() === 'loopback';
}

/** Plain http beyond this machine carries the platform key in clear text: said once per run. */
function warnOnPlainHttp(url: URL): void {
  if (url.protocol !== 'http:' || isLocalHost(url.hostname) || plainHttpWarned) return;
  plainHttpWarned = true;
  warn(
    `bolivar: warning: BOLIVAR_URL is plain http to ${url.host}, not this machine: the platform key crosses the network unencrypted; use https://\n`,
  );
}

function serviceBase(): Service {
  const given = process.env.BOLIVAR_URL;
  const raw = given || `http://localhost:${process.env.PORT || 3000}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(
      `BOLIVAR_URL=${JSON.stringify(raw)} is not a URL; give the service's base URL, such as http://localhost:3000`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(
      `BOLIVAR_URL=${JSON.stringify(raw)} is not an http:// or https:// URL; give the service's base URL, such as http://localhost:3000`,
    );
  }
  warnOnPlainHttp(url);
  return { base: raw.replace(/\/+$/, ''), source: given ? 'BOLIVAR_URL' : 'the default; BOLIVAR_URL is not set' };
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

/**
 * One call of the admin API, within `timeoutMs` (default CALL_TIMEOUT_MS). One attempt: a command
 * is one call, and its failure is the operator's to see and rerun, never repeated on its own. The
 * service and the key are looked up at each call, so a failure names the service it tried.
 */
export async function ask<T>(call: (admin: Admin) => Promise<T>, timeoutMs = CALL_TIMEOUT_MS): Promise<T> {
  const service = serviceBase();
  const apiKey = platformKey();
  const answers = new AnswerLog(service);
  // The URL parser above takes a scheme in any case (HTTP://); the SDK takes it in lower case.
  const baseUrl = service.base.replace(/^https?:/i, (scheme) => scheme.toLowerCase());
  const { admin } = new Bolivar({ apiKey, baseUrl, fetch: answers.fetch, maxRetries: 0, timeoutMs });
  try {
    const data = await call(admin);
    // An empty answer (none of the admin API's) prints as {}.
    return data === undefined ? ({} as T) : data;
  } catch (error) {
    throw failureOf(error, answers.last, service, timeoutMs);
  }
}
