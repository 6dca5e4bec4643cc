package postgres

// A session's events in commit order: each commit numbers the events it
// writes for one run with the next number of the run's session
// (Event.SessionSeq, assigned by eventsSQL), in session_seqs, whose row
// lock orders the commits of one session; the first event of each run's
// commit is marked (events.opens) and indexed, so a session's events are
// found from a number on with one index entry a commit, not one an event.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
)

// SessionEvents returns the events of principal's runs of session after
// the position after, in commit order (SessionSeq, then seq).
func (s *Store) SessionEvents(ctx context.Context, principal, session string, after bridge.SessionPos, limit int) ([]bridge.Event, error) {
	lim := int64(math.MaxInt64)
	if limit > 0 {
		lim = int64(limit)
	}
	// Each run's first events after the position, then the first of
	// those: a run's events from the first that opens one of its commits
	// numbered after.SessionSeq or later (the index events_openers, one
	// entry a commit), in seq order, which is its commit order (one writer
	// appends a run's events at a time, each commit after the seqs before
	// it), as far as the page needs. Ordering the whole join sorted every
	// event after the position for each page, so a channel reading a long
	// run from behind took quadratic time.
	rows, err := s.db().Query(ctx, `SELECT x.run_id, x.seq, x.sseq, x.payload, x.time
		FROM runs r
		CROSS JOIN LATERAL (SELECT o.seq FROM events o WHERE o.run_id = r.id AND o.opens AND o.sseq >= $3
			ORDER BY o.sseq, o.seq LIMIT 1) f
		CROSS JOIN LATERAL (
			SELECT e.run_id, e.seq, e.sseq, e.payload, e.time FROM events e
			WHERE e.run_id = r.id AND e.seq >= f.seq AND (e.sseq > $3 OR e.sseq = $3 AND e.seq > $4)
			ORDER BY e.seq LIMIT $5) x
		WHERE r.session_id = $1 AND r.principal = $2 AND $1 <> ''
		ORDER BY x.sseq, x.seq LIMIT $5`, session, principal, after.SessionSeq, after.Seq, lim)
	if err != nil {
		return nil, fmt.Errorf("session events session=%s: %w", session, err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("session events session=%s: %w", session, err)
	}
	return evs, nil
}

// scanEvents reads rows of (run_id, seq, sseq, payload, time).
func scanEvents(rows pgx.Rows) ([]bridge.Event, error) {
	defer rows.Close()
	var evs []bridge.Event
	for rows.Next() {
		var (
			run          string
			seq, sseq, t int64
			payload      []byte
		)
		if err := rows.Scan(&run, &seq, &sseq, &payload, &t); err != nil {
			return nil, err
		}
		var e bridge.Event
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, fmt.Errorf("run=%s seq=%d: decode: %w", run, seq, err)
		}
		e.RunID, e.Seq, e.SessionSeq, e.Time = run, seq, sseq, fromUnixNano(t)
		evs = append(evs, e)
	}
	return evs, rows.Err()
}

// SessionSeq is the number of the session's last commit.
func (s *Store) SessionSeq(ctx context.Context, principal, session string) (int64, error) {
	var n int64
	err := s.db().QueryRow(ctx, `SELECT last_seq FROM session_seqs WHERE principal = $1 AND session_id = $2`, principal, session).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("session seq session=%s: %w", session, err)
	}
	return n, nil
}
