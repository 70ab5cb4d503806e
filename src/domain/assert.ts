// Programmer errors: a state the code promises can never happen (a decision that would overdraw, a
// lock statement that returned no row, a bound that is not positive). `assert` stops the work at
// once with an InvariantError, which no operating-error handler swallows: a worker's pass, a rail
// call, a webhook delivery rethrow it instead of logging it as a warning and going on (see
// `rethrowInvariant`), so it fails loudly — the request answers 500 and the transaction rolls back,
// a worker loop stops the process. An operating error (a rail down, a database restart, bad input)
// is never an InvariantError.

/** A broken invariant: a bug, never a condition of the world. Its message starts with `invariant:`. */
export class InvariantError extends Error {
  constructor(message: string) {
    super(`invariant: ${message}`);
    this.name = 'InvariantError';
  }
}

/** Throws an InvariantError with `message` unless `condition` holds. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new InvariantError(message);
}

/** For a catch block that handles operating errors: a broken invariant goes on up, never handled as one. */
export function rethrowInvariant(error: unknown): void {
  if (error instanceof InvariantError) throw error;
}
