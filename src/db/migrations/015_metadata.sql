-- The integrator's own key-value pairs (`metadata`) on quotes, beneficiaries and payments: stored as
-- sent and returned on every read, never interpreted. The request schema bounds them (50 keys of 1
-- to 40 characters, string values of at most 500). A constant default adds each column without
-- rewriting its table, and every row that exists reads back as `{}`, as an object created without
-- metadata does.
ALTER TABLE quotes ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE beneficiaries ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE payments ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Never anything but an object. NOT VALID skips scanning the existing rows under this migration's
-- lock: they all hold the default. New and updated rows are checked all the same.
ALTER TABLE quotes ADD CONSTRAINT quotes_metadata_object CHECK (jsonb_typeof(metadata) = 'object') NOT VALID;
ALTER TABLE beneficiaries ADD CONSTRAINT beneficiaries_metadata_object CHECK (jsonb_typeof(metadata) = 'object') NOT VALID;
ALTER TABLE payments ADD CONSTRAINT payments_metadata_object CHECK (jsonb_typeof(metadata) = 'object') NOT VALID;
