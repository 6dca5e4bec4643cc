-- Run leases and relayed commands, for several replicas on one database.
-- A running run is leased to the replica that drives it (runs.owner, a
-- name each process draws at start) until lease_until (unix ns), renewed
-- while the run is live there; once it passes, another replica takes the
-- run over. Rows from before leases have none (owner '', 0): expired.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_running_lease ON runs (lease_until) WHERE status = 'running';

-- A stop or a steer sent to a replica that does not drive the run, for the
-- owner to carry out: taken by it, answered (JSON bridge.Answer), then
-- deleted by the sender.
CREATE TABLE run_commands (
	id      BIGSERIAL PRIMARY KEY,
	owner   TEXT NOT NULL,
	body    TEXT NOT NULL,    -- JSON bridge.Command
	taken   BOOLEAN NOT NULL DEFAULT false,
	answer  TEXT,             -- JSON bridge.Answer, NULL until answered
	created BIGINT NOT NULL
);
CREATE INDEX run_commands_waiting ON run_commands (owner, id) WHERE NOT taken;
