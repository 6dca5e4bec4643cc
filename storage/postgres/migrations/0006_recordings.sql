-- The upstream calls the inspector records (bridge.RecordingStore;
-- storage/sqlite's 0010): one row a call, its JSON as the recorder wrote it
-- (credentials redacted), in the order they were added. They go with their
-- run's events (retention).
CREATE TABLE recordings (
	id      BIGSERIAL PRIMARY KEY,
	run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	created BIGINT NOT NULL DEFAULT 0, -- unix nanoseconds
	data    TEXT NOT NULL
);

CREATE INDEX recordings_by_run ON recordings (run_id, id);
