package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
)

// runColumns is the column list of a run row.
const runColumns = `id, session_id, client_run_id, principal, inbound, outbound, upstream, model,
	status, stop_reason, reason, usage, dropped, trace_id, upstream_run_id, created, finished, last_seq, render`

// runSelect is the list scanRun reads. Commits of events do not touch the
// run's row (one page less written per commit), so a run still running
// takes its last seq from its events; an ended run's row has it.
const runSelect = `id, session_id, client_run_id, principal, inbound, outbound, upstream, model,
	status, stop_reason, reason, usage, dropped, trace_id, upstream_run_id, created, finished,
	CASE WHEN status = 'running'
		THEN max(last_seq, coalesce((SELECT max(seq, last) FROM events WHERE run_id = runs.id ORDER BY seq DESC LIMIT 1), 0))
		ELSE last_seq END,
	render, superseded, first_commit, first_byte`

// CreateRun inserts r and the messages that start it in one transaction.
// CodeConflict if r's id is taken. A zero
// r.Created is set to the store's clock. Each input message is stored as part
// of r's session and of r (whatever its RunID says) and gets its Created
// from r when zero.
func (s *Store) CreateRun(ctx context.Context, r *bridge.Run, input []bridge.Message) error {
	if r.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create run: empty id")
	}
	if r.Status == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create run %q: empty status", r.ID)
	}
	if r.Created.IsZero() {
		r.Created = s.now()
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := s.createRun(ctx, tx, r); err != nil {
			return err
		}
		st := tx.StmtContext(ctx, s.insertMessage)
		for i := range input {
			if err := insertMessage(ctx, st, r.ID, &input[i], r.Created); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) createRun(ctx context.Context, tx *sql.Tx, r *bridge.Run) error {
	usage, err := json.Marshal(&r.Usage)
	if err != nil {
		return fmt.Errorf("create run id=%s: usage: %w", r.ID, err)
	}
	dropped, err := marshalList(r.Dropped)
	if err != nil {
		return fmt.Errorf("create run id=%s: dropped: %w", r.ID, err)
	}
	_, err = tx.StmtContext(ctx, s.insertRun).ExecContext(ctx,
		r.ID, r.SessionID, r.ClientRunID, r.Principal, r.Inbound, r.Outbound, r.Upstream, r.Model,
		string(r.Status), string(r.StopReason), r.Reason, usage, dropped, r.TraceID, r.UpstreamRunID,
		unixNano(r.Created), unixNano(r.Finished), r.LastSeq, string(r.Render))
	if isDuplicate(err) {
		return bridge.Errorf(bridge.CodeConflict, "run %q exists", r.ID)
	}
	if err != nil {
		return fmt.Errorf("create run id=%s: %w", r.ID, err)
	}
	return nil
}

// Run returns the run with id; CodeNotFound if there is none.
func (s *Store) Run(ctx context.Context, id string) (*bridge.Run, error) {
	var r *bridge.Run
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runSelect+` FROM runs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", id)
		}
		if err != nil {
			return fmt.Errorf("run id=%s: %w", id, err)
		}
		return nil
	})
	return r, err
}

// runByClientIDQuery finds a run by its client's id; "client_run_id <> ”"
// lets the planner use the partial index runs_by_client_id.
const runByClientIDQuery = `SELECT ` + runSelect + ` FROM runs
	WHERE principal = ? AND client_run_id = ? AND client_run_id <> ''
	ORDER BY created DESC, rowid DESC LIMIT 1`

// RunByClientID returns the run principal's client created with
// clientRunID, the newest if it did so more than once; CodeNotFound if there
// is none.
func (s *Store) RunByClientID(ctx context.Context, principal, clientRunID string) (*bridge.Run, error) {
	if clientRunID == "" {
		return nil, bridge.Errorf(bridge.CodeNotFound, "run with empty client run id not found")
	}
	var r *bridge.Run
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, runByClientIDQuery, principal, clientRunID))
		if errors.Is(err, sql.ErrNoRows) {
			return bridge.Errorf(bridge.CodeNotFound, "run with client run id %q of principal %q not found", clientRunID, principal)
		}
		if err != nil {
			return fmt.Errorf("run principal=%s client_run_id=%s: %w", principal, clientRunID, err)
		}
		return nil
	})
	return r, err
}

// ListRuns returns the runs f selects, newest first.
func (s *Store) ListRuns(ctx context.Context, f bridge.RunFilter) ([]*bridge.Run, error) {
	var (
		where []string
		args  []any
	)
	if f.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, f.SessionID)
	}
	if f.Principal != "" {
		where, args = append(where, "principal = ?"), append(args, f.Principal)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Inbound != "" {
		where, args = append(where, "inbound = ?"), append(args, f.Inbound)
	}
	if f.Outbound != "" {
		where, args = append(where, "outbound = ?"), append(args, f.Outbound)
	}
	if f.Model != "" {
		where, args = append(where, "model = ?"), append(args, f.Model)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "created >= ?"), append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "created < ?"), append(args, f.Until.UnixNano())
	}
	if f.Before != "" {
		// The cursor run's place in the order (created DESC, rowid DESC);
		// the bound on created alone lets runs_by_created narrow the scan.
		where = append(where, `created <= (SELECT created FROM runs WHERE id = ?)
			AND (created, rowid) < (SELECT created, rowid FROM runs WHERE id = ?)`)
		args = append(args, f.Before, f.Before)
	}
	q := `SELECT ` + runSelect + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created DESC, rowid DESC LIMIT ?`
	args = append(args, limitArg(f.Limit))

	var runs []*bridge.Run
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list runs session=%s principal=%s status=%s: %w", f.SessionID, f.Principal, f.Status, err)
	}
	return runs, nil
}

// limitArg turns a limit where <= 0 means "all" into SQLite's LIMIT value.
func limitArg(n int) int64 {
	if n <= 0 {
		return -1
	}
	return int64(n)
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRun reads the runSelect of one row.
func scanRun(sc scanner) (*bridge.Run, error) {
	var (
		r                 bridge.Run
		status, stop      string
		usage, dropped    []byte
		created, finished int64
		render            string
		superseded        int64
		commit, firstByte int64
	)
	err := sc.Scan(&r.ID, &r.SessionID, &r.ClientRunID, &r.Principal, &r.Inbound, &r.Outbound, &r.Upstream, &r.Model,
		&status, &stop, &r.Reason, &usage, &dropped, &r.TraceID, &r.UpstreamRunID, &created, &finished, &r.LastSeq, &render, &superseded,
		&commit, &firstByte)
	if err != nil {
		return nil, err
	}
	r.Status, r.StopReason = bridge.Status(status), bridge.StopReason(stop)
	if len(usage) > 0 {
		if err := json.Unmarshal(usage, &r.Usage); err != nil {
			return nil, fmt.Errorf("run id=%s: usage: %w", r.ID, err)
		}
	}
	if len(dropped) > 0 {
		if err := json.Unmarshal(dropped, &r.Dropped); err != nil {
			return nil, fmt.Errorf("run id=%s: dropped: %w", r.ID, err)
		}
	}
	r.Created, r.Finished = fromUnixNano(created), fromUnixNano(finished)
	r.FirstCommit, r.FirstClientByte = fromUnixNano(commit), fromUnixNano(firstByte)
	r.Superseded = superseded != 0
	if render != "" {
		r.Render = json.RawMessage(render)
	}
	return &r, nil
}
