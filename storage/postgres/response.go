package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.ResponseStore = (*Store)(nil)

const responseColumns = `principal, id, run_id, session_id, after_seq, previous, created, model, background, echo, input, output, end_pos, deleted`

// nullJSON is b as a column value: NULL when empty.
func nullJSON(b json.RawMessage) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

func rawOrNil(s *string) json.RawMessage {
	if s == nil || *s == "" {
		return nil
	}
	return json.RawMessage(*s)
}

// PutResponse inserts r; CodeConflict if its principal has one of its id.
func (s *Store) PutResponse(ctx context.Context, r *bridge.StoredResponse) error {
	if r.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "put response: empty id")
	}
	_, err := s.db().Exec(ctx, `INSERT INTO responses (`+responseColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		r.Principal, r.ID, r.RunID, r.SessionID, r.After, r.Previous, unixNano(r.Created), r.Model, r.Background,
		nullJSON(r.Echo), nullJSON(r.Input), nullJSON(r.Output), r.End, r.Deleted)
	if pgCode(err) == uniqueViolation {
		return bridge.Errorf(bridge.CodeConflict, "response %q exists", r.ID)
	}
	if err != nil {
		return fmt.Errorf("put response id=%s: %w", r.ID, err)
	}
	return nil
}

func scanResponse(row pgx.Row) (*bridge.StoredResponse, error) {
	var r bridge.StoredResponse
	var created int64
	var echo, input, output *string
	if err := row.Scan(&r.Principal, &r.ID, &r.RunID, &r.SessionID, &r.After, &r.Previous, &created, &r.Model, &r.Background,
		&echo, &input, &output, &r.End, &r.Deleted); err != nil {
		return nil, err
	}
	r.Created = fromUnixNano(created)
	r.Echo, r.Input, r.Output = rawOrNil(echo), rawOrNil(input), rawOrNil(output)
	return &r, nil
}

func (s *Store) Response(ctx context.Context, principal, id string) (*bridge.StoredResponse, error) {
	r, err := scanResponse(s.db().QueryRow(ctx, `SELECT `+responseColumns+` FROM responses WHERE principal = $1 AND id = $2`, principal, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "no stored response %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("response id=%s: %w", id, err)
	}
	return r, nil
}

func (s *Store) RunResponses(ctx context.Context, principal, run string) ([]*bridge.StoredResponse, error) {
	rows, err := s.db().Query(ctx, `SELECT `+responseColumns+` FROM responses WHERE run_id = $1 AND principal = $2
		ORDER BY after_seq, id`, run, principal)
	if err != nil {
		return nil, fmt.Errorf("responses of run=%s: %w", run, err)
	}
	defer rows.Close()
	var out []*bridge.StoredResponse
	for rows.Next() {
		r, err := scanResponse(rows)
		if err != nil {
			return nil, fmt.Errorf("responses of run=%s: %w", run, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("responses of run=%s: %w", run, err)
	}
	return out, nil
}

// updateResponse runs an UPDATE of principal's response id ($1, $2);
// CodeNotFound when it changes no row.
func (s *Store) updateResponse(ctx context.Context, what, principal, id, set string, args ...any) error {
	tag, err := s.db().Exec(ctx, `UPDATE responses SET `+set+` WHERE principal = $1 AND id = $2`, append([]any{principal, id}, args...)...)
	if err != nil {
		return fmt.Errorf("%s id=%s: %w", what, id, err)
	}
	if tag.RowsAffected() == 0 {
		return bridge.Errorf(bridge.CodeNotFound, "no stored response %q", id)
	}
	return nil
}

func (s *Store) FinishResponse(ctx context.Context, principal, id string, output json.RawMessage) error {
	return s.updateResponse(ctx, "finish response", principal, id, `output = $3`, nullJSON(output))
}

func (s *Store) DeleteResponse(ctx context.Context, principal, id string) error {
	return s.updateResponse(ctx, "delete response", principal, id, `deleted = true, input = NULL, output = NULL, echo = NULL`)
}

func (s *Store) EndResponses(ctx context.Context, principal, session string, end int64) error {
	_, err := s.db().Exec(ctx, `UPDATE responses SET end_pos = $1 WHERE session_id = $2 AND end_pos = 0 AND principal = $3`,
		end, session, principal)
	if err != nil {
		return fmt.Errorf("end responses of session=%s: %w", session, err)
	}
	return nil
}
