-- The inspector's run list, newest first, pages through every run: an index
-- in the list's order reads a page without sorting the table.
CREATE INDEX runs_by_created ON runs (created, ord);
