import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { pgErrorCode, type Database } from '../../db/database.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  type IdempotencyScope,
} from '../../db/repositories/idempotency.ts';
import type { Clock } from '../../domain/clock.ts';
import { isStoredStatus } from '../../domain/idempotency.ts';
import { ApiError, validationFailed } from '../../domain/errors.ts';
import { canonicalJson } from '../../domain/canonical-json.ts';

/** @internal Exported for its tests, not used elsewhere. */
export { canonicalJson };

// The Idempotency-Key layer for every route whose config says
// `idempotency: 'required' | 'optional'`, when the request carries the header:
//
//   onRequest (auth.ts)  key 401 → scope 403 → header missing on a `required` route 400
//   preValidation        header format 400; fingerprint of the body as parsed (before the schema
//                        validator adds defaults or strips fields)
//   (schema validation)  400: nothing stored, the key is not consumed
//   preHandler           claim the key: run / replay / 409 reused / 409 in progress
//   onSend               the claimed request's response: stored, or the key released
//
// Money routes (`idempotencyInWriter`) stop after the fingerprint: their writer records the key in
// the same transaction as the money it moves and answers from it (services/payouts.ts, treasury.ts),
// so a crash after that commit can never leave a key that forgot its payment.
//
// The database alone decides who runs (see repositories/idempotency.ts); this file keeps only
// per-request state. Stored bodies are never logged.

/**
 * How long a running request holds its key; past it a retry may take the key over.
 * @internal Exported for its tests, not used elsewhere.
 */
export const IDEMPOTENCY_LEASE_MS = 2 * 60_000;
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

/** The header's form: 1 to 255 printable ASCII characters (the OpenAPI document states the same). */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x20-\\x7e]+$';
export const IDEMPOTENCY_KEY_FORMAT_MESSAGE = `must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters (a UUID is a good choice)`;
const KEY_PATTERN = new RegExp(IDEMPOTENCY_KEY_PATTERN);

/**
 * sha256 hex of the method, the route template, the path parameters (when the route has any: the
 * same key on another resource is another request) and the canonical body.
 * @internal Exported for its tests, not used elsewhere.
 */
