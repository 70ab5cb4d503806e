// The rails file (RAILS_FILE): the connectors this service may send through, read once at start.
// A JSON document `{ "connectors": [ … ] }`; each connector names its gateway, the keys we sign our
// requests with, the keys its callbacks are signed with, its timeout and the modes it serves. A secret
// is given inline (`secret`) or, better, as the name of an environment variable (`secretEnv`) so the
// file itself can be committed. Any problem stops the start with a message naming it.
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../config.ts';
import type { RailKey } from '../domain/rail-signature.ts';

export interface HttpBankConnectorConfig {
  name: string;
  kind: 'http-bank';
  baseUrl: string;
  /** Our signing keys, the current one first: we sign with it; the gateway accepts it and the previous one. */
  keys: RailKey[];
  /** The keys the gateway signs its callbacks with (current and previous): any of them verifies one. */
  callbackKeys: RailKey[];
  /** Bound of one call to the gateway. */
  timeoutMs: number;
  modes: Array<'test' | 'live'>;
  /** How long after a submit the gateway usually has the outcome (the reaper's first question). */
  resolvesWithinMs?: number;
}

export type ConnectorConfig = HttpBankConnectorConfig;

/** Connectors one file may list: each holds a connection pool and a reaper question per pass. */
const CONNECTORS_MAX = 16;
const NAME = /^[a-z][a-z0-9-]{0,31}$/;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** A secret shorter than this is guessable: HMAC keys should be 32 random bytes. */
const SECRET_MIN_LENGTH = 16;
const TIMEOUT_MS_MAX = 60_000;

type Env = Record<string, string | undefined>;

class RailsFileProblem extends Error {}

function fail(message: string): never {
  throw new RailsFileProblem(message);
}

function objectAt(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(`${where} must be an object`);
  return value as Record<string, unknown>;
}

function keysAt(value: unknown, where: string, env: Env, inline: { found: boolean }): RailKey[] {
  if (!Array.isArray(value) || value.length === 0)
    fail(`${where} must be a non-empty list of {id, secret | secretEnv}`);
  const ids = new Set<string>();
  return value.map((entry, i) => {
    const key = objectAt(entry, `${where}[${i}]`);
    if (typeof key.id !== 'string' || !KEY_ID.test(key.id))
      fail(`${where}[${i}].id must be 1 to 64 letters, digits, '.', '_' or '-'`);
    if (ids.has(key.id)) fail(`${where} lists the key id ${key.id} twice`);
    ids.add(key.id);
    let secret: string | undefined;
    if (typeof key.secret === 'string') {
      secret = key.secret;
      inline.found = true;
    } else if (typeof key.secretEnv === 'string') {
      secret = env[key.secretEnv];
      if (secret === undefined || secret === '')
        fail(`${where}[${i}].secretEnv names ${key.secretEnv}, which is not set`);
    } else fail(`${where}[${i}] needs secret or secretEnv`);
    if (secret.length < SECRET_MIN_LENGTH)
      fail(`${where}[${i}] (${key.id}): the secret must be at least ${SECRET_MIN_LENGTH} characters`);
    return { id: key.id, secret };
  });
}

function connectorAt(value: unknown, i: number, env: Env, inline: { found: boolean }): ConnectorConfig {
  const where = `connectors[${i}]`;
  const c = objectAt(value, where);
  if (typeof c.name !== 'string' || !NAME.test(c.name))
    fail(`${where}.name must be 1 to 32 lower-case letters, digits or '-', starting with a letter`);
  const at = `${where} (${c.name})`;
  if (c.kind !== 'http-bank') fail(`${at}.kind must be "http-bank"`);
  let baseUrl: URL;
  try {
    baseUrl = new URL(String(c.baseUrl));
  } catch {
    fail(`${at}.baseUrl must be an http:// or https:// URL`);
  }
  if (baseUrl.protocol !== 'https:' && baseUrl.protocol !== 'http:')
    fail(`${at}.baseUrl must be an http:// or https:// URL`);
  const timeoutMs = c.timeoutMs ?? 5000;
  if (!Number.isSafeInteger(timeoutMs) || (timeoutMs as number) < 1 || (timeoutMs as number) > TIMEOUT_MS_MAX)
    fail(`${at}.timeoutMs must be an integer from 1 to ${TIMEOUT_MS_MAX}`);
  const modes = c.modes;
  if (!Array.isArray(modes) || modes.length !== 1 || (modes[0] !== 'test' && modes[0] !== 'live')) {
    fail(
      `${at}.modes must be ["test"] or ["live"]: a connector serves one mode, so a test key can never move real money. ` +
        "To test against the same bank, list a second connector with its own name, the gateway's test URL and its test keys",
    );
  }
  const resolvesWithinMs = c.resolvesWithinMs;
  if (resolvesWithinMs !== undefined && (!Number.isSafeInteger(resolvesWithinMs) || (resolvesWithinMs as number) < 0))
    fail(`${at}.resolvesWithinMs must be a non-negative integer`);
  const known = new Set(['name', 'kind', 'baseUrl', 'keys', 'callbackKeys', 'timeoutMs', 'modes', 'resolvesWithinMs']);
  const unknown = Object.keys(c).find((field) => !known.has(field));
  if (unknown !== undefined) fail(`${at} has an unknown field ${unknown}`);
  return {
    name: c.name,
    kind: 'http-bank',
    baseUrl: baseUrl.toString(),
    keys: keysAt(c.keys, `${at}.keys`, env, inline),
    callbackKeys: keysAt(c.callbackKeys, `${at}.callbackKeys`, env, inline),
    timeoutMs: timeoutMs as number,
    modes: modes as Array<'test' | 'live'>,
    ...(resolvesWithinMs === undefined ? {} : { resolvesWithinMs: resolvesWithinMs as number }),
  };
}

