-- Each session's events in commit order (issue 20, the session channel):
-- every commit gives the events it writes for one run the next number of
-- the run's session (principal, session id), kept in events.sseq (a pack
-- row's events share it); session_seqs holds each session's last one.
-- events_by_sseq finds a run's events from a number on, so reading a
-- session's events after a position costs a seek per run of the session.
ALTER TABLE events ADD COLUMN sseq INTEGER NOT NULL DEFAULT 0;

CREATE TABLE session_seqs (
	principal  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	last_seq   INTEGER NOT NULL,
	PRIMARY KEY (principal, session_id)
) WITHOUT ROWID;

-- The events stored before: one number per run, the runs of a session
-- one after another in the order they were created.
CREATE TEMP TABLE run_sseq (id TEXT PRIMARY KEY, principal TEXT, session_id TEXT, n INTEGER);
INSERT INTO run_sseq SELECT id, principal, session_id,
	row_number() OVER (PARTITION BY principal, session_id ORDER BY created, rowid)
	FROM runs WHERE session_id <> '';
UPDATE events SET sseq = (SELECT n FROM run_sseq WHERE run_sseq.id = events.run_id)
	WHERE run_id IN (SELECT id FROM run_sseq);
INSERT INTO session_seqs (principal, session_id, last_seq)
	SELECT principal, session_id, max(n) FROM run_sseq GROUP BY principal, session_id;
DROP TABLE run_sseq;

CREATE INDEX events_by_sseq ON events (run_id, sseq);
