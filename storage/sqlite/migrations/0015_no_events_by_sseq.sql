-- events_by_sseq (0013) cost every commit one more b-tree to write: an
-- entry for each events row, which made a commit of many runs' deltas
-- half as slow again (BenchmarkCommitRuns runs=50/each=1: 1.07 ms at
-- 2ea3324, 1.65 ms with the index) and the bridge serve fewer streams a
-- second. A run's rows in their key's order (run_id, seq) have sseq in
-- order too (each commit takes a higher number of the run's session), so
-- SessionEvents finds a run's first row after a position by a binary
-- search of the key instead (a few seeks per run a page).
DROP INDEX events_by_sseq;