export function requestFingerprint(method: string, routeUrl: string, params: unknown, body: unknown): string {
  const hasParams = params !== null && typeof params === 'object' && Object.keys(params).length > 0;
  const text = [method.toUpperCase(), routeUrl, hasParams ? canonicalJson(params) : '', canonicalJson(body)].join('\n');
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The header's value, or undefined when absent; 400 `validation_failed` when malformed.
 * @internal Exported for its tests, not used elsewhere.
 */
export function readIdempotencyKey(request: FastifyRequest): string | undefined {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header.join(', ') : header;
  if (value.length < 1 || value.length > IDEMPOTENCY_KEY_MAX_LENGTH || !KEY_PATTERN.test(value)) {
    throw validationFailed([{ field: 'Idempotency-Key', message: IDEMPOTENCY_KEY_FORMAT_MESSAGE }]);
  }
  return value;
}

interface Pending {
  key: string;
  fingerprint: string;
}

interface Claim {
  scope: IdempotencyScope;
  owner: string;
}

export interface IdempotencyOptions {
  leaseMs?: number;
}

export function registerIdempotency(
  app: FastifyInstance,
  db: Database,
  clock: Clock,
  config: Pick<Config, 'idempotencyTtlHours'>,
  options: IdempotencyOptions = {},
): void {
  const keys: KeyLedger = {
    db,
    clock,
    ttlMs: config.idempotencyTtlHours * 3_600_000,
    leaseMs: options.leaseMs ?? IDEMPOTENCY_LEASE_MS,
    pending: new WeakMap<FastifyRequest, Pending>(),
    claims: new WeakMap<FastifyRequest, Claim>(),
  };
  app.addHook('preValidation', async function readRequestedKey(request) {
    const wanted = requestedKey(request);
    if (wanted) keys.pending.set(request, wanted);
  });
  app.addHook('preHandler', async function claimRequestedKey(request, reply) {
    return claimKey(keys, request, reply);
  });
  // Also reached when the handler throws: the error handler renders the error with reply.send.
  app.addHook('onSend', async function recordAnswer(request, reply, payload) {
    return recordOutcome(keys, request, reply, payload);
  });
}

/** What the three hooks share: the keys read (pending) and the keys claimed, per request. */
interface KeyLedger {
  db: Database;
  clock: Clock;
  ttlMs: number;
  leaseMs: number;
  pending: WeakMap<FastifyRequest, Pending>;
  claims: WeakMap<FastifyRequest, Claim>;
}

/** The key and fingerprint of a keyed request on an idempotent route; undefined for any other. */
function requestedKey(request: FastifyRequest): Pending | undefined {
  if (!request.routeOptions.config.idempotency || !request.auth) return undefined;
  const key = readIdempotencyKey(request);
  if (key === undefined) return undefined;
  let fingerprint: string;
  try {
    fingerprint = requestFingerprint(
      request.method,
      request.routeOptions.url ?? request.url,
      request.params,
      request.body,
    );
  } catch (error) {
    if (error instanceof RangeError) throw validationFailed([{ field: 'body', message: 'is nested too deeply' }]);
    throw error;
  }
  return { key, fingerprint };
}

/**
 * Claims the key before the handler runs (or hands it to a route whose writer records it in its own
 * transaction); a completed key is answered from what it stored.
 */
async function claimKey(keys: KeyLedger, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const wanted = keys.pending.get(request);
  if (!wanted || !request.auth) return;
  keys.pending.delete(request);
  if (request.routeOptions.config.idempotencyInWriter) {
    request.idempotency = wanted;
    return;
  }
  const scope: IdempotencyScope = { tenantId: request.auth.tenantId, mode: request.auth.mode, key: wanted.key };
  const result = await claimIdempotencyKey(keys.db, scope, wanted.fingerprint, {
    now: keys.clock.now(),
    ttlMs: keys.ttlMs,
    leaseMs: keys.leaseMs,
  });
  switch (result.outcome) {
    case 'claimed':
      keys.claims.set(request, { scope, owner: result.owner });
      if (result.tookOver === 'lease')
        request.log.warn('idempotency: took over a key whose holder let its lease expire');
      return;
    case 'replay':
      // The stored bytes as they were sent; a string with a JSON content type is not re-serialised.
      return reply
        .code(result.status)
        .header(IDEMPOTENT_REPLAYED_HEADER, 'true')
        .header('content-type', 'application/json; charset=utf-8')
        .send(result.body);
    case 'mismatch':
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used for a different request (another route or body). Use a new key for a new operation.',
      );
    case 'in_progress':
      throw new ApiError(
        'idempotency_request_in_progress',
        'A request with this Idempotency-Key is still being processed. Retry the same request in a moment: you will get its result once it finishes.',
      );
  }
}

/** Stores the answer under the claimed key, or releases the key when the answer is not one to keep. */
async function recordOutcome<T>(keys: KeyLedger, request: FastifyRequest, reply: FastifyReply, payload: T): Promise<T> {
  const claim = keys.claims.get(request);
  if (!claim) return payload; // not idempotent, a replay, or rejected by our own 409s
  keys.claims.delete(request);
  const status = reply.statusCode;
  const body = payloadText(payload);
  try {
    if (isStoredStatus(status) && body !== undefined) {
      const stored = await completeIdempotencyKey(keys.db, claim.scope, claim.owner, { status, body });
      if (!stored)
        request.log.warn(
          'idempotency: the key was taken over before this request finished; its response is not the one kept',
        );
    } else {
      if (body === undefined)
        request.log.warn('idempotency: a streamed response cannot be stored; the key is released');
      await releaseIdempotencyKey(keys.db, claim.scope, claim.owner);
    }
  } catch (error) {
    // The response still goes out; the key stays in progress until its lease expires. Only the
    // code and message are logged: a driver error's detail may quote the stored body.
    request.log.error(
      { code: pgErrorCode(error), message: (error as Error)?.message },
      'idempotency: could not record the outcome of the request',
    );
  }
  return payload;
}

function payloadText(payload: unknown): string | undefined {
  if (payload === undefined || payload === null) return '';
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return undefined;
}
