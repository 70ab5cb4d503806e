import type { Database } from '../db/database.ts';
import {
  findTestEventSigner,
  insertSandboxReceipt,
  listSandboxReceipts,
  type SandboxReceiptRow,
} from '../db/repositories/webhooks.ts';
import type { Clock } from '../domain/clock.ts';
import { signingSecrets } from '../domain/webhooks.ts';
// The same check as the SDK's verifier, the one integrators run (test/unit/webhooks-verify.test.ts
// holds the two together): the sink verifies as they do, without the service importing the SDK.
import { verifySignature } from '../domain/webhook-signature.ts';
import type { Partition } from '../domain/partition.ts';

/** Why the sink refused a delivery: for the log only, never for the caller (all look the same to it). */
type SinkRefusal =
  | 'event_id_missing_or_malformed'
  | 'body_not_utf8_text'
  | 'body_not_this_event'
  | 'headers_not_storable'
  | 'no_test_event_with_endpoint'
  | 'signature_or_timestamp_invalid';

export type SinkOutcome = { stored: true; receipt: SandboxReceiptRow } | { stored: false; refusal: SinkRefusal };

// Event ids as our dispatcher writes them: a bigserial in decimal, no sign, no leading zero.
const EVENT_ID_HEADER = /^[1-9][0-9]{0,17}$/;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body as text PostgreSQL can hold (valid UTF-8, no NUL), or undefined. */
function storableText(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
  return text.includes('\u0000') ? undefined : text;
}

/** jsonb refuses \u0000 in any string, so a header value carrying one cannot be stored. */
function storableHeaders(headers: Record<string, unknown>): boolean {
  return Object.values(headers).every((value) =>
    Array.isArray(value)
      ? value.every((v) => typeof v === 'string' && !v.includes('\u0000'))
      : typeof value === 'string' && !value.includes('\u0000'),
  );
}

/**
 * The `id` of a delivery body, when it is the JSON object our dispatcher sends: `{id, eventType,
 * payload, …}` (what the SDK's verifier also asks of a body).
 */
function bodyEventId(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const fields = parsed as { id?: unknown; eventType?: unknown; payload?: unknown };
  if (typeof fields.eventType !== 'string' || typeof fields.payload !== 'object' || fields.payload === null)
    return undefined;
  return fields.id;
}

/**
 * The sandbox sink: keeps the deliveries our dispatcher made to test-mode endpoints pointed at it.
 * It is public (the dispatcher has no API key), so nothing the caller says about the program is
 * trusted: the delivered event names the program, and the program's endpoint secret must have signed
 * the delivery.
 */
export class SandboxWebhookService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Stores a delivery only when `x-event-id` names a test-mode event whose program's endpoint
   * secrets (the current one and, during a rotation, the previous one) signed exactly these bytes
   * within ±5 minutes, and the body is that event's (its `id` is `x-event-id`). Everything that can
   * be refused without the database is refused first, so bytes PostgreSQL text cannot hold never
   * reach it.
   */
  async receive(input: { headers: Record<string, unknown>; rawBody: Uint8Array }): Promise<SinkOutcome> {
    const eventIdHeader = input.headers['x-event-id'];
    if (typeof eventIdHeader !== 'string' || !EVENT_ID_HEADER.test(eventIdHeader))
      return { stored: false, refusal: 'event_id_missing_or_malformed' };
    const text = storableText(input.rawBody);
    if (text === undefined) return { stored: false, refusal: 'body_not_utf8_text' };
    // The signature already binds the body to the secret; this binds it to the event the header names.
    if (bodyEventId(text) !== eventIdHeader) return { stored: false, refusal: 'body_not_this_event' };
    if (!storableHeaders(input.headers)) return { stored: false, refusal: 'headers_not_storable' };

    const eventId = BigInt(eventIdHeader);
    const signer = await findTestEventSigner(this.db, eventId);
    if (!signer) return { stored: false, refusal: 'no_test_event_with_endpoint' };
    const now = this.clock.now();
    const verified = verifySignature({
      secrets: signingSecrets(
        {
          secret: signer.secret,
          previousSecret: signer.previous_secret,
          previousSecretExpiresAt: signer.previous_secret_expires_at,
        },
        now,
      ),
      headers: input.headers,
      rawBody: input.rawBody,
      nowMs: now.getTime(),
    });
    if (!verified.ok) return { stored: false, refusal: 'signature_or_timestamp_invalid' };
    const receipt = await this.db.transaction((tx) =>
      insertSandboxReceipt(tx, { tenantId: signer.tenant_id, eventId, headers: input.headers, rawBody: text, at: now }),
    );
    return { stored: true, receipt };
  }

  async list(partition: Partition, query: { limit: number; cursor?: bigint; eventId?: bigint }) {
    const rows = await listSandboxReceipts(this.db, {
      ...partition,
      beforeId: query.cursor,
      eventId: query.eventId,
      limit: query.limit + 1,
    });
    const hasMore = rows.length > query.limit;
    const page = rows.slice(0, query.limit);
    return { rows: page, hasMore, nextCursor: hasMore ? page.at(-1)!.id.toString() : null };
  }
}
