// How the HTTP layer answers errors beyond their envelope (src/contract/error-envelope.ts).

/** Seconds a client should wait before retrying a 503 (Retry-After). */
export const RETRY_AFTER_S = 1;
