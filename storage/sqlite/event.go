package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/bridge-dev/bridge/bridge"
)

// Commit writes b atomically: its new sessions and runs, its events, the
// changes of its runs and its messages, or nothing. An event whose (RunID, Seq) is already stored fails
// the batch with CodeConflict; an event, run or message of a run that does
// not exist fails it with CodeNotFound.
//
// A running run's LastSeq is the highest seq the store holds for it; the
// update that ends a run writes its LastSeq. For a
// run in b.Runs, Commit writes Outbound, Upstream, Model (a continued run
// may go to another upstream), Status, StopReason, Reason, Usage, Dropped,
// TraceID, UpstreamRunID and Finished; its session, client run id,
// principal, inbound dialect and Created are fixed when it is created. A message takes the session of its RunID's run and gets the
// store's clock as Created when that is zero.
func (s *Store) Commit(ctx context.Context, b *bridge.Batch) error {
	if b == nil || len(b.Sessions) == 0 && len(b.NewRuns) == 0 && len(b.Events) == 0 && len(b.Runs) == 0 && len(b.Messages) == 0 {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.commit(ctx, tx, b) })
}

// commit is Commit's body. It runs under wsem, so it may use the scratch
// state of s.
func (s *Store) commit(ctx context.Context, tx *sql.Tx, b *bridge.Batch) error {
	// The transaction, begun with ctx, is rolled back when ctx ends; the
	// statements themselves run without it, since the driver spends a
	// goroutine per statement watching a cancellable context. ctx is checked
	// between chunks instead.
	sctx := context.WithoutCancel(ctx)
	for _, sess := range b.Sessions {
		if err := s.createSession(sctx, tx, sess); err != nil {
			return err
		}
	}
	for _, r := range b.NewRuns {
		if r.Created.IsZero() {
			r.Created = s.now()
		}
		if err := s.createRun(sctx, tx, r); err != nil {
			return err
		}
	}
	if len(b.Events) > 0 {
		st := tx.StmtContext(ctx, s.insertEvent)
		evs := b.Events
		if len(evs) >= eventChunk {
			many := tx.StmtContext(ctx, s.insertEvents)
			for len(evs) >= eventChunk {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := s.appendEvents(sctx, many, st, evs[:eventChunk]); err != nil {
					return err
				}
				evs = evs[eventChunk:]
			}
		}
		for i := range evs {
			if err := s.appendEvent(sctx, st, &evs[i]); err != nil {
				return err
			}
		}
	}
	if len(b.Runs) > 0 {
		st := tx.StmtContext(ctx, s.updateRun)
		for _, r := range b.Runs {
			if err := updateRun(sctx, st, r); err != nil {
				return err
			}
		}
	}
	// A run's row is not touched for its events (one page less per commit):
	// while it runs, its last seq is read from its events (runSelect); the
	// update that ends it writes it.
	if len(b.Messages) > 0 {
		st := tx.StmtContext(ctx, s.insertMessage)
		now := s.now()
		for i := range b.Messages {
			if err := insertMessage(sctx, st, b.Messages[i].RunID, &b.Messages[i], now); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendEvent inserts e with the insertEvent statement st. It encodes e into
// s.buf, so it must run under wsem.
func (s *Store) appendEvent(ctx context.Context, st *sql.Stmt, e *bridge.Event) error {
	s.buf.Reset()
	if err := s.enc.Encode(s.payloadOf(e)); err != nil {
		return fmt.Errorf("append event run=%s seq=%d: encode: %w", e.RunID, e.Seq, err)
	}
	p := s.buf.Bytes()
	p = p[:len(p)-1] // Encode's newline
	_, err := st.ExecContext(ctx, e.RunID, e.Seq, string(e.Kind), p, e.UpstreamID, unixNano(e.Time))
	if err != nil {
		switch constraint(err) {
		case sqlite3.ErrConstraintPrimaryKey, sqlite3.ErrConstraintUnique:
			return bridge.Errorf(bridge.CodeConflict, "append event run=%s seq=%d: already committed", e.RunID, e.Seq)
		case sqlite3.ErrConstraintForeignKey:
			return bridge.Errorf(bridge.CodeNotFound, "append event run=%s seq=%d: run not found", e.RunID, e.Seq)
		}
		return fmt.Errorf("append event run=%s seq=%d: %w", e.RunID, e.Seq, err)
	}
	return nil
}

// payloadOf is what an event's payload column holds: the event without its
// run id, seq and time, which have columns of their own (Events sets them
// from those). A third of a delta's bytes, and the time's formatting. It
// uses the scratch state of s, so it must run under wsem.
func (s *Store) payloadOf(e *bridge.Event) *bridge.Event {
	s.payload = *e
	s.payload.RunID, s.payload.Seq, s.payload.Time = "", 0, time.Time{}
	return &s.payload
}

// eventChunk is how many events one insertEvents statement writes.
const eventChunk = 16

// appendEvents inserts eventChunk events with the statement many; when
// that fails, it inserts them one by one with one, to say which failed.
func (s *Store) appendEvents(ctx context.Context, many, one *sql.Stmt, evs []bridge.Event) error {
	s.buf.Reset()
	s.ends = s.ends[:0]
	for i := range evs {
		if err := s.enc.Encode(s.payloadOf(&evs[i])); err != nil {
			return fmt.Errorf("append event run=%s seq=%d: encode: %w", evs[i].RunID, evs[i].Seq, err)
		}
		s.ends = append(s.ends, s.buf.Len()-1)
	}
	p := s.buf.Bytes()
	args := s.args[:0]
	start := 0
	for i := range evs {
		e := &evs[i]
		args = append(args, e.RunID, e.Seq, string(e.Kind), p[start:s.ends[i]], e.UpstreamID, unixNano(e.Time))
		start = s.ends[i] + 1
	}
	_, err := many.ExecContext(ctx, args...)
	clear(args)
	s.args = args[:0]
	if err == nil {
		return nil
	}
	if constraint(err) == 0 {
		return fmt.Errorf("append events run=%s seq=%d..: %w", evs[0].RunID, evs[0].Seq, err)
	}
	for i := range evs {
		if err := s.appendEvent(ctx, one, &evs[i]); err != nil {
			return err
		}
	}
	return fmt.Errorf("append events run=%s seq=%d..: %w", evs[0].RunID, evs[0].Seq, err)
}

// updateRun writes the mutable fields of r with the updateRun statement st.
func updateRun(ctx context.Context, st *sql.Stmt, r *bridge.Run) error {
	usage, err := json.Marshal(&r.Usage)
	if err != nil {
		return fmt.Errorf("update run id=%s: usage: %w", r.ID, err)
	}
	dropped, err := marshalList(r.Dropped)
	if err != nil {
		return fmt.Errorf("update run id=%s: dropped: %w", r.ID, err)
	}
	res, err := st.ExecContext(ctx, r.Outbound, r.Upstream, r.Model, string(r.Status), string(r.StopReason), r.Reason, usage, dropped,
		r.TraceID, r.UpstreamRunID, unixNano(r.Finished), r.LastSeq, r.ID)
	if err != nil {
		return fmt.Errorf("update run id=%s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update run id=%s: %w", r.ID, err)
	} else if n == 0 {
		return bridge.Errorf(bridge.CodeNotFound, "update run: run %q not found", r.ID)
	}
	return nil
}

// Events returns up to limit events of run with seq > after, in seq order;
// limit <= 0 means all. A run without such events, or no run at all, gives
// none and no error.
func (s *Store) Events(ctx context.Context, run string, after int64, limit int) ([]bridge.Event, error) {
	var evs []bridge.Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, time, payload FROM events
			WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, run, after, limitArg(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				seq, t  int64
				payload sql.RawBytes
			)
			if err := rows.Scan(&seq, &t, &payload); err != nil {
				return err
			}
			evs = append(evs, bridge.Event{})
			e := &evs[len(evs)-1]
			if err := json.Unmarshal(payload, e); err != nil {
				return fmt.Errorf("decode seq=%d: %w", seq, err)
			}
			e.RunID, e.Seq, e.Time = run, seq, fromUnixNano(t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("events run=%s after=%d: %w", run, after, err)
	}
	return evs, nil
}

// InterruptRunning ends every run whose status is running as interrupted
// with reason at now: it appends the run's final event (seq one past the
// last stored) and records the status, reason and finish time, all in one
// transaction. It returns the ids of the runs it ended, oldest first.
// The runs named in keep (resumed upstream) are left running.
func (s *Store) InterruptRunning(ctx context.Context, reason string, now time.Time, keep ...string) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		ids, err = s.interruptRunning(ctx, tx, reason, now, keep)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("interrupt running runs: %w", err)
	}
	return ids, nil
}

func (s *Store) interruptRunning(ctx context.Context, tx *sql.Tx, reason string, now time.Time, keep []string) ([]string, error) {
	type open struct {
		id      string
		lastSeq int64
	}
	var runs []open
	rows, err := tx.QueryContext(ctx, `SELECT r.id, max(r.last_seq, coalesce((SELECT max(seq) FROM events WHERE run_id = r.id), 0))
		FROM runs r WHERE r.status = ? ORDER BY r.created, r.rowid`, string(bridge.StatusRunning))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var o open
		if err := rows.Scan(&o.id, &o.lastSeq); err != nil {
			rows.Close()
			return nil, err
		}
		if slices.Contains(keep, o.id) {
			continue // resumed upstream: this process goes on with it
		}
		runs = append(runs, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	ins := tx.StmtContext(ctx, s.insertEvent)
	ids := make([]string, 0, len(runs))
	for _, o := range runs {
		e := bridge.Event{
			RunID:  o.id,
			Seq:    o.lastSeq + 1,
			Time:   now,
			Kind:   bridge.KindFinal,
			Source: bridge.SourceBridge,
			Final:  &bridge.Final{Status: bridge.StatusInterrupted, Reason: reason},
		}
		if err := s.appendEvent(ctx, ins, &e); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, reason = ?, finished = ?, last_seq = ? WHERE id = ?`,
			string(bridge.StatusInterrupted), reason, unixNano(now), e.Seq, o.id); err != nil {
			return nil, fmt.Errorf("update run id=%s: %w", o.id, err)
		}
		ids = append(ids, o.id)
	}
	return ids, nil
}

// DeleteEventsBefore deletes the events of every run that ended (Finished is
// set) before t and is not running, and returns how many it deleted.
func (s *Store) DeleteEventsBefore(ctx context.Context, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE run_id IN
			(SELECT id FROM runs WHERE finished <> 0 AND finished < ? AND status <> ?)`,
			t.UnixNano(), string(bridge.StatusRunning))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete events before %s: %w", t.UTC().Format(time.RFC3339Nano), err)
	}
	return n, nil
}
