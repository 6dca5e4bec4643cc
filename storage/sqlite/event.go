package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// TraceID, UpstreamRunID and Finished, and FirstCommit and FirstClientByte
// where the row has none yet; its session, client run id,
// principal, inbound dialect and Created are fixed when it is created. A message takes the session of its RunID's run and gets the
// store's clock as Created when that is zero.
func (s *Store) Commit(ctx context.Context, b *bridge.Batch) error {
	if b == nil || len(b.Sessions) == 0 && len(b.NewRuns) == 0 && len(b.Events) == 0 && len(b.Runs) == 0 && len(b.Messages) == 0 && len(b.Timings) == 0 {
		return nil
	}
	return s.writeThen(ctx, func(tx *sql.Tx) error { return s.commit(ctx, tx, b) }, func() { s.committed(b) })
}

// committed notes the runs' last seqs once b is committed: a running run's
// new end, and an ended run no more.
func (s *Store) committed(b *bridge.Batch) {
	if len(s.runEnds) > 1<<16 {
		clear(s.runEnds) // a bound; the probes refill it
	}
	for _, e := range s.newEnds {
		s.runEnds[e.run] = max(s.runEnds[e.run], e.seq)
	}
	for _, r := range b.NewRuns {
		s.cacheSession(r.ID, sessionKey{r.Principal, r.SessionID})
	}
	s.tookSSeqs()
	for _, r := range b.Runs {
		if r.Status != bridge.StatusRunning {
			delete(s.runEnds, r.ID)
		}
	}
}

