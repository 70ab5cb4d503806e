// The canonical JSON of a request body: what a request's fingerprint is taken of. Pure.

/** JSON with object keys sorted recursively (UTF-16 code unit order); `undefined` → ''. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  return canonical(value);
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item)).join(',')}]`;
  const object = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(object).sort()) {
    if (object[key] === undefined) continue;
    parts.push(`${JSON.stringify(key)}:${canonical(object[key])}`);
  }
  return `{${parts.join(',')}}`;
}
