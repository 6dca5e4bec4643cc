-- How the run's inbound dialect rendered its stream (such as OpenAI's
-- include_usage), so a replay is the stream the client saw.
ALTER TABLE runs ADD COLUMN render TEXT NOT NULL DEFAULT '';
