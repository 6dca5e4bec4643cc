package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// storedRun is one run of the store, with what its events say.
type storedRun struct {
	id, model, status, reason string
	lastSeq                   int64

	events   int64
	maxSeq   int64
	gap      string // the first hole or disorder in its seqs, if any
	finals   int
	lastKind string
	final    string // the final event's status
	text     strings.Builder
	seqs     map[int64]bool // every stored seq, when kept
}

// dbReport is what the database check found.
type dbReport struct {
	integrity string // PRAGMA integrity_check
	runs      map[string]*storedRun
	byStatus  map[string]int
	events    int64
}

// checkedStore is what the checks read of a store.
type checkedStore interface {
	ListRuns(ctx context.Context, f bridge.RunFilter) ([]*bridge.Run, error)
	RunMessages(ctx context.Context, run string) ([]bridge.Message, error)
	Events(ctx context.Context, run string, after int64, limit int) ([]bridge.Event, error)
	Close() error
}

// openRO opens the store: a SQLite file read-only (a running bridge may
// have the file open too: WAL readers do not block it, and the checks must
// change nothing), or the PostgreSQL database of a postgres:// URL (whose
// replicas may be running: the checks only read).
func openRO(ctx context.Context, path string) (checkedStore, error) {
	if postgres.IsURL(path) {
		return postgres.Open(ctx, path, postgres.Options{})
	}
	return sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true, BusyTimeout: 10 * time.Second})
}

// storeIntegrity is SQLite's integrity check of st, or what stands for it.
func storeIntegrity(ctx context.Context, st checkedStore) (string, error) {
	if c, ok := st.(interface {
		Integrity(context.Context) (string, error)
	}); ok {
		return c.Integrity(ctx)
	}
	return integrityNA, nil
}

// integrityNA stands for the integrity check on PostgreSQL, which has no
// such command to ask.
const integrityNA = "n/a (PostgreSQL)"

// freshSchema creates a schema of the soak's own in the database of url
// and returns url with its connections' search_path set to it, and a func
// that drops it.
func freshSchema(ctx context.Context, url string) (string, func(), error) {
	name := fmt.Sprintf("bridgesoak_%d_%d", os.Getpid(), time.Now().Unix())
	schemaURL, drop, err := postgres.CreateSchema(ctx, url, name)
	if err != nil {
		return "", nil, fmt.Errorf("--db: %w", err)
	}
	return schemaURL, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = drop(ctx)
	}, nil
}

// runningRuns counts the runs whose status is running.
func runningRuns(ctx context.Context, path string) (int, error) {
	return runsWith(ctx, path, bridge.StatusRunning)
}

// runsWith counts the runs of the file at path in status st.
func runsWith(ctx context.Context, path string, st bridge.Status) (int, error) {
	s, err := openRO(ctx, path)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, bridge.RunFilter{Status: st})
	return len(runs), err
}

// integrity runs SQLite's integrity check.
func integrity(ctx context.Context, path string) (string, error) {
	s, err := openRO(ctx, path)
	if err != nil {
		return "", err
	}
	defer s.Close()
	return storeIntegrity(ctx, s)
}

// readStore reads every run and its events through the store, as a resume
// reads them. keepSeqs keeps each run's set of seqs (for the crash check).
// The bridge must have exited.
func readStore(ctx context.Context, path string, keepSeqs bool) (*dbReport, error) {
	rep := &dbReport{runs: map[string]*storedRun{}, byStatus: map[string]int{}}
	st, err := openRO(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	defer st.Close()
	if rep.integrity, err = storeIntegrity(ctx, st); err != nil {
		return nil, err
	}
	runs, err := st.ListRuns(ctx, bridge.RunFilter{})
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		r := &storedRun{id: run.ID, model: run.Model, status: string(run.Status), reason: run.Reason, lastSeq: run.LastSeq}
		if keepSeqs {
			r.seqs = map[int64]bool{}
		}
		rep.runs[r.id] = r
		rep.byStatus[r.status]++
	}
	for _, r := range rep.runs {
		if _, err := parseScript(r.model); err != nil {
			// An A2A client names no model: its script is its message.
			msgs, err := st.RunMessages(ctx, r.id)
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				if m.Role == bridge.RoleUser && len(m.Parts) > 0 {
					r.model = m.Parts[0].Text
					break
				}
			}
		}
		evs, err := st.Events(ctx, r.id, 0, 0)
		if err != nil {
			return nil, err
		}
		for i := range evs {
			r.add(&evs[i])
			rep.events++
		}
	}
	return rep, nil
}

