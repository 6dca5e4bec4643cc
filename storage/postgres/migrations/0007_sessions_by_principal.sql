-- One id namespace per principal (storage/sqlite's 0011): a session is
-- named by its principal and its id together. sessions takes (principal,
-- id) as its primary key; messages learn their session's principal (ids
-- were unique until now, so the join is exact); the id map's session
-- entries an upstream keeps move to the name principal || chr(31) || id
-- for a keyed principal's sessions (the ADK client's "bridge-session:"
-- prefix kept; the ADK dialect's own entries, scope adk-in:<principal>,
-- are per principal already).
ALTER TABLE messages ADD COLUMN principal TEXT NOT NULL DEFAULT '';
UPDATE messages m SET principal = s.principal FROM sessions s
	WHERE s.id = m.session_id AND s.principal <> '';

UPDATE id_map i SET local = s.principal || chr(31) || s.id FROM sessions s
	WHERE i.kind = 'session' AND i.scope NOT LIKE 'adk-in:%' AND i.local = s.id AND s.principal <> '';
UPDATE id_map i SET local = 'bridge-session:' || s.principal || chr(31) || s.id FROM sessions s
	WHERE i.kind = 'session' AND i.scope NOT LIKE 'adk-in:%' AND i.local = 'bridge-session:' || s.id AND s.principal <> '';

ALTER TABLE sessions DROP CONSTRAINT sessions_pkey;
ALTER TABLE sessions ADD PRIMARY KEY (principal, id);
