// Package memory is a bridge.Store held in the process's memory: the same
// behaviour as storage/sqlite (it passes the same conformance suite,
// bridgetest.TestStore), nothing on disk. It is for tests that exercise
// handlers or the engine and have no use for the file, and for a bridge
// that keeps nothing across restarts.
//
// Every value is copied in and out (through its JSON form, as a store that
// serializes would), so no caller shares memory with the store.
package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

var (
	_ bridge.Store          = (*Store)(nil)
	_ bridge.ResponseStore  = (*Store)(nil)
	_ bridge.RecordingStore = (*Store)(nil)
)

// Store is a bridge.Store in memory. It is safe for concurrent use; every
// method is atomic, and a Commit is seen whole or not at all.
type Store struct {
	now func() time.Time

	mu       sync.RWMutex
	closed   bool
	sessions map[sessionKey]*bridge.Session
	runs     map[string]*runRow
	order    int64 // creation order of runs, for ListRuns' ties
	events   map[string][]bridge.Event
	messages []message // in position order (position = index + 1)
	ids      map[idKey]string
	resps    map[respKey]*bridge.StoredResponse
	recs     map[string][]bridge.Recording // by run, oldest first
	seqs     map[sessionKey]int64          // the last SessionSeq of each session
}

type runRow struct {
	run   bridge.Run
	order int64
}

// sessionKey names a session: its principal and its id together.
type sessionKey struct{ principal, id string }

func keyOf(s *bridge.Session) sessionKey { return sessionKey{s.Principal, s.ID} }

type message struct {
	session    sessionKey
	msg        bridge.Message
	superseded bool // its run was superseded (Store.Supersede)
}

type idKey struct {
	kind         bridge.IDKind
	scope, local string
}

// New returns an empty store. now is the clock for the times the store fills
// in itself (a zero Created); nil means time.Now.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:      now,
		sessions: make(map[sessionKey]*bridge.Session),
		runs:     make(map[string]*runRow),
		events:   make(map[string][]bridge.Event),
		ids:      make(map[idKey]string),
		resps:    make(map[respKey]*bridge.StoredResponse),
		recs:     make(map[string][]bridge.Recording),
		seqs:     make(map[sessionKey]int64),
	}
}

// clone copies v through its JSON form, with its times in UTC as a store
// that keeps them as instants gives them back.
func clone[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("memory: copy %T: %v", v, err)) // the hub's types always marshal
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("memory: copy %T: %v", v, err))
	}
	return out
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func cloneSession(s *bridge.Session) *bridge.Session {
	c := clone(s)
	c.Created, c.Updated = utc(c.Created), utc(c.Updated)
	return c
}

func cloneRun(r *bridge.Run) *bridge.Run {
	c := clone(r)
	c.Created, c.Finished = utc(c.Created), utc(c.Finished)
	return c
}

func cloneEvent(e *bridge.Event) bridge.Event {
	c := clone(e)
	c.Time = utc(c.Time)
	return *c
}

func cloneMessage(m *bridge.Message) bridge.Message {
	c := clone(m)
	c.Created = utc(c.Created)
	return *c
}

var errClosed = bridge.Errorf(bridge.CodeUnavailable, "the store is closed")

// read and write hold the store's lock, failing once it is closed.
func (s *Store) read(fn func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return fn()
}

func (s *Store) write(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return fn()
}

// CreateSession inserts sess; CodeConflict if its principal has a session
// of its id.
func (s *Store) CreateSession(_ context.Context, sess *bridge.Session) error {
	if sess.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create session: empty id")
	}
	if sess.Created.IsZero() {
		sess.Created = s.now()
	}
	if sess.Updated.IsZero() {
		sess.Updated = sess.Created
	}
	return s.write(func() error { return s.createSession(sess) })
}

func (s *Store) createSession(sess *bridge.Session) error {
	if _, ok := s.sessions[keyOf(sess)]; ok {
		return bridge.Errorf(bridge.CodeConflict, "create session: session %q exists", sess.ID)
	}
	s.sessions[keyOf(sess)] = cloneSession(sess)
	return nil
}