/**
 * A test connector and a live one never share a gateway URL or a signing key: only the key and the
 * URL tell the gateway which money a request moves, never the mode it merely echoes.
 */
function modesApart(connectors: readonly ConnectorConfig[]): void {
  for (const a of connectors) {
    for (const b of connectors) {
      if (a.modes[0] !== 'test' || b.modes[0] !== 'live') continue;
      if (a.baseUrl === b.baseUrl)
        fail(
          `connectors ${a.name} (test) and ${b.name} (live) have the same baseUrl ${a.baseUrl}: give the test connector the gateway's test URL`,
        );
      const shared = a.keys.find((key) => b.keys.some((other) => other.secret === key.secret));
      if (shared)
        fail(
          `connectors ${a.name} (test) and ${b.name} (live) sign with the same secret (key ${shared.id}): give the test connector the gateway's test keys`,
        );
    }
  }
}

/**
 * The connectors a rails file's text lists, or the problem that makes it unusable. `inlineSecrets`:
 * the file itself holds a secret (`secret`, not `secretEnv`), so it must be readable by its owner only.
 * @internal Exported for its tests, not used elsewhere.
 */
export function parseRailsFile(
  text: string,
  env: Env,
): { ok: true; connectors: ConnectorConfig[]; inlineSecrets: boolean } | { ok: false; problem: string } {
  const inline = { found: false };
  try {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      fail(`it is not JSON (${(error as Error).message})`);
    }
    const list = objectAt(parsed, 'the file').connectors;
    if (!Array.isArray(list)) fail('it must be {"connectors": [ … ]}');
    if (list.length > CONNECTORS_MAX) fail(`it lists ${list.length} connectors; at most ${CONNECTORS_MAX}`);
    const connectors = list.map((entry, i) => connectorAt(entry, i, env, inline));
    const names = new Set<string>();
    for (const connector of connectors) {
      if (connector.name === 'sandbox' || names.has(connector.name))
        fail(`the connector name ${connector.name} is used twice (or is the sandbox's)`);
      names.add(connector.name);
    }
    modesApart(connectors);
    return { ok: true, connectors, inlineSecrets: inline.found };
  } catch (error) {
    if (error instanceof RailsFileProblem) return { ok: false, problem: error.message };
    throw error;
  }
}

const RAILS_FILE_ACCEPTS = 'the path of a readable JSON rails file, {"connectors": [ … ]} (docs/http-bank.md)';

/**
 * The connectors RAILS_FILE lists (none without a file), read at start; its secrets may name other
 * variables of `env` (secretEnv). A file that cannot be read or used, or that holds a secret other users
 * can read, is a ConfigError naming RAILS_FILE: the start stops (exit 78).
 */
export function readRailsFile(file: string | null, env: Env): ConnectorConfig[] {
  const name = 'RAILS_FILE';
  if (file === null) return [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      name,
      RAILS_FILE_ACCEPTS,
      file,
      `It cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
    );
  }
  const parsed = parseRailsFile(text, env);
  if (!parsed.ok) throw new ConfigError(name, RAILS_FILE_ACCEPTS, file, `The file is not usable: ${parsed.problem}.`);
  // A secret written in the file is only as safe as the file: anyone who can read it can sign as us.
  if (parsed.inlineSecrets && (statSync(file).mode & 0o077) !== 0) {
    throw new ConfigError(
      name,
      RAILS_FILE_ACCEPTS,
      file,
      `It holds secrets inline and other users of this machine can read it: run \`chmod 600 ${file}\`, or give each secret as secretEnv (the name of an environment variable) instead.`,
    );
  }
  return parsed.connectors;
}
