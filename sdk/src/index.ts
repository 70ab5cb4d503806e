// @bolivar/sdk: a typed client for the Bolivar Disbursement Service, and the webhook verifier.
export { Bolivar, type BolivarOptions } from './client.js';
export { BolivarConnectionError, BolivarError, UNEXPECTED_RESPONSE, type ErrorCode, type ErrorType } from './errors.js';
export { toApiAmount, type AmountInput } from './amounts.js';
export { Paginated, type PageAnswer } from './pagination.js';
export {
  DEFAULT_BATCH_MAX_ITEMS,
  PayoutBatchesIncompleteError,
  PayoutBatchWaitTimeoutError,
  type PayoutBatchItem,
  type PayoutBatchOptions,
} from './resources/payout-batches.js';
export { ReportsResource, type PayoutReportQuery } from './resources/reports.js';
export {
  BASE_BACKOFF_MS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  MAX_BACKOFF_MS,
  MAX_RETRY_AFTER_MS,
  type FetchLike,
  type RawBody,
  type RequestOptions,
} from './transport.js';
export {
  DEFAULT_TOLERANCE_MS,
  WebhookVerificationError,
  computeSignature,
  constructEvent,
  signatureHeader,
  verifyWebhook,
  type VerifyFailure,
  type VerifyWebhookOptions,
  type VerifyWebhookResult,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
} from './webhooks.js';
/** Every schema and operation type of the API, generated from its OpenAPI document. */
export type * from './generated/index.js';
