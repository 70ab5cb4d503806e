// Helpers to read a request's parts off the generated `<Operation>Data` types.
import type { WithAmountInputs } from '../amounts.js';

/** The JSON body of an operation, amounts widened to bigint | number | string. */
export type BodyOf<D> = D extends { body: infer B } ? WithAmountInputs<B> : never;

/** The query parameters of an operation. */
export type QueryOf<D> = D extends { query?: infer Q } ? NonNullable<Q> : never;

/** A list's filters without the page parameters (the iterator sets `cursor`). */
export type FiltersOf<D> = Omit<QueryOf<D>, 'cursor'>;

/** `id` and other path parameters are strings the API validates (UUIDs, asset codes). */
export function segment(value: string): string {
  if (typeof value !== 'string' || value.length === 0)
    throw new TypeError('a path parameter must be a non-empty string');
  return encodeURIComponent(value);
}
