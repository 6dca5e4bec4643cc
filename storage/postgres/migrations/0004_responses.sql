-- Stored Responses objects (bridge.ResponseStore) get a table of their own
-- (storage/sqlite's 0009): until now they lived as JSON in id_map under six
-- kinds of their own, which this moves here and deletes. A session's latest
-- response is now the one whose end_pos is 0, so response.head goes.
CREATE TABLE responses (
	principal  TEXT NOT NULL DEFAULT '',
	id         TEXT NOT NULL,
	run_id     TEXT NOT NULL DEFAULT '',
	session_id TEXT NOT NULL DEFAULT '',
	after_seq  BIGINT NOT NULL DEFAULT 0,
	previous   TEXT NOT NULL DEFAULT '',
	created    BIGINT NOT NULL DEFAULT 0, -- unix nanoseconds
	model      TEXT NOT NULL DEFAULT '',
	background BOOLEAN NOT NULL DEFAULT false,
	echo       TEXT, -- JSON, NULL when none
	input      TEXT, -- JSON array of input items
	output     TEXT, -- JSON Response object, NULL until finished
	end_pos    BIGINT NOT NULL DEFAULT 0,
	deleted    BOOLEAN NOT NULL DEFAULT false,
	PRIMARY KEY (principal, id)
);

CREATE INDEX responses_by_run ON responses (run_id, after_seq);
CREATE INDEX responses_by_session ON responses (session_id) WHERE end_pos = 0;

INSERT INTO responses (principal, id, run_id, session_id, after_seq, previous, created, model, background, echo, input, output, end_pos, deleted)
SELECT r.scope, r.local,
	coalesce(j->>'run', ''),
	coalesce(j->>'session', ''),
	coalesce((j->>'after')::bigint, 0),
	coalesce(j->>'prev', ''),
	coalesce((j->>'created')::bigint, 0) * 1000000000,
	coalesce(j->>'model', ''),
	coalesce((j->>'background')::boolean, false),
	(j->'echo')::text,
	(SELECT nullif(i.remote, '') FROM id_map i WHERE i.kind = 'response.input' AND i.scope = r.scope AND i.local = r.local),
	(SELECT nullif(o.remote, '') FROM id_map o WHERE o.kind = 'response.output' AND o.scope = r.scope AND o.local = r.local),
	coalesce((SELECT e.remote::bigint FROM id_map e WHERE e.kind = 'response.end' AND e.scope = r.scope AND e.local = r.local), 0),
	coalesce((j->>'deleted')::boolean, false)
FROM id_map r, LATERAL (SELECT r.remote::jsonb AS j) x
WHERE r.kind = 'response';

DELETE FROM id_map WHERE kind IN ('response', 'response.input', 'response.output', 'response.end', 'response.head', 'response.runs');
