// The two kinds of path the console handles, kept apart so that one can never become the other:
// - a screen path (after /console), read from the address bar, which anyone can craft and hand to an
//   operator as a link: a route takes a parameter only when it has the shape of an id (a UUID, a
//   numeric event id), checked on the raw segment, never decoded;
// - an API path, called with the operator's key: every value put into one is encoded as exactly one
//   segment, and a path that the browser would rewrite (dot segments, an encoded slash decoded by a
//   proxy aside) is refused before anything is sent.
// Pure functions, no DOM: unit-tested in Node.

/** The id shapes a screen route accepts, the same forms the API's parameters take. */
const ID_SHAPES = {
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  /** An event id: a positive bigint, as a decimal string. */
  numeric: /^[0-9]{1,19}$/,
} as const;

type IdShape = keyof typeof ID_SHAPES;

/** The `:name` parameters of a route pattern, as a union of names. */
export type RouteParams<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | RouteParams<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/** A pattern with parameters must say each one's shape; one without takes no shapes. */
type ShapesOf<P extends string> = [RouteParams<P>] extends [never] ? [] : [shapes: Record<RouteParams<P>, IdShape>];

/**
 * "/payments/3f1e…" against "/payments/:id" with `{ id: 'uuid' }` → { id: "3f1e…" }, or undefined
 * when the path is another route or a parameter does not have its shape (`..%2F..%2Fadmin` is not a
 * UUID, so it is no payment's page).
 */
export function match<P extends string>(
  pattern: P,
  path: string,
  ...[shapes]: ShapesOf<P>
): Record<RouteParams<P>, string> | undefined {
  const want = pattern.split('/');
  const got = path.replace(/\/$/, '').split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i += 1) {
    const segment = got[i]!;
    if (!want[i]!.startsWith(':')) {
      if (want[i] !== segment) return undefined;
      continue;
    }
    const name = want[i]!.slice(1);
    const shape = (shapes as Record<string, IdShape> | undefined)?.[name];
    if (shape === undefined || !ID_SHAPES[shape].test(segment)) return undefined;
    params[name] = segment;
  }
  return params as Record<RouteParams<P>, string>;
}

declare const API_PATH: unique symbol;
/** A same-origin API path built by `apiPath`: the only kind of path `Api` calls. */
export type ApiPath = string & { readonly [API_PATH]: true };

/** The path a browser would actually request for `path` (it resolves dot segments, `\` and the like). */
function requestedPath(path: string): string {
  return new URL(path, 'http://console.invalid').pathname;
}

/**
 * Checks a finished API path: under /v1/, no query or fragment, and requested exactly as written.
 * Throws (a programming error, or a hostile value that got past `apiPath`) rather than call anything.
 */
export function checkedApiPath(path: string): ApiPath {
  if (!path.startsWith('/v1/') || /[?#]/.test(path) || requestedPath(path) !== path) {
    throw new Error(`invariant: ${JSON.stringify(path)} is not an API path the console may call`);
  }
  return path as ApiPath;
}

/**
 * An API path from a template: each value becomes one encoded segment (`/` and `%` included), and a
 * value that is empty or a dot segment is refused. apiPath`/v1/payments/${id}/ledger`.
 */
export function apiPath(strings: TemplateStringsArray, ...values: Array<string | number | bigint>): ApiPath {
  let path = strings[0]!;
  values.forEach((value, i) => {
    const text = String(value);
    if (text === '' || text === '.' || text === '..')
      throw new Error(`invariant: ${JSON.stringify(text)} cannot be a path segment`);
    path += encodeURIComponent(text) + strings[i + 1]!;
  });
  return checkedApiPath(path);
}
