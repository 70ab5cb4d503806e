import type { AuditActor } from '../domain/audit.ts';
import type { AuthContext, Partition } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    /** The request's Idempotency-Key and fingerprint, on routes whose writer records the key itself. */
    idempotency?: { key: string; fingerprint: string };
  }
  interface FastifyContextConfig {
    /** No API key needed (health, metrics, docs, OpenAPI document). */
    public?: boolean;
    /**
     * A public route with a budget of its own instead of the per-address limit (the rail callbacks:
     * http/callback-budget.ts).
     */
    ownBudget?: boolean;
    /** Any one of these scopes is enough; an empty list means any valid key. */
    scopes?: readonly string[];
    /** `required`: 400 `idempotency_key_missing` without the header. */
    idempotency?: 'required' | 'optional';
    /**
     * The route's writer records the key in the transaction that does the work (money routes): the
     * plugin only checks the header and computes the fingerprint, and hands both to the handler.
     */
    idempotencyInWriter?: boolean;
    /**
     * The body names a mode, but the route changes nothing in it (a reconciliation reads the books):
     * the first start's platform key, which may change test mode only, may call it for live mode too.
     */
    modeReadOnly?: boolean;
    /**
     * The request is background work itself (a payout batch: its items run in the background share,
     * services/background-share.ts), so it does not count as a request the background yields to.
     */
    background?: boolean;
    /** The body's `items` are charged to the batch item budget (http/batch-item-budget.ts) before validation. */
    itemBudget?: boolean;
  }
}

/** The key and fingerprint of a writer-recorded route (the plugin guarantees them). */
export function idempotencyOf(request: { idempotency?: { key: string; fingerprint: string } }): {
  key: string;
  fingerprint: string;
} {
  assert(request.idempotency, 'a writer-recorded route reached without its Idempotency-Key');
  return request.idempotency;
}

/** The caller's partition: every tenant-owned query is scoped by it. */
export function partitionOf(auth: AuthContext | null): Partition {
  assert(auth, 'route reached without authentication');
  return { tenantId: auth.tenantId, mode: auth.mode };
}

/** Who acts, for the audit trail: the authenticated key, its tenant, and the request. */
export function auditActorOf(request: { auth: AuthContext | null; id: string }): AuditActor {
  assert(request.auth, 'an audited route reached without authentication');
  return { keyId: request.auth.apiKeyId, tenantId: request.auth.tenantId, requestId: request.id };
}
