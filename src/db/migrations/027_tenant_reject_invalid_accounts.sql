-- A tenant setting: a payout by transferencia to an account number whose check digits do not agree
-- (domain/account-check.ts) fails before the rail with invalid_destination_account. Off by default,
-- so nothing changes for a tenant that does not turn it on.
ALTER TABLE tenants ADD COLUMN reject_invalid_accounts boolean NOT NULL DEFAULT false;
