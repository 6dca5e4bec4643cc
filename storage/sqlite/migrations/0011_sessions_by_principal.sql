-- One id namespace per principal (issue 15 item 5): a session is named by
-- its principal and its id together, so two keys may each have a session
-- "demo" and neither can tell that the other's exists. sessions takes
-- (principal, id) as its primary key; messages learn their session's
-- principal (from the session they belong to: until now ids were unique,
-- so the join is exact), which Messages matches with the id.
--
-- The id map's session entries an upstream keeps (its own conversation for
-- a bridge session) now name the session by principal and id too, joined by
-- a unit separator (char(31), which no client-given id can hold): the
-- entries of a keyed principal's sessions move to that name, with the ADK
-- client's "bridge-session:" prefix kept. (The ADK dialect's own entries,
-- scope adk-in:<principal>, are per principal already.)
CREATE TABLE sessions_new (
	principal TEXT NOT NULL DEFAULT '',
	id        TEXT NOT NULL,
	created   INTEGER NOT NULL,
	updated   INTEGER NOT NULL,
	state     TEXT, -- JSON object, NULL when empty
	PRIMARY KEY (principal, id)
) WITHOUT ROWID;
INSERT INTO sessions_new (principal, id, created, updated, state)
	SELECT principal, id, created, updated, state FROM sessions;

ALTER TABLE messages ADD COLUMN principal TEXT NOT NULL DEFAULT '';
UPDATE messages SET principal = (SELECT s.principal FROM sessions s WHERE s.id = messages.session_id)
	WHERE session_id IN (SELECT id FROM sessions WHERE principal <> '');

UPDATE id_map SET local = (SELECT s.principal FROM sessions s WHERE s.id = id_map.local) || char(31) || local
	WHERE kind = 'session' AND scope NOT LIKE 'adk-in:%' AND local IN (SELECT id FROM sessions WHERE principal <> '');
UPDATE id_map SET local = 'bridge-session:' || (SELECT s.principal FROM sessions s WHERE 'bridge-session:' || s.id = id_map.local)
		|| char(31) || substr(local, length('bridge-session:') + 1)
	WHERE kind = 'session' AND scope NOT LIKE 'adk-in:%' AND local IN (SELECT 'bridge-session:' || id FROM sessions WHERE principal <> '');

DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
