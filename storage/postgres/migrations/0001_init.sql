-- The schema of storage/sqlite, in PostgreSQL: times are unix nanoseconds
-- (0 for none), payloads the JSON of the hub's types, as text so that they
-- come back byte for byte.

CREATE TABLE sessions (
	id        TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	created   BIGINT NOT NULL,
	updated   BIGINT NOT NULL,
	state     TEXT -- JSON object, NULL when empty
);

CREATE TABLE runs (
	id              TEXT PRIMARY KEY,
	session_id      TEXT NOT NULL DEFAULT '',
	client_run_id   TEXT NOT NULL DEFAULT '',
	principal       TEXT NOT NULL DEFAULT '',
	inbound         TEXT NOT NULL DEFAULT '',
	outbound        TEXT NOT NULL DEFAULT '',
	upstream        TEXT NOT NULL DEFAULT '',
	model           TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL,
	stop_reason     TEXT NOT NULL DEFAULT '',
	reason          TEXT NOT NULL DEFAULT '',
	usage           TEXT NOT NULL DEFAULT '{}', -- JSON bridge.Usage
	dropped         TEXT,                       -- JSON array, NULL when empty
	render          TEXT NOT NULL DEFAULT '',
	trace_id        TEXT NOT NULL DEFAULT '',
	upstream_run_id TEXT NOT NULL DEFAULT '',
	created         BIGINT NOT NULL,
	finished        BIGINT NOT NULL DEFAULT 0,
	last_seq        BIGINT NOT NULL DEFAULT 0,
	ord             BIGSERIAL -- creation order, for ties of created
);

CREATE INDEX runs_by_session ON runs (session_id, created);
CREATE INDEX runs_by_status ON runs (status, created);
CREATE INDEX runs_by_client_id ON runs (principal, client_run_id) WHERE client_run_id <> '';

CREATE TABLE events (
	run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq         BIGINT NOT NULL,
	kind        TEXT NOT NULL,
	payload     TEXT NOT NULL, -- JSON bridge.Event without run id, seq and time
	upstream_id TEXT NOT NULL DEFAULT '',
	time        BIGINT NOT NULL,
	PRIMARY KEY (run_id, seq)
);

CREATE TABLE messages (
	position   BIGSERIAL PRIMARY KEY,
	session_id TEXT NOT NULL,
	run_id     TEXT REFERENCES runs (id) ON DELETE CASCADE,
	role       TEXT NOT NULL,
	payload    TEXT NOT NULL, -- JSON bridge.Message without its id
	created    BIGINT NOT NULL
);

CREATE INDEX messages_by_session ON messages (session_id, position);
CREATE INDEX messages_by_run ON messages (run_id, position);

CREATE TABLE id_map (
	kind   TEXT NOT NULL,
	scope  TEXT NOT NULL,
	local  TEXT NOT NULL,
	remote TEXT NOT NULL,
	PRIMARY KEY (kind, scope, local)
);

CREATE INDEX id_map_by_remote ON id_map (kind, scope, remote);
