-- A session's events are found from a number on (SessionEvents) by the
-- first event of each run's commit, marked (opens) and indexed alone,
-- instead of an index entry for every event (events_by_sseq): that index
-- cost a third of a batch's commit (issue 16). Every event of a run's
-- commit has its commit's number, and its first event the lowest seq, so
-- a run's events numbered n or later all have a seq at least that of the
-- lowest opener numbered n or later.
ALTER TABLE events ADD COLUMN opens BOOLEAN NOT NULL DEFAULT false;

UPDATE events SET opens = true FROM (
	SELECT run_id, min(seq) AS seq FROM events WHERE sseq > 0 GROUP BY run_id, sseq) o
	WHERE events.run_id = o.run_id AND events.seq = o.seq;

CREATE INDEX events_openers ON events (run_id, sseq, seq) WHERE opens;
DROP INDEX events_by_sseq;
