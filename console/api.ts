// Every call the console makes: to this origin, with the operator's key in the x-api-key header,
// never in a URL. The key lives in this tab's sessionStorage (gone when the tab closes) and in memory.
// Paths are `ApiPath`s (paths.ts): built with `apiPath`, every value an encoded segment.
import { jsonWithIntegers } from './format.ts';
import { checkedApiPath, type ApiPath } from './paths.ts';

export { apiPath, type ApiPath } from './paths.ts';

const KEY_STORAGE = 'bolivar-console.api-key';

export interface TenantMe {
  tenantId: string;
  name: string;
  mode: 'test' | 'live';
  scopes: string[];
  apiKeyId: string;
  isPlatform: boolean;
}

/** An answer in the API's error envelope (or no answer at all: status 0). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    /** The envelope's `meta` (a 400's `errors[]` of `{field, message}`, a limit's figures…). */
    readonly meta: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export type Query = Record<string, string | undefined>;

/** `?a=1&b=2` from the defined, non-empty values only. */
function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

async function failureOf(response: Response): Promise<ApiFailure> {
  const requestId = response.headers.get('x-request-id');
  try {
    const body = (await response.json()) as {
      error?: { code?: string; message?: string; request_id?: string; meta?: Record<string, unknown> };
    };
    if (body.error?.code)
      return new ApiFailure(
        response.status,
        body.error.code,
        body.error.message ?? body.error.code,
        body.error.request_id ?? requestId,
        body.error.meta,
      );
  } catch {
    // not the envelope
  }
  return new ApiFailure(response.status, 'http_error', `The service answered HTTP ${response.status}.`, requestId);
}

export class Api {
  constructor(private readonly key: string) {}

  private async send(
    method: string,
    path: ApiPath,
    query?: Query,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    // Checked again here: a cast cannot smuggle in a path the browser would rewrite.
    const url = checkedApiPath(path) + queryString(query);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          'x-api-key': this.key,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : jsonWithIntegers(body),
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch {
      throw new ApiFailure(0, 'network_error', 'The service could not be reached.', null);
    }
    if (!response.ok) throw await failureOf(response);
    return response;
  }

  async get<T>(path: ApiPath, query?: Query): Promise<T> {
    return (await (await this.send('GET', path, query)).json()) as T;
  }

  async post<T>(path: ApiPath, body?: unknown, headers?: Record<string, string>): Promise<T> {
    return (await (await this.send('POST', path, undefined, body, headers)).json()) as T;
  }

  /** A file the API serves (the statement CSV): fetched with the key, saved through a blob: URL. */
  async download(path: ApiPath, query: Query, fallbackName: string): Promise<void> {
    const response = await this.send('GET', path, query);
    const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? fallbackName;
    saveFile(await response.blob(), name);
  }
}

/**
 * Saves a file through a blob: URL of this page (a download, which the CSP's fetch directives do
 * not govern: nothing is requested from anywhere).
 */
export function saveFile(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  try {
    const link = document.createElement('a');
    link.href = url;
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
  } finally {
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }
}

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

export function storeKey(key: string | null): void {
  try {
    if (key === null) sessionStorage.removeItem(KEY_STORAGE);
    else sessionStorage.setItem(KEY_STORAGE, key);
  } catch {
    // storage refused (private mode): the key stays in memory only
  }
}

export const hasScope = (me: TenantMe, scope: string) => me.scopes.includes(scope);
