package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.RecordingStore = (*Store)(nil)

// AddRecording appends r to its run's recordings.
func (s *Store) AddRecording(ctx context.Context, r *bridge.Recording) error {
	if len(r.Data) > bridge.MaxRecording {
		return bridge.Errorf(bridge.CodeTooLarge, "recording of run %s: %d bytes, more than %d", r.RunID, len(r.Data), bridge.MaxRecording)
	}
	created := r.Created
	if created.IsZero() {
		created = s.now()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM recordings WHERE run_id = ?`, r.RunID).Scan(&n); err != nil {
			return err
		}
		if n >= bridge.MaxRecordings {
			return bridge.Errorf(bridge.CodeTooLarge, "run %s has %d recordings already", r.RunID, n)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO recordings (run_id, created, data) VALUES (?, ?, ?)`, r.RunID, unixNano(created), string(r.Data))
		if constraint(err) == sqlite3.ErrConstraintForeignKey {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", r.RunID)
		}
		return err
	})
	if err != nil && bridge.ErrorCode(err) != bridge.CodeTooLarge && bridge.ErrorCode(err) != bridge.CodeNotFound {
		return fmt.Errorf("add recording run=%s: %w", r.RunID, err)
	}
	return err
}

// Recordings returns run's recordings, oldest first.
func (s *Store) Recordings(ctx context.Context, run string) ([]bridge.Recording, error) {
	var out []bridge.Recording
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT created, data FROM recordings WHERE run_id = ? ORDER BY id`, run)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var created int64
			var data string
			if err := rows.Scan(&created, &data); err != nil {
				return err
			}
			out = append(out, bridge.Recording{RunID: run, Created: fromUnixNano(created), Data: []byte(data)})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("recordings run=%s: %w", run, err)
	}
	return out, nil
}
