// How the service signs a webhook delivery (the sending side; the receiving side, the verifier, is
// the SDK's: sdk/src/webhooks.ts). Every delivery carries
//
//   x-timestamp: <milliseconds since the epoch>
//   x-signature: sha256=<hex HMAC-SHA256(secret, "<x-timestamp>.<raw body>")>[,sha256=<…>]
//
// During a secret rotation the header holds two signatures (new secret first).
import { createHmac } from 'node:crypto';

export const SIGNATURE_SCHEME = 'sha256';

/** The hex HMAC-SHA256 of `<timestamp>.<raw body>`: what `sha256=` carries. */
export function computeSignature(secret: string, timestamp: string | number, rawBody: string | Uint8Array): string {
  const bytes = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(bytes).digest('hex');
}

/** The `x-signature` value for these secrets, in order (the current secret first). */
export function signatureHeader(secrets: string | readonly string[], timestamp: string | number, rawBody: string | Uint8Array): string {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  return list.map((secret) => `${SIGNATURE_SCHEME}=${computeSignature(secret, timestamp, rawBody)}`).join(',');
}