// Session returns principal's session id; another principal's session of
// that id is not found.
func (s *Store) Session(_ context.Context, principal, id string) (*bridge.Session, error) {
	var out *bridge.Session
	err := s.read(func() error {
		sess, ok := s.sessions[sessionKey{principal, id}]
		if !ok {
			return bridge.Errorf(bridge.CodeNotFound, "session %q not found", id)
		}
		out = cloneSession(sess)
		return nil
	})
	return out, err
}

// UpdateSession writes sess.Updated and sess.State of the session
// (sess.Principal, sess.ID).
func (s *Store) UpdateSession(_ context.Context, sess *bridge.Session) error {
	return s.write(func() error {
		cur, ok := s.sessions[keyOf(sess)]
		if !ok {
			return bridge.Errorf(bridge.CodeNotFound, "update session: session %q not found", sess.ID)
		}
		cur.Updated = utc(sess.Updated)
		cur.State = slices.Clone(sess.State)
		return nil
	})
}

// CreateRun inserts r with the messages that start it.
func (s *Store) CreateRun(_ context.Context, r *bridge.Run, input []bridge.Message) error {
	if r.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create run: empty id")
	}
	if r.Status == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create run %q: empty status", r.ID)
	}
	if r.Created.IsZero() {
		r.Created = s.now()
	}
	return s.write(func() error {
		if err := s.createRun(r); err != nil {
			return err
		}
		return s.addMessages(input)
	})
}

func (s *Store) createRun(r *bridge.Run) error {
	if _, ok := s.runs[r.ID]; ok {
		return bridge.Errorf(bridge.CodeConflict, "create run: run %q exists", r.ID)
	}
	if err := s.keyTaken(r, nil); err != nil {
		return err
	}
	s.order++
	row := &runRow{run: *cloneRun(r), order: s.order}
	row.run.FirstCommit, row.run.FirstClientByte = time.Time{}, time.Time{} // set by the row that ends it, as SQLite's
	s.runs[r.ID] = row
	return nil
}

func (s *Store) Run(_ context.Context, id string) (*bridge.Run, error) {
	var out *bridge.Run
	err := s.read(func() error {
		row, ok := s.runs[id]
		if !ok {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", id)
		}
		out = cloneRun(&row.run)
		return nil
	})
	return out, err
}

func (s *Store) RunByClientID(_ context.Context, principal, clientRunID string) (*bridge.Run, error) {
	var out *bridge.Run
	err := s.read(func() error {
		if clientRunID != "" {
			for _, row := range s.sortedRuns() {
				if row.run.Principal == principal && row.run.ClientRunID == clientRunID {
					out = cloneRun(&row.run)
					return nil
				}
			}
		}
		return bridge.Errorf(bridge.CodeNotFound, "run with client id %q not found", clientRunID)
	})
	return out, err
}

// sortedRuns is every run, newest first (by Created, then creation order).
func (s *Store) sortedRuns() []*runRow {
	rows := make([]*runRow, 0, len(s.runs))
	for _, r := range s.runs {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *runRow) int {
		if c := b.run.Created.Compare(a.run.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.order, a.order)
	})
	return rows
}

