-- The rails a process may send through, and the rules that pick one for a payout (docs/rails.md).
--
-- A rail's settings: which modes and instruments it serves and whether it takes new payouts. A rail
-- with no row keeps its defaults (the sandbox serves test mode; a connector the modes its
-- configuration gives), so a deployment that configures nothing routes as before. The row names a
-- rail of the process by its adapter's name; a name no process knows is refused by the admin API.
CREATE TABLE rails (
  name        text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  modes       text[] NOT NULL CHECK (modes <@ ARRAY['test', 'live']::text[]),
  instruments text[] NOT NULL CHECK (instruments <@ ARRAY['pago_movil', 'transferencia']::text[]),
  enabled     boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Routing rules: a payout matching every condition a rule sets (a null condition matches anything)
-- prefers the rule's rail; rules apply by priority, lowest first (then oldest first). A platform
-- table read whole into each process's cache: it stays small (an operator's handful of rules).
CREATE TABLE rail_routes (
  id          uuid PRIMARY KEY,
  priority    integer NOT NULL CHECK (priority BETWEEN 0 AND 1000000),
  rail        text NOT NULL CHECK (rail ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  tenant_id   uuid,
  mode        text CHECK (mode IN ('test', 'live')),
  instrument  text CHECK (instrument IN ('pago_movil', 'transferencia')),
  bank_code   text CHECK (bank_code ~ '^[0-9]{4}$'),
  min_amount  bigint CHECK (min_amount >= 0),
  max_amount  bigint CHECK (max_amount >= 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  CHECK (min_amount IS NULL OR max_amount IS NULL OR min_amount <= max_amount)
);
