// The treasury's history for the payout report: every ledger writer that changes a prefunding or
// credit balance records the new balance with its time, in the statement that changes it, so
// "the balance at the end of each hour" is one index probe per hour instead of a sum over every
// ledger entry since. The time never goes back for an account (`greatest` with the last change):
// two writers queue on the account's row lock in an order their clocks need not share, and the
// history must be in the order the balances were really written.

/** The account kinds the report charts: prefunding held for the tenant, and credit it has drawn. */
const CHARTED = `('prefunding', 'credit_receivable')`;

/**
 * SQL of the `SET` item that stamps the charted accounts of an `UPDATE ledger_accounts a` with the
 * writer's time `now` (a SQL expression).
 */
export function balanceStampSql(now: string): string {
  return `balance_changed_at = CASE WHEN a.kind IN ${CHARTED} THEN greatest(a.balance_changed_at, ${now}) ELSE a.balance_changed_at END`;
}

/** What that `UPDATE … RETURNING` must return for `balanceHistorySql`. */
export const BALANCE_RETURNING = 'a.asset, a.kind, a.balance, a.balance_changed_at';

/** SQL of a CTE recording the charted balances an `account` CTE (the `UPDATE … RETURNING` above) wrote. */
export function balanceHistorySql(tenant: string, mode: string): string {
  return `balance_history AS (
  INSERT INTO ledger_balance_history (tenant_id, mode, asset, kind, at, balance)
  SELECT ${tenant}, ${mode}, asset, kind, balance_changed_at, balance FROM account WHERE kind IN ${CHARTED}
)`;
}
