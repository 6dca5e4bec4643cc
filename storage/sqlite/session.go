package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/bridge"
)

// CreateSession inserts sess; CodeConflict if its principal has a session
// of its id. A zero Created
// is set to the store's clock and a zero Updated to Created.
func (s *Store) CreateSession(ctx context.Context, sess *bridge.Session) error {
	if sess.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create session: empty id")
	}
	if sess.Created.IsZero() {
		sess.Created = s.now()
	}
	if sess.Updated.IsZero() {
		sess.Updated = sess.Created
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.createSession(ctx, tx, sess) })
}

func (s *Store) createSession(ctx context.Context, tx *sql.Tx, sess *bridge.Session) error {
	_, err := tx.StmtContext(ctx, s.insertSession).ExecContext(ctx,
		sess.ID, sess.Principal, unixNano(sess.Created), unixNano(sess.Updated), nullBytes(sess.State))
	if isDuplicate(err) {
		return bridge.Errorf(bridge.CodeConflict, "session %q exists", sess.ID)
	}
	if err != nil {
		return fmt.Errorf("create session id=%s: %w", sess.ID, err)
	}
	return nil
}

// Session returns principal's session id; CodeNotFound if there is none
// (another principal's session of that id is none).
func (s *Store) Session(ctx context.Context, principal, id string) (*bridge.Session, error) {
	var sess *bridge.Session
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		sess, err = findSession(ctx, tx, principal, id)
		return err
	})
	return sess, err
}

func findSession(ctx context.Context, tx *sql.Tx, principal, id string) (*bridge.Session, error) {
	var (
		sess             = &bridge.Session{ID: id, Principal: principal}
		created, updated int64
	)
	err := tx.QueryRowContext(ctx, `SELECT created, updated, state FROM sessions WHERE principal = ? AND id = ?`, principal, id).
		Scan(&created, &updated, &sess.State)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "session %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("session id=%s: %w", id, err)
	}
	sess.Created = fromUnixNano(created)
	sess.Updated = fromUnixNano(updated)
	return sess, nil
}

// UpdateSession writes sess.Updated and sess.State of the session
// (sess.Principal, sess.ID); CodeNotFound if it does not exist.
func (s *Store) UpdateSession(ctx context.Context, sess *bridge.Session) error {
	return s.write(ctx, func(tx *sql.Tx) error { return updateSession(ctx, tx, sess) })
}

func updateSession(ctx context.Context, tx *sql.Tx, sess *bridge.Session) error {
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET updated = ?, state = CAST(? AS TEXT) WHERE principal = ? AND id = ?`,
		unixNano(sess.Updated), nullBytes(sess.State), sess.Principal, sess.ID)
	if err != nil {
		return fmt.Errorf("update session id=%s: %w", sess.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update session id=%s: %w", sess.ID, err)
	} else if n == 0 {
		return bridge.Errorf(bridge.CodeNotFound, "session %q not found", sess.ID)
	}
	return nil
}