// add takes the run's next stored event.
func (r *storedRun) add(e *bridge.Event) {
	r.events++
	if e.Seq != r.maxSeq+1 && r.gap == "" {
		r.gap = fmt.Sprintf("seq %d after %d", e.Seq, r.maxSeq)
	}
	r.maxSeq = e.Seq
	r.lastKind = string(e.Kind)
	if r.seqs != nil {
		r.seqs[e.Seq] = true
	}
	switch e.Kind {
	case bridge.KindTextDelta:
		r.text.WriteString(e.Text)
	case bridge.KindFinal:
		r.finals++
		if e.Final != nil {
			r.final = string(e.Final.Status)
		}
	}
}

// problems checks one stored run against its script: a final state, seqs
// 1..last_seq with no hole, exactly one final event and it last, the run's
// status the final's, and the text: all of it for a completed run, what
// came before the fault for a failed one, a prefix for an interrupted one
// (crash allows interrupted).
func (r *storedRun) problems(crash bool) []string {
	var out []string
	s, err := parseScript(r.model)
	if err != nil {
		return []string{err.Error()}
	}
	switch bridge.Status(r.status) {
	case bridge.StatusCompleted, bridge.StatusFailed:
	case bridge.StatusInterrupted:
		if !crash {
			out = append(out, "interrupted without a crash: "+r.reason)
		}
	default:
		out = append(out, "status "+r.status+" is not final")
	}
	switch {
	case r.events == 0:
		out = append(out, "no events")
	case r.gap != "":
		out = append(out, "events not contiguous from 1: "+r.gap)
	case r.maxSeq != r.lastSeq:
		out = append(out, fmt.Sprintf("last_seq %d but events up to %d", r.lastSeq, r.maxSeq))
	}
	if r.finals != 1 {
		out = append(out, fmt.Sprintf("%d final events", r.finals))
	} else if r.lastKind != string(bridge.KindFinal) {
		out = append(out, "last event is "+r.lastKind+", not final")
	} else if r.final != r.status {
		out = append(out, fmt.Sprintf("final event says %s, run says %s", r.final, r.status))
	}
	text := r.text.String()
	switch bridge.Status(r.status) {
	case bridge.StatusCompleted:
		if s.fault != faultNone {
			out = append(out, fmt.Sprintf("completed, but its upstream stream had a fault (%s)", s.fault))
		} else if text != s.want() {
			out = append(out, fmt.Sprintf("text of %d bytes, want %d", len(text), len(s.want())))
		}
	case bridge.StatusFailed:
		if s.fault == faultNone {
			out = append(out, "failed, but its upstream stream had no fault: "+r.reason)
		} else if text != s.want() {
			out = append(out, fmt.Sprintf("text of %d bytes before the fault, want %d", len(text), len(s.want())))
		}
	case bridge.StatusInterrupted:
		if !strings.HasPrefix(s.want(), text) {
			out = append(out, "text is not a prefix of what the upstream sends")
		}
	}
	return out
}

// interruptedRuns counts the runs of the file at path closed as interrupted.
func interruptedRuns(ctx context.Context, path string) (int, error) {
	return runsWith(ctx, path, bridge.StatusInterrupted)
}
