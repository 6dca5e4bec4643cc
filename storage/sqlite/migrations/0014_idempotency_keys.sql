-- A Hermes run's client run id is its Idempotency-Key (bridge.IdempotencyKeyed):
-- one run of a principal has it (the same rule as PostgreSQL's, where
-- replicas race; here one process serializes a key's requests already).
-- Runs made twice with one key before keep it on the newest only, the one
-- RunByClientID found already.
UPDATE runs SET client_run_id = '' WHERE inbound = 'hermes' AND client_run_id <> '' AND EXISTS (
	SELECT 1 FROM runs n WHERE n.inbound = 'hermes' AND n.principal = runs.principal
		AND n.client_run_id = runs.client_run_id AND (n.created > runs.created OR n.created = runs.created AND n.rowid > runs.rowid));

CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (principal, client_run_id)
	WHERE inbound = 'hermes' AND client_run_id <> '';
