-- A run's timings that no event records (bridge.Run.FirstCommit and
-- FirstClientByte), in unix nanoseconds, 0 while not known. The row that
-- ends a run writes them; one learnt later sets only what is still 0.
ALTER TABLE runs ADD COLUMN first_commit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN first_byte INTEGER NOT NULL DEFAULT 0;
