-- The inspector's run list, newest first, pages through every run: an index
-- on created (with the rowid SQLite keeps in every index, the list's whole
-- order) reads a page without sorting the table. It costs a new run one
-- more b-tree page in its first commit.
CREATE INDEX runs_by_created ON runs (created);
