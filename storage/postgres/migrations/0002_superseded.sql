-- Regenerate and edit discard runs (storage/sqlite's 0007): a superseded
-- run (runs.superseded, the time it was replaced, 0 for a run in force)
-- and its messages (messages.superseded) stay, out of the transcript the
-- engine reads and the history, unless a history asks for them.
ALTER TABLE runs ADD COLUMN superseded BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN superseded BOOLEAN NOT NULL DEFAULT false;
