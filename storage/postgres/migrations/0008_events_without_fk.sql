-- Events keep no foreign key to runs: its check, a trigger per inserted
-- row, took half of a batch's commit. The statement that appends events
-- checks that their runs exist instead (postgres.go, eventsSQL); runs are
-- never deleted (retention deletes events, not runs).
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_run_id_fkey;
