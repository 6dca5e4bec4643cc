-- A row of events may hold a run of consecutive deltas: seq is the first
-- one's, last the last one's (0 for a row of one event), kind 'pack', and
-- payload a JSON array alternating each event's time (unix nanoseconds)
-- and its payload. One row for a burst of deltas instead of one each.
ALTER TABLE events ADD COLUMN last INTEGER NOT NULL DEFAULT 0;
