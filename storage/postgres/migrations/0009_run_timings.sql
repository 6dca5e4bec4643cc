-- A run's timings that no event records (bridge.Run.FirstCommit and
-- FirstClientByte; storage/sqlite's 0012), in unix nanoseconds, 0 while not
-- known. The row that ends a run writes them; one learnt later sets only
-- what is still 0.
ALTER TABLE runs ADD COLUMN first_commit BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN first_byte BIGINT NOT NULL DEFAULT 0;
