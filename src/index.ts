// The package's main export: what an integrator needs on the receiving side of the webhooks.
// The service itself starts from src/main.ts (`npm start`).
export {
  DEFAULT_TOLERANCE_MS,
  computeSignature,
  signatureHeader,
  verifyWebhook,
  type VerifyFailure,
  type VerifyWebhookOptions,
  type VerifyWebhookResult,
  type WebhookHeaders,
} from './webhooks/verify.ts';
