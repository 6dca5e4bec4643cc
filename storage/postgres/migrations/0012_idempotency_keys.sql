-- A Hermes run's client run id is its Idempotency-Key (bridge.IdempotencyKeyed):
-- one run of a principal has it, so two replicas that get the same key at
-- once create one run (the other's insert fails, and it answers with this
-- one). Runs two replicas made that way before keep their key on the newest
-- only, the one RunByClientID found already.
UPDATE runs SET client_run_id = '' WHERE inbound = 'hermes' AND client_run_id <> '' AND EXISTS (
	SELECT 1 FROM runs n WHERE n.inbound = 'hermes' AND n.principal = runs.principal
		AND n.client_run_id = runs.client_run_id AND (n.created, n.ord) > (runs.created, runs.ord));

CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (principal, client_run_id)
	WHERE inbound = 'hermes' AND client_run_id <> '';
