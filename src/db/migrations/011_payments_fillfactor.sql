-- A payment row is updated a few times after its insert (rail acknowledgement, outcome). With full
-- pages every such update is a non-HOT update that rewrites all of the statement indexes; room on
-- the page lets PostgreSQL keep the new version beside the old and leave the indexes alone when no
-- indexed column changed. Applies to pages written from now on.
ALTER TABLE payments SET (fillfactor = 70);
ALTER TABLE idempotency_keys SET (fillfactor = 70);
