package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// insertMessage appends m to the transcript of run's session with the
// insertMessage statement st. created stands in for a zero m.Created.
func insertMessage(ctx context.Context, st *sql.Stmt, run string, m *bridge.Message, created time.Time) error {
	if !m.Created.IsZero() {
		created = m.Created
	}
	c := *m
	c.ID, c.RunID, c.Created = "", "", time.Time{} // kept in their own columns
	payload, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("append message run=%s: encode: %w", run, err)
	}
	res, err := st.ExecContext(ctx, string(m.Role), payload, m.Fingerprint(), unixNano(created), run)
	if err != nil {
		return fmt.Errorf("append message run=%s: %w", run, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("append message run=%s: %w", run, err)
	} else if n == 0 {
		return bridge.Errorf(bridge.CodeNotFound, "append message: run %q not found", run)
	}
	return nil
}

// RunMessages returns the transcript messages of run, oldest first. Each
// message's ID is "m<position>".
func (s *Store) RunMessages(ctx context.Context, run string) ([]bridge.Message, error) {
	var msgs []bridge.Message
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT position, run_id, created, payload FROM messages
			WHERE run_id = ? ORDER BY position`, run)
		if err != nil {
			return err
		}
		defer rows.Close()
		msgs, err = scanMessages(rows, msgs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("messages run=%s: %w", run, err)
	}
	return msgs, nil
}

// scanMessages appends the messages of rows (position, run_id, created,
// payload) to msgs.
func scanMessages(rows *sql.Rows, msgs []bridge.Message) ([]bridge.Message, error) {
	for rows.Next() {
		var (
			pos, created int64
			run          sql.NullString
			payload      sql.RawBytes
		)
		if err := rows.Scan(&pos, &run, &created, &payload); err != nil {
			return msgs, err
		}
		msgs = append(msgs, bridge.Message{})
		m := &msgs[len(msgs)-1]
		if err := json.Unmarshal(payload, m); err != nil {
			return msgs, fmt.Errorf("decode position=%d: %w", pos, err)
		}
		m.ID = "m" + strconv.FormatInt(pos, 10)
		m.RunID = run.String
		m.Created = fromUnixNano(created)
	}
	return msgs, rows.Err()
}

// Messages returns the newest limit messages of principal's session in force (not
// superseded) whose position is below before (before <= 0: no bound),
// oldest first, and whether older ones exist. limit <= 0 means all. Each
// message's ID is "m<position>".
func (s *Store) Messages(ctx context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	return s.messages(ctx, messagesInForce, principal, session, before, limit)
}

// AllMessages is Messages with the superseded messages too.
func (s *Store) AllMessages(ctx context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	return s.messages(ctx, messagesAll, principal, session, before, limit)
}

// The queries of Messages and AllMessages.
const (
	messagesInForce = `SELECT position, run_id, created, payload FROM messages
		WHERE session_id = ? AND principal = ? AND position < ? AND superseded = 0 ORDER BY position DESC LIMIT ?`
	messagesAll = `SELECT position, run_id, created, payload FROM messages
		WHERE session_id = ? AND principal = ? AND position < ? ORDER BY position DESC LIMIT ?`
)

func (s *Store) messages(ctx context.Context, query, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	fetch := int64(-1)
	if limit > 0 {
		fetch = int64(limit) + 1 // one more tells whether older ones exist
	}
	var msgs []bridge.Message
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, session, principal, before, fetch)
		if err != nil {
			return err
		}
		defer rows.Close()
		msgs, err = scanMessages(rows, msgs)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("messages session=%s before=%d: %w", session, before, err)
	}
	more := limit > 0 && len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	slices.Reverse(msgs)
	return msgs, more, nil
}

// Supersede marks run and every later run of its session (its principal's; by creation,
// ties in insertion order) superseded at at, with their messages, in one
// transaction; it returns the ids it marked, oldest first.
func (s *Store) Supersede(ctx context.Context, run string, at time.Time) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		var (
			session, principal string
			created, rowid     int64
		)
		err := tx.QueryRowContext(ctx, `SELECT session_id, principal, created, rowid FROM runs WHERE id = ?`, run).
			Scan(&session, &principal, &created, &rowid)
		if errors.Is(err, sql.ErrNoRows) {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", run)
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `UPDATE runs SET superseded = ?
			WHERE session_id = ? AND principal = ? AND superseded = 0 AND (created > ? OR created = ? AND rowid >= ?)
			RETURNING id, created, rowid`, max(unixNano(at), 1), session, principal, created, created, rowid)
		if err != nil {
			return err
		}
		type marked struct {
			id             string
			created, rowid int64
		}
		var ms []marked
		for rows.Next() {
			var m marked
			if err := rows.Scan(&m.id, &m.created, &m.rowid); err != nil {
				rows.Close()
				return err
			}
			ms = append(ms, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(ms, func(a, b marked) int {
			return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.rowid, b.rowid))
		})
		for _, m := range ms {
			if _, err := tx.ExecContext(ctx, `UPDATE messages SET superseded = 1 WHERE run_id = ?`, m.id); err != nil {
				return err
			}
			ids = append(ids, m.id)
		}
		return nil
	})
	if err != nil && bridge.ErrorCode(err) != bridge.CodeNotFound {
		return nil, fmt.Errorf("supersede run=%s: %w", run, err)
	}
	return ids, err
}
