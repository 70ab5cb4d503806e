-- No statement looks payments up by quote: a quote names its payment itself (quotes.payment_id, set
-- when the payout batch consumes it), and the batch finds quotes by their own key. The index was
-- written to three times per payment (its insert, the reaper's claim, its outcome: none of them HOT)
-- inside the tenant's commit transactions, for nothing.
DROP INDEX IF EXISTS payments_quote;
