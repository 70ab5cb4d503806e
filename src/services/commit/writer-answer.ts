/**
 * The answer of a route whose writer records its Idempotency-Key (payouts, fundings): the exact bytes
 * to send, which are also the bytes stored under the key and replayed to a retry.
 */
export interface WriterAnswer {
  status: number;
  body: string;
  /** A retry answered from what the key already held (header `idempotent-replayed: true`). */
  replayed: boolean;
}