// commit is Commit's body. It runs under wsem, so it may use the scratch
// state of s.
func (s *Store) commit(ctx context.Context, tx *sql.Tx, b *bridge.Batch) error {
	// The transaction, begun with ctx, is rolled back when ctx ends; the
	// statements themselves run without it, since the driver spends a
	// goroutine per statement watching a cancellable context. ctx is checked
	// between chunks instead.
	sctx := context.WithoutCancel(ctx)
	s.beginSSeqs()
	for _, sess := range b.Sessions {
		if err := s.createSession(sctx, tx, sess); err != nil {
			return err
		}
		// New (its row did not exist), so no run of it has events yet:
		// its numbers start at 1 without a look (bridge.Batch.Sessions).
		s.takenSSeq[sessionKey{sess.Principal, sess.ID}] = 0
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
		if err := s.appendAll(ctx, sctx, tx, b.Events, b.NewRuns); err != nil {
			return err
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
	if len(b.Timings) > 0 {
		st := tx.StmtContext(ctx, s.setTiming)
		for _, t := range b.Timings {
			if _, err := st.ExecContext(sctx, unixNano(t.FirstCommit), unixNano(t.FirstClientByte), t.RunID); err != nil {
				return fmt.Errorf("set timing run=%s: %w", t.RunID, err)
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
	_, err := st.ExecContext(ctx, e.RunID, e.Seq, string(e.Kind), p, e.UpstreamID, unixNano(e.Time), e.SessionSeq)
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
// run id, seq, time and SessionSeq, which have columns of their own (Events sets them
// from those). A third of a delta's bytes, and the time's formatting. It
// uses the scratch state of s, so it must run under wsem.
func (s *Store) payloadOf(e *bridge.Event) *bridge.Event {
	s.payload = *e
	s.payload.RunID, s.payload.Seq, s.payload.Time, s.payload.SessionSeq = "", 0, time.Time{}, 0
	return &s.payload
}

// eventChunk is how many events one insertEvents statement writes.
const eventChunk = 16

// appendEvents inserts eventChunk events with the statement many; when
// that fails, it inserts them one by one with one, to say which failed.
func (s *Store) appendEvents(ctx context.Context, many, one *sql.Stmt, evs []*bridge.Event) error {
	s.buf.Reset()
	s.ends = s.ends[:0]
	for _, e := range evs {
		if err := s.enc.Encode(s.payloadOf(e)); err != nil {
			return fmt.Errorf("append event run=%s seq=%d: encode: %w", e.RunID, e.Seq, err)
		}
		s.ends = append(s.ends, s.buf.Len()-1)
	}
	p := s.buf.Bytes()
	args := s.args[:0]
	start := 0
	for i, e := range evs {
		args = append(args, e.RunID, e.Seq, string(e.Kind), p[start:s.ends[i]], e.UpstreamID, unixNano(e.Time), e.SessionSeq)
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
	for _, e := range evs {
		if err := s.appendEvent(ctx, one, e); err != nil {
			return err
		}
	}
	return fmt.Errorf("append events run=%s seq=%d..: %w", evs[0].RunID, evs[0].Seq, err)
}

// maxPack bounds the events of one pack row (so a read after a cursor
// decodes at most this many it skips).
const maxPack = 256

// packs reports whether an event of kind k may share a row: the deltas,
// which are most of a stream's events. The others keep a row each.
func packs(k bridge.Kind) bool {
	switch k {
	case bridge.KindTextDelta, bridge.KindReasoningDelta, bridge.KindToolCallDelta:
		return true
	}
	return false
}

// appendAll inserts evs: each run's consecutive deltas as pack rows, the
// other events a row each. It first checks, one query per run, that no
// event of evs is stored already (CodeConflict, naming the lowest such
// seq). It uses the scratch state of s, so it must run under wsem.
func (s *Store) appendAll(ctx, sctx context.Context, tx *sql.Tx, evs []bridge.Event, created []*bridge.Run) error {
	clear(s.byRun)
	s.runOrder = s.runOrder[:0]
	s.newEnds = s.newEnds[:0]
	s.created = s.created[:0]
	for _, r := range created {
		s.created = append(s.created, r.ID) // created by this batch: no stored events
	}
	for i := range evs {
		id := evs[i].RunID
		if _, ok := s.byRun[id]; !ok {
			s.runOrder = append(s.runOrder, id)
		}
		s.byRun[id] = append(s.byRun[id], &evs[i])
	}
	if err := s.number(ctx, sctx, tx, created); err != nil {
		return err
	}
	last := tx.StmtContext(ctx, s.lastEvent)
	s.singles = s.singles[:0]
	packSt := tx.StmtContext(ctx, s.insertPack)
	for _, id := range s.runOrder {
		run := s.byRun[id]
		if err := s.checkNew(sctx, last, run); err != nil {
			return err
		}
		for i := 0; i < len(run); {
			j := i + 1
			for j < len(run) && j-i < maxPack && packs(run[i].Kind) && packs(run[j].Kind) && run[j].Seq == run[j-1].Seq+1 {
				j++
			}
			if j-i == 1 {
				s.singles = append(s.singles, run[i])
			} else if err := s.appendPack(sctx, packSt, run[i:j]); err != nil {
				return err
			}
			i = j
		}
	}
	for _, run := range s.byRun {
		clear(run) // no pointers into evs outlive the commit
	}
	singles := s.singles
	defer func() { clear(s.singles); s.singles = s.singles[:0] }()
	one := tx.StmtContext(ctx, s.insertEvent)
	if len(singles) >= eventChunk {
		many := tx.StmtContext(ctx, s.insertEvents)
		for len(singles) >= eventChunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.appendEvents(sctx, many, one, singles[:eventChunk]); err != nil {
				return err
			}
			singles = singles[eventChunk:]
		}
	}
	for _, e := range singles {
		if err := s.appendEvent(sctx, one, e); err != nil {
			return err
		}
	}
	return nil
}

// number gives each run of the batch (s.runOrder, its events in s.byRun)
// the next SessionSeq of its session, on each of its events. It runs under
// wsem.
func (s *Store) number(ctx, sctx context.Context, tx *sql.Tx, created []*bridge.Run) error {
	for _, id := range s.runOrder {
		k, err := s.sessionKeyOf(sctx, tx, id, created)
		if err != nil {
			return err
		}
		var n int64
		if k.id != "" {
			if n, err = s.nextSessionSeq(ctx, sctx, tx, k); err != nil {
				return fmt.Errorf("number the events of run %s: %w", id, err)
			}
		}
		for _, e := range s.byRun[id] {
			e.SessionSeq = n
		}
	}
	return nil
}

// A session's numbers are counted in memory, not in a row a commit
// updates: that row (an upsert on every commit) doubled a small commit's
// time, and the first content of every stream waits for one (measured
// paired with bridgeload, the bridge added 0.3-0.4 ms more to the first
// byte). The last number of a session is the highest sseq of its runs'
// events, or session_seqs' where retention deleted the events that held
// it (DeleteEventsBefore keeps it there first), so numbers never repeat.
// The counts stay valid while only this connection writes the file: a
// commit of another process (PRAGMA data_version) forgets them, and the
// next commit of a session reads its last number again.

// lastSSeqSQL is the last number of the session (?1 principal, ?2 id):
// a seek of session_seqs, of runs_by_session and of each of its runs'
// last events row (a run's rows have their sseq in seq order). (Written as max(a, b) of two scalar subqueries it
// took SQLite ten times as long.)
const lastSSeqSQL = `SELECT coalesce(max(n), 0) FROM (
	SELECT last_seq AS n FROM session_seqs WHERE principal = ?1 AND session_id = ?2
	UNION ALL
	SELECT (SELECT sseq FROM events WHERE run_id = r.id ORDER BY seq DESC LIMIT 1)
		FROM runs r WHERE r.session_id = ?2 AND r.principal = ?1)`

// nextSessionSeq takes the next number of session k for the commit in
// progress (tookSSeqs keeps it once the commit is done). It runs under
// wsem.
func (s *Store) nextSessionSeq(ctx, sctx context.Context, tx *sql.Tx, k sessionKey) (int64, error) {
	n, ok := s.takenSSeq[k]
	if !ok {
		if !s.sseqChecked {
			// Once a transaction that reads the counts: has another
			// connection written since?
			var v int64
			if err := tx.StmtContext(ctx, s.dataVersion).QueryRowContext(sctx).Scan(&v); err != nil {
				return 0, fmt.Errorf("data version: %w", err)
			}
			if v != s.version {
				clear(s.lastSSeq)
				s.version = v
			}
			s.sseqChecked = true
		}
		if n, ok = s.lastSSeq[k]; !ok {
			if err := tx.StmtContext(ctx, s.lastSSeqSt).QueryRowContext(sctx, k.principal, k.id).Scan(&n); err != nil {
				return 0, err
			}
		}
	}
	n++
	s.takenSSeq[k] = n
	return n, nil
}

// beginSSeqs readies a write transaction to take numbers (under wsem):
// none taken yet, another connection's writes not yet looked for.
func (s *Store) beginSSeqs() {
	clear(s.takenSSeq)
	s.sseqChecked = false
}

// tookSSeqs keeps the numbers the commit just done took (under wsem).
func (s *Store) tookSSeqs() {
	if len(s.lastSSeq)+len(s.takenSSeq) > 1<<16 {
		clear(s.lastSSeq) // a bound; the sessions' rows give them again
	}
	for k, n := range s.takenSSeq {
		s.lastSSeq[k] = n
	}
	s.beginSSeqs()
}

// sessionKeyOf is run's session; a run of no session has none. An unknown
// run has none either (its events then fail the batch with CodeNotFound).
func (s *Store) sessionKeyOf(ctx context.Context, tx *sql.Tx, run string, created []*bridge.Run) (sessionKey, error) {
	if k, ok := s.sessionOf[run]; ok {
		return k, nil
	}
	for _, r := range created {
		if r.ID == run {
			return sessionKey{r.Principal, r.SessionID}, nil
		}
	}
	var k sessionKey
	err := tx.QueryRowContext(ctx, `SELECT principal, session_id FROM runs WHERE id = ?`, run).Scan(&k.principal, &k.id)
	if errors.Is(err, sql.ErrNoRows) {
		return sessionKey{}, nil
	}
	if err != nil {
		return sessionKey{}, fmt.Errorf("append events run=%s: %w", run, err)
	}
	s.cacheSession(run, k)
	return k, nil
}

// cacheSession notes run's session (never changed once the run exists).
func (s *Store) cacheSession(run string, k sessionKey) {
	if len(s.sessionOf) > 1<<16 {
		clear(s.sessionOf) // a bound; lookups refill it
	}
	s.sessionOf[run] = k
}

// checkNew fails with CodeConflict when an event of run (one run's events,
// in batch order) is stored already or twice in run.
func (s *Store) checkNew(ctx context.Context, last *sql.Stmt, run []*bridge.Event) error {
	lo, hi := run[0].Seq, run[0].Seq
	for _, e := range run[1:] {
		lo, hi = min(lo, e.Seq), max(hi, e.Seq)
	}
	s.newEnds = append(s.newEnds, runEnd{run[0].RunID, hi})
	end, known := s.runEnds[run[0].RunID]
	if !known && slices.Contains(s.created, run[0].RunID) {
		end, known = 0, true
	}
	stretch := int(hi-lo)+1 == len(run) && ascending(run) // lo, lo+1, ... hi
	if known && lo > end && stretch {
		return nil // it goes on where the run's events end
	}
	conflict := func(seq int64) error {
		return bridge.Errorf(bridge.CodeConflict, "append event run=%s seq=%d: already committed", run[0].RunID, seq)
	}
	if !stretch {
		// Not one ascending stretch: look for a seq given twice.
		seqs := make([]int64, len(run))
		for i, e := range run {
			seqs[i] = e.Seq
		}
		slices.Sort(seqs)
		for i := 1; i < len(seqs); i++ {
			if seqs[i] == seqs[i-1] {
				return conflict(seqs[i])
			}
		}
	}
	// The stored rows that reach into [lo, hi], newest first: in the
	// common case (the batch goes on where the run's events end) the first
	// row the probe finds ends before lo, and that is all.
	upTo := hi
	var found int64 = -1
	for {
		var seq, end int64
		err := last.QueryRowContext(ctx, run[0].RunID, upTo).Scan(&seq, &end)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return fmt.Errorf("append event run=%s: %w", run[0].RunID, err)
		}
		if end < lo {
			break
		}
		for _, e := range run {
			if e.Seq >= seq && e.Seq <= end && (found < 0 || e.Seq < found) {
				found = e.Seq
			}
		}
		if seq <= lo {
			break
		}
		upTo = seq - 1
	}
	if found >= 0 {
		return conflict(found)
	}
	return nil
}

func ascending(run []*bridge.Event) bool {
	for i := 1; i < len(run); i++ {
		if run[i].Seq <= run[i-1].Seq {
			return false
		}
	}
	return true
}

// appendPack inserts run (consecutive deltas of one run) as one pack row.
// Its payload is packVersion, the first event's time, and then each event
// (its payload, or only its text for a plain text delta: see plainText)
// with the time since the one before, in nanoseconds (the first one's, 0).
func (s *Store) appendPack(ctx context.Context, st *sql.Stmt, run []*bridge.Event) error {
	first, last := run[0], run[len(run)-1]
	s.buf.Reset()
	s.buf.WriteString(`[` + packVersion + `,`)
	prev := unixNano(first.Time)
	s.buf.Write(strconv.AppendInt(s.num[:0], prev, 10))
	for _, e := range run {
		t := unixNano(e.Time)
		s.buf.WriteByte(',')
		s.buf.Write(strconv.AppendInt(s.num[:0], t-prev, 10))
		s.buf.WriteByte(',')
		prev = t
		p := s.payloadOf(e)
		var v any = p
		if plainText(p) {
			v = p.Text
		}
		if err := s.enc.Encode(v); err != nil {
			return fmt.Errorf("append event run=%s seq=%d: encode: %w", e.RunID, e.Seq, err)
		}
		s.buf.Truncate(s.buf.Len() - 1) // Encode's newline
	}
	s.buf.WriteByte(']')
	_, err := st.ExecContext(ctx, first.RunID, first.Seq, s.buf.Bytes(), unixNano(first.Time), last.Seq, first.SessionSeq)
	if err != nil {
		switch constraint(err) {
		case sqlite3.ErrConstraintPrimaryKey, sqlite3.ErrConstraintUnique:
			return bridge.Errorf(bridge.CodeConflict, "append event run=%s seq=%d: already committed", first.RunID, first.Seq)
		case sqlite3.ErrConstraintForeignKey:
			return bridge.Errorf(bridge.CodeNotFound, "append event run=%s seq=%d: run not found", first.RunID, first.Seq)
		}
		return fmt.Errorf("append events run=%s seq=%d..%d: %w", first.RunID, first.Seq, last.Seq, err)
	}
	return nil
}

// packVersion opens the payload of the pack rows written now (two items
// more than twice its events). Rows of the first format, each event's
// absolute time and then its whole payload (two items an event), are read
// as they are.
const packVersion = "2"

// plainText reports whether a pack may hold p (an event's payload: no run
// id, seq or time) as its text alone: a model's text delta with nothing
// else set. TestPlainText holds it to every field of bridge.Event.
func plainText(p *bridge.Event) bool {
	return p.Kind == bridge.KindTextDelta && p.Source == bridge.SourceModel && p.Index == 0 && !p.Refusal &&
		p.Signature == "" && p.Encrypted == "" && p.ToolCall == nil && p.ToolResult == nil && p.Artifact == nil &&
		p.Message == nil && p.State == nil && p.Usage == nil && p.Error == nil && p.Final == nil && p.Opaque == nil &&
		p.ResponseID == "" && p.Model == "" && p.UpstreamID == ""
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
		r.TraceID, r.UpstreamRunID, unixNano(r.Finished), unixNano(r.FirstCommit), unixNano(r.FirstClientByte), r.LastSeq, r.ID)
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
		// From the row that holds seq after+1 (a pack may begin before it).
		rows, err := tx.QueryContext(ctx, `SELECT run_id, seq, last, time, sseq, payload FROM events
			WHERE run_id = ?1 AND seq >= coalesce((SELECT seq FROM events
				WHERE run_id = ?1 AND seq <= ?2 ORDER BY seq DESC LIMIT 1), 0)
			ORDER BY seq`, run, after+1)
		if err != nil {
			return err
		}
		evs, err = scanEvents(rows, evs, func(string, int64) int64 { return after }, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("events run=%s after=%d: %w", run, after, err)
	}
	return evs, nil
}

// scanEvents appends to evs the events of rows (run_id, seq, last, time,
// sseq, payload, in the order to give them) after the seq after gives for
// a row's run and sseq, up to limit in all, and closes rows.
func scanEvents(rows *sql.Rows, evs []bridge.Event, after func(run string, sseq int64) int64, limit int) ([]bridge.Event, error) {
	defer rows.Close()
	for rows.Next() && (limit <= 0 || len(evs) < limit) {
		var (
			run                string
			seq, last, t, sseq int64
			payload            sql.RawBytes
		)
		if err := rows.Scan(&run, &seq, &last, &t, &sseq, &payload); err != nil {
			return evs, err
		}
		from := after(run, sseq)
		if last > seq {
			n := len(evs)
			var err error
			if evs, err = unpack(evs, run, seq, last, payload, from, limit); err != nil {
				return evs, err
			}
			for i := n; i < len(evs); i++ {
				evs[i].SessionSeq = sseq
			}
			continue
		}
		if seq <= from {
			continue
		}
		evs = append(evs, bridge.Event{})
		e := &evs[len(evs)-1]
		if err := json.Unmarshal(payload, e); err != nil {
			return evs, fmt.Errorf("decode seq=%d: %w", seq, err)
		}
		e.RunID, e.Seq, e.Time, e.SessionSeq = run, seq, fromUnixNano(t), sseq
	}
	return evs, rows.Err()
}

// SessionEvents returns the events of principal's runs of session after
// the position after, in commit order (SessionSeq, then seq), up to limit
// (<= 0: all). Each run's events after the position are read in the
// order of its key (run_id, seq: sseq is in order there too), from the
// row firstRowAfter finds, only as far as the page needs, and the runs'
// are merged: a page costs a few seeks per run of the session and at most
// limit events per run, however far behind the position is. (One query ordering the join of the session's
// runs and events sorted every event after the position for each page:
// a channel reading a long run from its start took time quadratic in the
// run's length.)
func (s *Store) SessionEvents(ctx context.Context, principal, session string, after bridge.SessionPos, limit int) ([]bridge.Event, error) {
	var evs []bridge.Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		if session == "" {
			return nil
		}
		// The session's runs; firstRowAfter's first seek, of a run's last
		// row, skips those with nothing after the position.
		rows, err := tx.QueryContext(ctx, `SELECT r.id FROM runs r
			WHERE r.session_id = ?1 AND r.principal = ?2`, session, principal)
		if err != nil {
			return err
		}
		var runs []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			runs = append(runs, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		from := func(_ string, sseq int64) int64 {
			if sseq == after.SessionSeq {
				return after.Seq
			}
			return 0
		}
		for _, run := range runs {
			first, ok, err := firstRowAfter(ctx, tx, run, after)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			rows, err := tx.QueryContext(ctx, `SELECT run_id, seq, last, time, sseq, payload FROM events
				WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq`, run, first)
			if err != nil {
				return err
			}
			upTo := 0 // all
			if limit > 0 {
				upTo = len(evs) + limit
			}
			if evs, err = scanEvents(rows, evs, from, upTo); err != nil {
				return err
			}
		}
		slices.SortFunc(evs, func(a, b bridge.Event) int {
			if c := cmp.Compare(a.SessionSeq, b.SessionSeq); c != 0 {
				return c
			}
			return cmp.Compare(a.Seq, b.Seq)
		})
		if limit > 0 && len(evs) > limit {
			evs = evs[:limit]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session events session=%s after=%d/%d: %w", session, after.SessionSeq, after.Seq, err)
	}
	return evs, nil
}

// firstRowAfter is the seq of run's first events row that holds an event
// after the session position after ((sseq, seq) > (after.SessionSeq,
// after.Seq)), and false when no row does. A run's rows in seq order have
// their sseq in order too (each commit takes a higher number), so the
// rows that hold such an event are the last ones of the run: a binary
// search over seq finds the first of them, each probe one seek of the
// events key (a run of a million events: about 20). An index of sseq
// would find it in one, but cost every commit an entry a row.
func firstRowAfter(ctx context.Context, tx *sql.Tx, run string, after bridge.SessionPos) (int64, bool, error) {
	// probe reads the row query gives and says whether it holds an event
	// after the position.
	probe := func(query string, args ...any) (seq int64, holds, ok bool, err error) {
		var last, sseq int64
		err = tx.QueryRowContext(ctx, query, args...).Scan(&seq, &last, &sseq)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, false, nil
		}
		if err != nil {
			return 0, false, false, fmt.Errorf("seek run=%s: %w", run, err)
		}
		return seq, sseq > after.SessionSeq || sseq == after.SessionSeq && max(seq, last) > after.Seq, true, nil
	}
	ans, holds, ok, err := probe(`SELECT seq, last, sseq FROM events WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1`, run)
	if err != nil || !ok || !holds {
		return 0, false, err
	}
	// The row at ans holds one; no row before lo does.
	lo, hi := int64(0), ans-1
	for lo <= hi {
		mid := lo + (hi-lo)/2
		// The first row from mid on: there is one, at ans at the latest.
		seq, holds, ok, err := probe(`SELECT seq, last, sseq FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT 1`, run, mid)
		switch {
		case err != nil:
			return 0, false, err
		case !ok:
			return 0, false, fmt.Errorf("seek run=%s: no row from seq %d on, below %d", run, mid, ans)
		case holds:
			ans, hi = seq, mid-1
		default:
			lo = seq + 1
		}
	}
	return ans, true, nil
}

// SessionSeq is the number of the session's last commit.
func (s *Store) SessionSeq(ctx context.Context, principal, session string) (int64, error) {
	var n int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, lastSSeqSQL, principal, session).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("session seq session=%s: %w", session, err)
	}
	return n, nil
}

// unpack appends the events of a pack row (seqs first through last) with
// seq > after to evs, up to limit in all.
func unpack(evs []bridge.Event, run string, first, last int64, payload []byte, after int64, limit int) ([]bridge.Event, error) {
	var items []json.RawMessage
	err := json.Unmarshal(payload, &items)
	n := last - first + 1
	if err != nil || int64(len(items)) != 2*n && int64(len(items)) != 2*n+2 {
		return evs, fmt.Errorf("decode pack seq=%d..%d: not %d events (%v)", first, last, n, err)
	}
	// The first rows: an absolute time before each event. Since
	// packVersion: the first time, then each event after its delta.
	deltas := int64(len(items)) == 2*n+2
	var t int64
	if deltas {
		if string(items[0]) != packVersion {
			return evs, fmt.Errorf("decode pack seq=%d..%d: version %s", first, last, items[0])
		}
		if t, err = strconv.ParseInt(string(items[1]), 10, 64); err != nil {
			return evs, fmt.Errorf("decode pack seq=%d..%d: time: %w", first, last, err)
		}
		items = items[2:]
	}
	for i := 0; i < len(items) && (limit <= 0 || len(evs) < limit); i += 2 {
		seq := first + int64(i/2)
		d, err := strconv.ParseInt(string(items[i]), 10, 64)
		if err != nil {
			return evs, fmt.Errorf("decode seq=%d: time: %w", seq, err)
		}
		if deltas {
			t += d
		} else {
			t = d
		}
		if seq <= after {
			continue
		}
		evs = append(evs, bridge.Event{})
		e := &evs[len(evs)-1]
		if p := items[i+1]; len(p) > 0 && p[0] == '"' {
			e.Kind, e.Source = bridge.KindTextDelta, bridge.SourceModel
			err = json.Unmarshal(p, &e.Text)
		} else {
			err = json.Unmarshal(p, e)
		}
		if err != nil {
			return evs, fmt.Errorf("decode seq=%d: %w", seq, err)
		}
		e.RunID, e.Seq, e.Time = run, seq, fromUnixNano(t)
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
	err := s.writeThen(ctx, func(tx *sql.Tx) error {
		var err error
		s.beginSSeqs()
		ids, err = s.interruptRunning(ctx, tx, reason, now, keep)
		return err
	}, func() {
		for _, id := range ids {
			delete(s.runEnds, id)
		}
		s.tookSSeqs()
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
		session sessionKey
	}
	var runs []open
	rows, err := tx.QueryContext(ctx, `SELECT r.id, max(r.last_seq, coalesce((SELECT max(seq, last) FROM events WHERE run_id = r.id ORDER BY seq DESC LIMIT 1), 0)),
		r.principal, r.session_id
		FROM runs r WHERE r.status = ? ORDER BY r.created, r.rowid`, string(bridge.StatusRunning))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var o open
		if err := rows.Scan(&o.id, &o.lastSeq, &o.session.principal, &o.session.id); err != nil {
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
		var sseq int64
		if o.session.id != "" {
			if sseq, err = s.nextSessionSeq(ctx, ctx, tx, o.session); err != nil {
				return nil, fmt.Errorf("number the final event of run %s: %w", o.id, err)
			}
		}
		e := bridge.Event{
			SessionSeq: sseq,
			RunID:      o.id,
			Seq:        o.lastSeq + 1,
			Time:       now,
			Kind:       bridge.KindFinal,
			Source:     bridge.SourceBridge,
			Final:      &bridge.Final{Status: bridge.StatusInterrupted, Reason: reason},
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

// DeleteEventsBefore deletes the events (and the recordings) of every run
// that ended (Finished is set) before t and is not running, and returns
// how many events it deleted.
func (s *Store) DeleteEventsBefore(ctx context.Context, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		const ended = `run_id IN (SELECT id FROM runs WHERE finished <> 0 AND finished < ? AND status <> ?)`
		// A pack row holds last-seq+1 events.
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(CASE WHEN last > seq THEN last - seq + 1 ELSE 1 END), 0)
			FROM events WHERE `+ended, t.UnixNano(), string(bridge.StatusRunning)).Scan(&n); err != nil {
			return err
		}
		// A session's last number may be in the events going: session_seqs
		// keeps it (lastSSeqSQL), so the session's next commit does not
		// take it again.
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_seqs (principal, session_id, last_seq)
			SELECT r.principal, r.session_id, max(e.sseq) FROM runs r JOIN events e ON e.run_id = r.id
			WHERE r.session_id <> '' AND r.finished <> 0 AND r.finished < ? AND r.status <> ?
			GROUP BY r.principal, r.session_id
			ON CONFLICT (principal, session_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)`,
			t.UnixNano(), string(bridge.StatusRunning)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE `+ended, t.UnixNano(), string(bridge.StatusRunning)); err != nil {
			return err
		}
		// The inspector's recordings of those runs go with their events.
		_, err := tx.ExecContext(ctx, `DELETE FROM recordings WHERE `+ended, t.UnixNano(), string(bridge.StatusRunning))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete events before %s: %w", t.UTC().Format(time.RFC3339Nano), err)
	}
	return n, nil
}
