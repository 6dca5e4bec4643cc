-- Regenerate and edit discard runs: a superseded run (runs.superseded, the
-- time it was replaced, 0 for a run in force) and its transcript messages
-- (messages.superseded, 1) stay in the store but leave the transcript the
-- engine reads and the history, unless a history asks for them.
ALTER TABLE runs ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
