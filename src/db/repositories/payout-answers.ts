// What the payout path records once the rail has answered: the response stored under the payout's
// Idempotency-Key and, when the rail accepted the payout ("processing"), the history row of that
// acceptance. Both in ONE statement per group of concurrent payouts (see Coalescer), on the relaxed
// pool: the key already names the committed payment (a retry whose stored answer a database crash lost
// answers with the payment as it stands), and a lost acceptance row is written by the reaper when it
// asks the rail. Only the payout path writes here.
import type { TransitionActor } from '../../domain/payment-state.ts';
import { assertTransition } from '../../domain/payment-state.ts';
import { COALESCER_BOUNDS, Coalescer } from '../coalescer.ts';
import { relaxedOf, type Queryable } from '../database.ts';
import { KEY_COMPLETIONS_SQL, keyCompletionParams, type IdempotencyScope } from './idempotency.ts';
import { Params } from './sql-params.ts';

export interface PayoutAnswer {
  scope: IdempotencyScope;
  /** The payment the key names (the owner the payout batch claimed the key with). */
  paymentId: string;
  status: number;
  body: string;
  /** The rail accepted the payout: recorded once, whichever path hears it first. */
  acceptance?: { actor: TransitionActor; metadata: Record<string, unknown>; at: Date };
}

export interface PayoutAnswerRecorded {
  /** False when the key no longer waits for this answer (taken over after its lease, or completed). */
  answerStored: boolean;
  /** False when the acceptance was already recorded, or the payment has moved on. */
  acceptanceRecorded: boolean;
}

// Keys are completed as every key is (KEY_COMPLETIONS_SQL).
// Payments are share-locked in id order through a primary-key probe each, as every writer locks
// them (db/commit/README.md); nobody holding a payment ever waits for a key, so the two parts of this
// statement never wait in a cycle with anyone. `acceptances`: the rows
// `v(tenant_id, id, actor, metadata, at, n)`, in the order they are locked.
const answersSql = (acceptances: string): string => `WITH answer AS (
  ${KEY_COMPLETIONS_SQL}
), accepted AS (
  INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
  SELECT v.tenant_id, v.id, 'submitted', 'submitted', 'rail_accepted_async', v.actor, v.metadata, v.at
    FROM ${acceptances}
    CROSS JOIN LATERAL (SELECT p.status FROM payments p WHERE p.tenant_id = v.tenant_id AND p.id = v.id FOR SHARE) p
   WHERE p.status = 'submitted'
   ORDER BY v.n
  ON CONFLICT (tenant_id, payment_id) WHERE reason = 'rail_accepted_async' DO NOTHING
  RETURNING payment_id
)
SELECT 'answer'::text AS part, owner::text AS id FROM answer
UNION ALL SELECT 'accepted'::text, payment_id::text FROM accepted`;

async function recordMany(db: Queryable, items: readonly PayoutAnswer[]): Promise<PayoutAnswerRecorded[]> {
  assertTransition('submitted', 'submitted');
  const acceptances = items
    .filter((i) => i.acceptance)
    .sort((a, b) => (a.scope.tenantId + a.paymentId < b.scope.tenantId + b.paymentId ? -1 : 1));
  const p = new Params();
  // KEY_COMPLETIONS_SQL numbers its own values ($1..$6, idempotency.ts): they come first, in its order.
  const completions = items.map((i) => ({ scope: i.scope, owner: i.paymentId, status: i.status, body: i.body }));
  for (const values of keyCompletionParams(completions)) p.add(values);
  const acceptanceRows = p.unnest(
    {
      tenant_id: ['uuid', acceptances.map((i) => i.scope.tenantId)],
      id: ['uuid', acceptances.map((i) => i.paymentId)],
      actor: ['text', acceptances.map((i) => i.acceptance!.actor)],
      metadata: ['jsonb', acceptances.map((i) => JSON.stringify(i.acceptance!.metadata))],
      at: ['timestamptz', acceptances.map((i) => i.acceptance!.at)],
    },
    { ordinality: true },
  );
  // keyed: part of the payout path measured by KEYED_PLANNER (db/postgres.ts): c16 872/s, 341/s without (−61 %).
  const { rows } = await db.query<{ part: 'answer' | 'accepted'; id: string }>(answersSql(acceptanceRows), p.values, {
    plan: 'keyed',
  });
  const answered = new Set(rows.filter((r) => r.part === 'answer').map((r) => r.id));
  const accepted = new Set(rows.filter((r) => r.part === 'accepted').map((r) => r.id));
  return items.map((i) => ({ answerStored: answered.has(i.paymentId), acceptanceRecorded: accepted.has(i.paymentId) }));
}

const recorders = new WeakMap<Queryable, Coalescer<PayoutAnswer, PayoutAnswerRecorded>>();

/** Records one payout's answer (and acceptance); concurrent ones share one statement. */
export function recordPayoutAnswer(db: Queryable, answer: PayoutAnswer): Promise<PayoutAnswerRecorded> {
  let recorder = recorders.get(db);
  if (!recorder) {
    recorder = new Coalescer((items) => recordMany(relaxedOf(db), items), COALESCER_BOUNDS);
    recorders.set(db, recorder);
  }
  return recorder.submit(answer);
}
