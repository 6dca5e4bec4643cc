-- Most runs have no client run id: index only those that do, so a new run
-- without one writes one b-tree page less.
DROP INDEX runs_by_client_id;
CREATE INDEX runs_by_client_id ON runs (principal, client_run_id) WHERE client_run_id <> '';
