-- No schema change: from here on a pack row's payload is a JSON array of
-- 2 (its format), the first event's time, and then each event after the
-- nanoseconds since the one before (0 for the first); a model's text delta
-- with nothing else set is its text alone, any other event its payload
-- object. Rows of the format of 0003 are still read. The bridges that know
-- this migration refuse a database migrated past what they know; the ones
-- before it did not check, and cannot read these rows.
SELECT 1;
