// One request to the API, with the retry rules an integration needs and nothing else:
// - an `Idempotency-Key` on every call that takes one (generated when the caller gives none), so
//   that a retry can never do the work twice;
// - retries, with that same key, of what is safe to send again: no answer (network error, timeout)
//   when the call is idempotent, 429 and 503 (after `Retry-After` when the server says), and 409
//   `idempotency_request_in_progress` (the first request with the key is still running);
// - bounded: `maxRetries` more attempts at most, exponential backoff with jitter between them; a
//   body given as a stream (a rail statement's CSV) is read as it is sent, once, so it is never retried;
// - no redirect is followed: the API key goes to `baseUrl` and nowhere else (a redirect to another
//   host, or from https to http, would hand it over). A 3xx answer is an error, never retried.
import { randomUUID } from 'node:crypto';
import { BolivarConnectionError, BolivarError, errorFromResponse, UNEXPECTED_RESPONSE } from './errors.js';

export const DEFAULT_MAX_RETRIES = 3;
/** The first backoff; each retry doubles it, up to MAX_BACKOFF_MS. */
export const BASE_BACKOFF_MS = 500;
export const MAX_BACKOFF_MS = 8_000;
/** A `Retry-After` longer than this is not waited for: the error is thrown at once. */
export const MAX_RETRY_AFTER_MS = 60_000;
/** One attempt, from sending to the whole answer read. */
export const DEFAULT_TIMEOUT_MS = 60_000;

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  apiKey: string;
  baseUrl: string;
  fetch?: FetchLike | undefined;
  maxRetries?: number | undefined;
  timeoutMs?: number | undefined;
}

/** Options of one call. */
export interface RequestOptions {
  /**
   * The `Idempotency-Key` of a call that takes one: your own (an order id) makes a retry from your
   * side safe too; without it a UUID is generated per call and reused by the SDK's own retries.
   */
  idempotencyKey?: string;
  /** Aborts the call (and the waits between retries). */
  signal?: AbortSignal;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

/** A body sent as it is rather than as JSON (a rail statement's CSV); a stream is sent as it is read. */
export type RawBody = string | ReadableStream<Uint8Array>;

export interface Request {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query | undefined;
  body?: unknown;
  /** Instead of `body`: sent as it is, with its own content type. */
  content?: { type: string; data: RawBody } | undefined;
  /** The operation takes an `Idempotency-Key`. */
  idempotent?: boolean;
  /** `text` for the CSV export; JSON otherwise. */
  accept?: 'json' | 'text';
  options?: RequestOptions | undefined;
}

export interface Answer<T> {
  data: T;
  status: number;
  headers: Headers;
}

/**
 * Full jitter, in [½, 1] of the doubled wait, so that many clients retrying do not move in step.
 * @internal Exported for its tests, not used elsewhere.
 */
export function backoffMs(retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** retry);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/**
 * `Retry-After` as seconds or an HTTP date, in ms; undefined when absent or unreadable.
 * @internal Exported for its tests, not used elsewhere.
 */
export function retryAfterMs(value: string | null, nowMs = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^[0-9]+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** AbortSignal.any where Node has it (20.3+); before that, the caller's signal alone. */
function eitherSignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  return typeof AbortSignal.any === 'function' ? AbortSignal.any([a, b]) : a;
}

/**
 * The error for a redirect. `redirect: 'manual'` rather than 'error': the same refusal, but the
 * answer stays readable (status and Location in Node; an opaque redirect, status 0, in a browser).
 */
function redirectRefused(request: Request, response: Response): BolivarError {
  const location = response.headers.get('location');
  const target = location ? ` to ${location.slice(0, 200)}` : '';
  return new BolivarError({
    status: response.status,
    code: UNEXPECTED_RESPONSE,
    type: 'api_error',
    message:
      `${request.method} ${request.path}: the server answered with a redirect (HTTP ${response.status}${target}), which is not followed ` +
      "so that the API key is sent to baseUrl only; set baseUrl to the service's own URL",
    requestId: response.headers.get('x-request-id'),
  });
}

const isRedirect = (response: Response) =>
  response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400);

