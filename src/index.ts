// The package's main export: what an integrator needs on the receiving side of the webhooks, which
// is the SDK's verifier (sdk/src/webhooks.ts; `@bolivar/sdk/webhooks` once built).
// The service itself starts from src/main.ts (`npm start`).
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
  type WebhookHeaders,
} from '../sdk/src/webhooks.ts';
