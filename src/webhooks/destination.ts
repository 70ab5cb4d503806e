// Where a webhook may connect. The URL is checked when it is configured, and again at every
// delivery: the host name is resolved, EVERY address it resolves to must be one the mode may reach
// (live: public only; test: public or loopback), and the connection goes to the address that was
// checked (the resolver below is the socket's own `lookup`), so a DNS answer that changes between
// the check and the connect (DNS rebinding) cannot reach an internal address.
import dns, { type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { forbiddenAddressText, mayReachAddress } from '../domain/webhooks.ts';
import type { Mode } from '../domain/partition.ts';

export class ForbiddenDestinationError extends Error {
  readonly code = 'EDESTINATIONFORBIDDEN';
  constructor(host: string, mode: Mode) {
    super(`destination not allowed in ${mode} mode: ${host} resolves to ${forbiddenAddressText(mode)}`);
    this.name = 'ForbiddenDestinationError';
  }
}

type Resolver = (
  hostname: string,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, callback) => dns.lookup(hostname, { all: true, verbatim: true }, callback);

/**
 * A `lookup` for net/tls connect that refuses a host if any of its addresses is one the mode may
 * not reach, and otherwise hands the socket exactly the addresses it checked.
 */
export function guardedLookup(mode: Mode, resolve: Resolver = systemResolver): LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    resolve(hostname, (error, addresses) => {
      if (error) return callback(error);
      const wanted =
        options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      if (addresses.length === 0 || wanted.length === 0) {
        return callback(Object.assign(new Error(`${hostname} did not resolve`), { code: 'ENOTFOUND' }));
      }
      if (addresses.some((a) => !mayReachAddress(mode, a.address)))
        return callback(new ForbiddenDestinationError(hostname, mode));
      if (options.all) return callback(null, wanted);
      return callback(null, wanted[0]!.address, wanted[0]!.family);
    });
  }) as LookupFunction;
}

/** An admin call does not wait longer than this for DNS; the delivery-time check still applies. */
const CONFIG_LOOKUP_TIMEOUT_MS = 3000;

/**
 * The configuration-time check of a host. A name that does not resolve (yet), or not in time, is
 * accepted: it can only ever be reached through the delivery-time check, which refuses it if it
 * then resolves somewhere the mode may not reach.
 */
export async function checkEndpointHost(
  hostname: string,
  mode: Mode,
  resolve: Resolver = systemResolver,
): Promise<{ ok: true } | { ok: false; message: string }> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const inMode = mode === 'live' ? ' in live mode' : '';
  if (isIP(host) !== 0)
    return mayReachAddress(mode, host)
      ? { ok: true }
      : { ok: false, message: `must not point at ${forbiddenAddressText(mode)}${inMode}` };
  const addresses = await new Promise<LookupAddress[]>((done) => {
    const timer = setTimeout(() => done([]), CONFIG_LOOKUP_TIMEOUT_MS);
    resolve(host, (error, found) => {
      clearTimeout(timer);
      done(error ? [] : found);
    });
  });
  if (addresses.some((a) => !mayReachAddress(mode, a.address))) {
    return { ok: false, message: `must not resolve to ${forbiddenAddressText(mode)}${inMode} (${host} does)` };
  }
  return { ok: true };
}
