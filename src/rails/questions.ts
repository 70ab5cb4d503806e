// A question to a rail (a lookup, the pending notifications, an acknowledgement) bounded by the rail
// timeout: a rail that stops answering fails the question instead of holding a worker's pass.

/** Thrown when the rail does not answer a question within the rail timeout. */
export class RailQuestionTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`the rail did not answer ${what} within ${ms} ms`);
    this.name = 'RailQuestionTimeout';
  }
}

/**
 * `question`, bounded by `ms`: a rail that never answers fails the question instead of holding the
 * worker's pass (and every payment after it) forever. The late answer, if any, is ignored.
 */
export function bounded<T>(question: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RailQuestionTimeout(what, ms)), ms);
  });
  question.catch(() => undefined);
  return Promise.race([question, timeout]).finally(() => clearTimeout(timer));
}
