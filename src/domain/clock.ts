/** Time is injected so that tests can move it (quote expiry, Caracas midnight, backoff). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
