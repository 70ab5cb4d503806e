-- The statement's metadata filter (`metadata_key` + `metadata_value` on GET /v1/payments and its
-- export) asks `metadata @> {"key": "value"}`. jsonb_path_ops indexes exactly that containment, in
-- an index a fraction of the size of the default jsonb_ops; an order or invoice id matches a handful
-- of payments, which are then sorted into statement order. Without it the filter reads the whole
-- partition.
CREATE INDEX payments_metadata ON payments USING gin (metadata jsonb_path_ops);
