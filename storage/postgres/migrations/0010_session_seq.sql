-- Each session's events in commit order (issue 20, the session channel):
-- every commit gives the events it writes for one run the next number of
-- the run's session (principal, session id), kept in events.sseq;
-- session_seqs holds each session's last one, and its row lock orders the
-- commits of a session (a commit numbers after the one before has
-- committed). events_by_sseq finds a run's events from a number on.
ALTER TABLE events ADD COLUMN sseq BIGINT NOT NULL DEFAULT 0;

CREATE TABLE session_seqs (
	principal  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	last_seq   BIGINT NOT NULL,
	PRIMARY KEY (principal, session_id)
);

-- The events stored before: one number per run, the runs of a session
-- one after another in the order they were created.
CREATE TEMP TABLE run_sseq ON COMMIT DROP AS SELECT id, principal, session_id,
	row_number() OVER (PARTITION BY principal, session_id ORDER BY created, ord) AS n
	FROM runs WHERE session_id <> '';
UPDATE events SET sseq = run_sseq.n FROM run_sseq WHERE run_sseq.id = events.run_id;
INSERT INTO session_seqs (principal, session_id, last_seq)
	SELECT principal, session_id, max(n) FROM run_sseq GROUP BY principal, session_id;

CREATE INDEX events_by_sseq ON events (run_id, sseq);
