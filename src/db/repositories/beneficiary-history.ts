import type { Queryable } from '../database.ts';

// The recipient history that tells an integrator whether a new payment is routine,
// updated in the transaction that records each outcome.

export async function recordBeneficiarySuccess(tx: Queryable, tenantId: string, beneficiaryId: string, at: Date): Promise<void> {
  await tx.query(
    `UPDATE beneficiaries SET payout_count = payout_count + 1, last_success_at = $3 WHERE tenant_id = $1 AND id = $2`,
    [tenantId, beneficiaryId, at],
  );
}

export async function recordBeneficiaryFailure(tx: Queryable, tenantId: string, beneficiaryId: string, reason: string): Promise<void> {
  await tx.query(`UPDATE beneficiaries SET last_failure_reason = $3 WHERE tenant_id = $1 AND id = $2`, [tenantId, beneficiaryId, reason]);
}
