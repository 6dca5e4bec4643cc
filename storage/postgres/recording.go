package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.RecordingStore = (*Store)(nil)

// AddRecording appends r to its run's recordings. Two replicas adding to
// one run at once may both pass the count: the bound is approximate by
// that much.
func (s *Store) AddRecording(ctx context.Context, r *bridge.Recording) error {
	if len(r.Data) > bridge.MaxRecording {
		return bridge.Errorf(bridge.CodeTooLarge, "recording of run %s: %d bytes, more than %d", r.RunID, len(r.Data), bridge.MaxRecording)
	}
	created := r.Created
	if created.IsZero() {
		created = s.now()
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM recordings WHERE run_id = $1`, r.RunID).Scan(&n); err != nil {
			return err
		}
		if n >= bridge.MaxRecordings {
			return bridge.Errorf(bridge.CodeTooLarge, "run %s has %d recordings already", r.RunID, n)
		}
		_, err := tx.Exec(ctx, `INSERT INTO recordings (run_id, created, data) VALUES ($1, $2, $3)`, r.RunID, unixNano(created), string(r.Data))
		if pgCode(err) == foreignKeyViolation {
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
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT created, data FROM recordings WHERE run_id = $1 ORDER BY id`, run)
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
