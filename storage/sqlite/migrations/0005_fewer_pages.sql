-- Two b-tree pages fewer in a new run's first commit (which writes one WAL
-- frame per page it touches): sessions keeps its rows in its primary key
-- (WITHOUT ROWID: no separate index of ids to write as well), and messages
-- numbers its rows without AUTOINCREMENT (no sqlite_sequence row to write
-- with every insert). Messages are never deleted, so a position is never
-- used twice; the copies keep every position, so history cursors hold.
CREATE TABLE sessions_new (
	id        TEXT PRIMARY KEY,
	principal TEXT NOT NULL DEFAULT '',
	created   INTEGER NOT NULL,
	updated   INTEGER NOT NULL,
	state     TEXT -- JSON object, NULL when empty
) WITHOUT ROWID;
INSERT INTO sessions_new (id, principal, created, updated, state)
	SELECT id, principal, created, updated, state FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;

CREATE TABLE messages_new (
	position    INTEGER PRIMARY KEY,
	session_id  TEXT NOT NULL,
	run_id      TEXT REFERENCES runs (id) ON DELETE CASCADE,
	role        TEXT NOT NULL,
	payload     TEXT NOT NULL, -- JSON bridge.Message without its ID
	fingerprint TEXT NOT NULL,
	created     INTEGER NOT NULL
);
INSERT INTO messages_new (position, session_id, run_id, role, payload, fingerprint, created)
	SELECT position, session_id, run_id, role, payload, fingerprint, created FROM messages;
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
CREATE INDEX messages_by_session ON messages (session_id, position);
CREATE INDEX messages_by_run ON messages (run_id);
DELETE FROM sqlite_sequence WHERE name = 'messages';