func (s *Store) ListRuns(_ context.Context, f bridge.RunFilter) ([]*bridge.Run, error) {
	var out []*bridge.Run
	err := s.read(func() error {
		rows := s.sortedRuns()
		if f.Before != "" {
			i := slices.IndexFunc(rows, func(r *runRow) bool { return r.run.ID == f.Before })
			if i < 0 {
				return nil
			}
			rows = rows[i+1:]
		}
		for _, row := range rows {
			r := &row.run
			if f.SessionID != "" && r.SessionID != f.SessionID || f.Principal != "" && r.Principal != f.Principal ||
				f.Status != "" && r.Status != f.Status || f.Inbound != "" && r.Inbound != f.Inbound ||
				f.Outbound != "" && r.Outbound != f.Outbound || f.Model != "" && r.Model != f.Model ||
				!f.Since.IsZero() && r.Created.Before(f.Since) || !f.Until.IsZero() && !r.Created.Before(f.Until) {
				continue
			}
			out = append(out, cloneRun(r))
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// Commit writes b atomically, with storage/sqlite's rules: new sessions
// and runs first (CodeConflict if one exists), an event already stored is
// CodeConflict, an event, run or message of an unknown run CodeNotFound.
func (s *Store) Commit(_ context.Context, b *bridge.Batch) error {
	if b == nil {
		return nil
	}
	return s.write(func() error {
		if err := s.check(b); err != nil {
			return err
		}
		for _, sess := range b.Sessions {
			if sess.Created.IsZero() {
				sess.Created = s.now()
			}
			if sess.Updated.IsZero() {
				sess.Updated = sess.Created
			}
			s.sessions[keyOf(sess)] = cloneSession(sess)
		}
		for _, r := range b.NewRuns {
			if r.Created.IsZero() {
				r.Created = s.now()
			}
			_ = s.createRun(r) // checked
		}
		numbered := map[string]int64{} // run: its SessionSeq in this batch
		for i := range b.Events {
			e := &b.Events[i]
			row := s.runs[e.RunID]
			sseq, ok := numbered[e.RunID]
			if !ok {
				sseq = s.nextSessionSeq(&row.run)
				numbered[e.RunID] = sseq
			}
			e.SessionSeq = sseq
			c := cloneEvent(e)
			s.events[e.RunID] = append(s.events[e.RunID], c)
			row.run.LastSeq = max(row.run.LastSeq, e.Seq)
		}
		for _, r := range b.Runs {
			row := s.runs[r.ID]
			c := cloneRun(r)
			cur := &row.run
			cur.Outbound, cur.Upstream, cur.Model = c.Outbound, c.Upstream, c.Model
			cur.Status, cur.StopReason, cur.Reason = c.Status, c.StopReason, c.Reason
			cur.Usage, cur.Dropped, cur.TraceID, cur.UpstreamRunID = c.Usage, c.Dropped, c.TraceID, c.UpstreamRunID
			cur.Finished = c.Finished
			cur.LastSeq = max(cur.LastSeq, c.LastSeq, s.lastEvent(r.ID))
			setTiming(cur, c.FirstCommit, c.FirstClientByte)
		}
		for _, t := range b.Timings {
			if row, ok := s.runs[t.RunID]; ok {
				setTiming(&row.run, t.FirstCommit, t.FirstClientByte)
			}
		}
		return s.addMessages(b.Messages)
	})
}

// setTiming sets r's timings it has none of yet.
func setTiming(r *bridge.Run, commit, firstByte time.Time) {
	if r.FirstCommit.IsZero() && !commit.IsZero() {
		r.FirstCommit = utc(commit)
	}
	if r.FirstClientByte.IsZero() && !firstByte.IsZero() {
		r.FirstClientByte = utc(firstByte)
	}
}

// nextSessionSeq takes the next number of the commit order of r's session
// (0 for a run of no session).
func (s *Store) nextSessionSeq(r *bridge.Run) int64 {
	if r.SessionID == "" {
		return 0
	}
	k := sessionKey{r.Principal, r.SessionID}
	s.seqs[k]++
	return s.seqs[k]
}

// SessionSeq is the number of the session's last commit.
func (s *Store) SessionSeq(_ context.Context, principal, session string) (int64, error) {
	var n int64
	err := s.read(func() error {
		n = s.seqs[sessionKey{principal, session}]
		return nil
	})
	return n, err
}

// check finds what would fail b, before anything of it is written.
// keyTaken is CodeConflict when r's client run id is an idempotency key
// another run of its principal has, stored or among batch.
func (s *Store) keyTaken(r *bridge.Run, batch []*bridge.Run) error {
	if !bridge.IdempotencyKeyed(r) {
		return nil
	}
	same := func(o *bridge.Run) bool {
		return o.ID != r.ID && bridge.IdempotencyKeyed(o) && o.Principal == r.Principal && o.ClientRunID == r.ClientRunID
	}
	taken := slices.ContainsFunc(batch, same)
	for _, row := range s.runs {
		taken = taken || same(&row.run)
	}
	if taken {
		return bridge.Errorf(bridge.CodeConflict, "create run %q: its idempotency key is another run's", r.ID)
	}
	return nil
}

func (s *Store) check(b *bridge.Batch) error {
	newSessions := map[sessionKey]bool{}
	for _, sess := range b.Sessions {
		if sess.ID == "" {
			return bridge.Errorf(bridge.CodeInvalid, "create session: empty id")
		}
		if _, ok := s.sessions[keyOf(sess)]; ok || newSessions[keyOf(sess)] {
			return bridge.Errorf(bridge.CodeConflict, "create session: session %q exists", sess.ID)
		}
		newSessions[keyOf(sess)] = true
	}
	newRuns := map[string]bool{}
	for _, r := range b.NewRuns {
		if r.ID == "" || r.Status == "" {
			return bridge.Errorf(bridge.CodeInvalid, "create run %q: empty id or status", r.ID)
		}
		if _, ok := s.runs[r.ID]; ok || newRuns[r.ID] {
			return bridge.Errorf(bridge.CodeConflict, "create run: run %q exists", r.ID)
		}
		if err := s.keyTaken(r, b.NewRuns); err != nil {
			return err
		}
		newRuns[r.ID] = true
	}
	known := func(run string) bool { _, ok := s.runs[run]; return ok || newRuns[run] }
	seen := map[string]map[int64]bool{}
	for _, e := range b.Events {
		if !known(e.RunID) {
			return bridge.Errorf(bridge.CodeNotFound, "append event run=%s seq=%d: run not found", e.RunID, e.Seq)
		}
		if seen[e.RunID] == nil {
			seen[e.RunID] = map[int64]bool{}
		}
		_, stored := slices.BinarySearchFunc(s.events[e.RunID], e.Seq, func(x bridge.Event, seq int64) int { return cmp.Compare(x.Seq, seq) })
		if stored || seen[e.RunID][e.Seq] {
			return bridge.Errorf(bridge.CodeConflict, "append event run=%s seq=%d: already committed", e.RunID, e.Seq)
		}
		seen[e.RunID][e.Seq] = true
	}
	for _, r := range b.Runs {
		if !known(r.ID) {
			return bridge.Errorf(bridge.CodeNotFound, "update run: run %q not found", r.ID)
		}
	}
	for _, m := range b.Messages {
		if !known(m.RunID) {
			return bridge.Errorf(bridge.CodeNotFound, "add message: run %q not found", m.RunID)
		}
	}
	return nil
}

// lastEvent is the highest seq stored for run, or 0.
func (s *Store) lastEvent(run string) int64 {
	var last int64
	for _, e := range s.events[run] {
		last = max(last, e.Seq)
	}
	return last
}

// addMessages appends msgs to the transcript, each in its run's session.
func (s *Store) addMessages(msgs []bridge.Message) error {
	for i := range msgs {
		row, ok := s.runs[msgs[i].RunID]
		if !ok {
			return bridge.Errorf(bridge.CodeNotFound, "add message: run %q not found", msgs[i].RunID)
		}
		m := cloneMessage(&msgs[i])
		if m.Created.IsZero() {
			m.Created = s.now().UTC()
		}
		m.ID = ""
		s.messages = append(s.messages, message{session: sessionKey{row.run.Principal, row.run.SessionID}, msg: m, superseded: row.run.Superseded})
	}
	return nil
}

func (s *Store) Events(_ context.Context, run string, after int64, limit int) ([]bridge.Event, error) {
	var out []bridge.Event
	err := s.read(func() error {
		evs := s.events[run]
		i, _ := slices.BinarySearchFunc(evs, after+1, func(x bridge.Event, seq int64) int { return cmp.Compare(x.Seq, seq) })
		for ; i < len(evs) && (limit <= 0 || len(out) < limit); i++ {
			out = append(out, cloneEvent(&evs[i]))
		}
		return nil
	})
	return out, err
}

// SessionEvents returns the events of session's runs after the position
// after, in commit order.
func (s *Store) SessionEvents(_ context.Context, principal, session string, after bridge.SessionPos, limit int) ([]bridge.Event, error) {
	var out []bridge.Event
	err := s.read(func() error {
		var all []*bridge.Event
		for id, row := range s.runs {
			if row.run.SessionID != session || row.run.Principal != principal || session == "" {
				continue
			}
			evs := s.events[id]
			for i := range evs {
				if after.Before(evs[i].Pos()) {
					all = append(all, &evs[i])
				}
			}
		}
		slices.SortFunc(all, func(a, b *bridge.Event) int {
			return cmp.Or(cmp.Compare(a.SessionSeq, b.SessionSeq), cmp.Compare(a.Seq, b.Seq))
		})
		for _, e := range all {
			if limit > 0 && len(out) >= limit {
				break
			}
			out = append(out, cloneEvent(e))
		}
		return nil
	})
	return out, err
}

// positioned is the message at index i with its position as its ID.
func (s *Store) positioned(i int) bridge.Message {
	m := cloneMessage(&s.messages[i].msg)
	m.ID = "m" + strconv.Itoa(i+1)
	return m
}

// Messages leaves out the superseded messages; AllMessages does not.
func (s *Store) Messages(_ context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	return s.sessionMessages(sessionKey{principal, session}, before, limit, false)
}

func (s *Store) AllMessages(_ context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	return s.sessionMessages(sessionKey{principal, session}, before, limit, true)
}

func (s *Store) sessionMessages(session sessionKey, before int64, limit int, all bool) ([]bridge.Message, bool, error) {
	var (
		out  []bridge.Message
		more bool
	)
	err := s.read(func() error {
		end := len(s.messages)
		if before > 0 {
			end = min(end, int(before-1))
		}
		for i := end - 1; i >= 0; i-- {
			if s.messages[i].session != session || s.messages[i].superseded && !all {
				continue
			}
			if limit > 0 && len(out) == limit {
				more = true
				break
			}
			out = append(out, s.positioned(i))
		}
		slices.Reverse(out)
		return nil
	})
	return out, more, err
}

func (s *Store) RunMessages(_ context.Context, run string) ([]bridge.Message, error) {
	var out []bridge.Message
	err := s.read(func() error {
		for i := range s.messages {
			if s.messages[i].msg.RunID == run {
				out = append(out, s.positioned(i))
			}
		}
		return nil
	})
	return out, err
}

// Supersede marks run and the runs of its session (its principal's) after it (by Created,
// then creation order, as ListRuns sorts them) superseded, with their
// messages.
func (s *Store) Supersede(_ context.Context, run string, _ time.Time) ([]string, error) {
	var ids []string
	err := s.write(func() error {
		target, ok := s.runs[run]
		if !ok {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", run)
		}
		rows := s.sortedRuns()
		slices.Reverse(rows) // oldest first
		marked := map[string]bool{}
		for _, row := range rows {
			r := &row.run
			later := r.Created.After(target.run.Created) || r.Created.Equal(target.run.Created) && row.order >= target.order
			if r.SessionID != target.run.SessionID || r.Principal != target.run.Principal || r.Superseded || !later {
				continue
			}
			r.Superseded = true
			marked[r.ID] = true
			ids = append(ids, r.ID)
		}
		for i := range s.messages {
			if marked[s.messages[i].msg.RunID] {
				s.messages[i].superseded = true
			}
		}
		return nil
	})
	return ids, err
}

func (s *Store) PutID(_ context.Context, m bridge.IDMapping) error {
	return s.write(func() error {
		s.ids[idKey{m.Kind, m.Scope, m.Local}] = m.Remote
		return nil
	})
}

func (s *Store) RemoteID(_ context.Context, kind bridge.IDKind, scope, local string) (string, error) {
	var out string
	err := s.read(func() error {
		r, ok := s.ids[idKey{kind, scope, local}]
		if !ok {
			return bridge.Errorf(bridge.CodeNotFound, "no %s id mapped for %q in %s", kind, local, scope)
		}
		out = r
		return nil
	})
	return out, err
}

func (s *Store) LocalID(_ context.Context, kind bridge.IDKind, scope, remote string) (string, error) {
	var out string
	err := s.read(func() error {
		for k, r := range s.ids {
			if k.kind == kind && k.scope == scope && r == remote {
				out = k.local
				return nil
			}
		}
		return bridge.Errorf(bridge.CodeNotFound, "no local %s id mapped for %q in %s", kind, remote, scope)
	})
	return out, err
}

// InterruptRunning closes every running run but those in keep as
// interrupted, after its last event.
func (s *Store) InterruptRunning(_ context.Context, reason string, now time.Time, keep ...string) ([]string, error) {
	var ids []string
	err := s.write(func() error {
		rows := s.sortedRuns()
		slices.Reverse(rows) // oldest first
		for _, row := range rows {
			r := &row.run
			if r.Status != bridge.StatusRunning || slices.Contains(keep, r.ID) {
				continue
			}
			seq := max(r.LastSeq, s.lastEvent(r.ID)) + 1
			e := bridge.Event{RunID: r.ID, Seq: seq, Time: now, Kind: bridge.KindFinal, Source: bridge.SourceBridge,
				Final: &bridge.Final{Status: bridge.StatusInterrupted, Reason: reason}, SessionSeq: s.nextSessionSeq(r)}
			s.events[r.ID] = append(s.events[r.ID], cloneEvent(&e))
			r.Status, r.Reason, r.Finished, r.LastSeq = bridge.StatusInterrupted, reason, utc(now), seq
			ids = append(ids, r.ID)
		}
		return nil
	})
	return ids, err
}

// DeleteEventsBefore deletes the events (and the recordings) of every run
// that ended before t and is not running.
func (s *Store) DeleteEventsBefore(_ context.Context, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	var n int64
	err := s.write(func() error {
		for id, row := range s.runs {
			r := &row.run
			if r.Finished.IsZero() || !r.Finished.Before(t) || r.Status == bridge.StatusRunning {
				continue
			}
			n += int64(len(s.events[id]))
			delete(s.events, id)
			delete(s.recs, id) // the inspector's recordings go with the events
		}
		return nil
	})
	return n, err
}

// Close drops everything; later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.sessions, s.runs, s.events, s.messages, s.ids, s.resps, s.recs, s.seqs = nil, nil, nil, nil, nil, nil, nil, nil
	return nil
}

// AddRecording appends r to its run's recordings.
func (s *Store) AddRecording(_ context.Context, r *bridge.Recording) error {
	if len(r.Data) > bridge.MaxRecording {
		return bridge.Errorf(bridge.CodeTooLarge, "recording of run %s: %d bytes, more than %d", r.RunID, len(r.Data), bridge.MaxRecording)
	}
	return s.write(func() error {
		if _, ok := s.runs[r.RunID]; !ok {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", r.RunID)
		}
		if n := len(s.recs[r.RunID]); n >= bridge.MaxRecordings {
			return bridge.Errorf(bridge.CodeTooLarge, "run %s has %d recordings already", r.RunID, n)
		}
		c := bridge.Recording{RunID: r.RunID, Created: utc(cmp.Or(r.Created, s.now())), Data: slices.Clone(r.Data)}
		s.recs[r.RunID] = append(s.recs[r.RunID], c)
		return nil
	})
}

// Recordings returns run's recordings, oldest first.
func (s *Store) Recordings(_ context.Context, run string) ([]bridge.Recording, error) {
	var out []bridge.Recording
	err := s.read(func() error {
		for _, r := range s.recs[run] {
			r.Data = slices.Clone(r.Data)
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