function retryableAnswer(status: number, error: BolivarError): boolean {
  return status === 429 || status === 503 || (status === 409 && error.code === 'idempotency_request_in_progress');
}

export class Transport {
  readonly baseUrl: string;
  readonly maxRetries: number;
  private readonly apiKey: string;
  private readonly fetch: FetchLike;
  private readonly timeoutMs: number;

  constructor(options: TransportOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey.length === 0)
      throw new TypeError('apiKey is required (bsk_test_…, bsk_live_… or a platform key)');
    if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl))
      throw new TypeError('baseUrl is required: the service URL, such as http://localhost:3000');
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError('maxRetries must be an integer >= 0');
    this.apiKey = options.apiKey;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.maxRetries = maxRetries;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  url(path: string, query: Query | undefined): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {}))
      if (value !== undefined && value !== null) search.set(name, String(value));
    const text = search.toString();
    return `${this.baseUrl}${path}${text ? `?${text}` : ''}`;
  }

  async request<T>(request: Request): Promise<Answer<T>> {
    const headers: Record<string, string> = {
      'x-api-key': this.apiKey,
      accept: request.accept === 'text' ? 'text/csv' : 'application/json',
    };
    if (request.content !== undefined) headers['content-type'] = request.content.type;
    else if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.idempotent) headers['idempotency-key'] = request.options?.idempotencyKey ?? randomUUID();
    // Safe to send again when no answer came: reads, and writes that carry an Idempotency-Key.
    const resendable =
      request.method === 'GET' ||
      request.method === 'PUT' ||
      request.method === 'DELETE' ||
      request.idempotent === true;
    const body =
      request.content !== undefined
        ? request.content.data
        : request.body === undefined
          ? undefined
          : JSON.stringify(request.body);
    // A stream is read once, so it is never sent again; fetch sends it as it reads it only when told (duplex).
    const streamed = body instanceof ReadableStream;
    const maxRetries = streamed ? 0 : this.maxRetries;
    const url = this.url(request.path, request.query);
    const signal = request.options?.signal;

    for (let attempt = 0; ; attempt += 1) {
      let response: Response;
      let text: string;
      try {
        const timeout = AbortSignal.timeout(this.timeoutMs);
        const init: RequestInit & { duplex?: 'half' } = {
          method: request.method,
          headers,
          body,
          redirect: 'manual',
          signal: signal ? eitherSignal(signal, timeout) : timeout,
        };
        if (streamed) init.duplex = 'half';
        response = await this.fetch(url, init);
        text = await response.text();
      } catch (cause) {
        if (signal?.aborted) throw cause;
        if (!resendable || attempt >= maxRetries) {
          throw new BolivarConnectionError(
            `${request.method} ${request.path}: no answer (${(cause as Error)?.message ?? cause})`,
            attempt + 1,
            cause,
          );
        }
        await sleep(backoffMs(attempt), signal);
        continue;
      }
      if (isRedirect(response)) throw redirectRefused(request, response);
      if (response.status < 400) {
        const data = (request.accept === 'text' ? text : text === '' ? undefined : JSON.parse(text)) as T;
        return { data, status: response.status, headers: response.headers };
      }
      const waitMs = retryAfterMs(response.headers.get('retry-after'));
      const error = errorFromResponse(
        response.status,
        response.headers,
        text,
        waitMs === undefined ? undefined : waitMs / 1000,
      );
      if (!retryableAnswer(response.status, error) || attempt >= maxRetries) throw error;
      if (waitMs !== undefined && waitMs > MAX_RETRY_AFTER_MS) throw error;
      await sleep(Math.max(waitMs ?? 0, backoffMs(attempt)), signal);
    }
  }
}
