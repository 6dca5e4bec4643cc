package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.ResponseStore = (*Store)(nil)

const responseColumns = `principal, id, run_id, session_id, after_seq, previous, created, model, background, echo, input, output, end_pos, deleted`

// PutResponse inserts r; CodeConflict if its principal has one of its id.
func (s *Store) PutResponse(ctx context.Context, r *bridge.StoredResponse) error {
	if r.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "put response: empty id")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO responses (`+responseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Principal, r.ID, r.RunID, r.SessionID, r.After, r.Previous, unixNano(r.Created), r.Model, r.Background,
			nullJSON(r.Echo), nullJSON(r.Input), nullJSON(r.Output), r.End, r.Deleted)
		if isDuplicate(err) {
			return bridge.Errorf(bridge.CodeConflict, "response %q exists", r.ID)
		}
		return err
	})
	if err != nil && bridge.ErrorCode(err) != bridge.CodeConflict {
		return fmt.Errorf("put response id=%s: %w", r.ID, err)
	}
	return err
}

// nullJSON is b as a column value: NULL when empty.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func scanResponse(row interface{ Scan(...any) error }) (*bridge.StoredResponse, error) {
	var r bridge.StoredResponse
	var created int64
	var echo, input, output sql.NullString
	if err := row.Scan(&r.Principal, &r.ID, &r.RunID, &r.SessionID, &r.After, &r.Previous, &created, &r.Model, &r.Background,
		&echo, &input, &output, &r.End, &r.Deleted); err != nil {
		return nil, err
	}
	r.Created = fromUnixNano(created)
	r.Echo, r.Input, r.Output = rawOrNil(echo), rawOrNil(input), rawOrNil(output)
	return &r, nil
}

func rawOrNil(s sql.NullString) json.RawMessage {
	if !s.Valid || s.String == "" {
		return nil
	}
	return json.RawMessage(s.String)
}

func (s *Store) Response(ctx context.Context, principal, id string) (*bridge.StoredResponse, error) {
	var r *bridge.StoredResponse
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanResponse(tx.QueryRowContext(ctx, `SELECT `+responseColumns+` FROM responses WHERE principal = ? AND id = ?`, principal, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "no stored response %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("response id=%s: %w", id, err)
	}
	return r, nil
}

func (s *Store) RunResponses(ctx context.Context, principal, run string) ([]*bridge.StoredResponse, error) {
	var out []*bridge.StoredResponse
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+responseColumns+` FROM responses WHERE run_id = ? AND principal = ?
			ORDER BY after_seq, id`, run, principal)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanResponse(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("responses of run=%s: %w", run, err)
	}
	return out, nil
}

// updateResponse runs an UPDATE of principal's response id; CodeNotFound
// when it changes no row.
func (s *Store) updateResponse(ctx context.Context, what, principal, id, set string, args ...any) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE responses SET `+set+` WHERE principal = ? AND id = ?`, append(args, principal, id)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, bridge.Errorf(bridge.CodeNotFound, "no stored response %q", id))
		}
		return nil
	})
	if err != nil && bridge.ErrorCode(err) != bridge.CodeNotFound {
		return fmt.Errorf("%s id=%s: %w", what, id, err)
	}
	return err
}

// cmpErr is err, else def.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

func (s *Store) FinishResponse(ctx context.Context, principal, id string, output json.RawMessage) error {
	return s.updateResponse(ctx, "finish response", principal, id, `output = ?`, nullJSON(output))
}

func (s *Store) DeleteResponse(ctx context.Context, principal, id string) error {
	return s.updateResponse(ctx, "delete response", principal, id, `deleted = 1, input = NULL, output = NULL, echo = NULL`)
}

func (s *Store) EndResponses(ctx context.Context, principal, session string, end int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE responses SET end_pos = ? WHERE session_id = ? AND end_pos = 0 AND principal = ?`,
			end, session, principal)
		return err
	})
	if err != nil {
		return fmt.Errorf("end responses of session=%s: %w", session, err)
	}
	return nil
}
