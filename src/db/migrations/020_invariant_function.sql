-- bds_invariant(ok, message): true, or an error 'invariant: <message>' that aborts the statement and
-- its transaction. A batch's last statement goes out with its COMMIT (pipelined), so what it checks
-- about its own writes (every locked row it meant to change was changed) must fail in SQL: a check
-- in the service after the answer would come after the commit.
CREATE FUNCTION bds_invariant(ok boolean, message text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION 'invariant: %', message;
  END IF;
  RETURN true;
END
$$;
