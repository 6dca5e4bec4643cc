package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// timedStore is the SQLite store with the calls on a run's path counted and
// timed, so a report can say where a stream's time in the store goes. It
// only delegates: the code path is the store's own.
type timedStore struct {
	*sqlite.Store
	createSession, session, messages, createRun, commit, run opStat
	events                                                   atomic.Int64 // events committed

	mu         sync.Mutex
	commitDurs []time.Duration // of every Commit, for the distribution
}

type opStat struct{ n, ns atomic.Int64 }

func (o *opStat) since(t time.Time) {
	o.n.Add(1)
	o.ns.Add(int64(time.Since(t)))
}

func (s *timedStore) CreateSession(ctx context.Context, x *bridge.Session) error {
	defer s.createSession.since(time.Now())
	return s.Store.CreateSession(ctx, x)
}

func (s *timedStore) Session(ctx context.Context, principal, id string) (*bridge.Session, error) {
	defer s.session.since(time.Now())
	return s.Store.Session(ctx, principal, id)
}

func (s *timedStore) Messages(ctx context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	defer s.messages.since(time.Now())
	return s.Store.Messages(ctx, principal, session, before, limit)
}

func (s *timedStore) CreateRun(ctx context.Context, r *bridge.Run, input []bridge.Message) error {
	defer s.createRun.since(time.Now())
	return s.Store.CreateRun(ctx, r, input)
}

func (s *timedStore) Commit(ctx context.Context, b *bridge.Batch) error {
	t := time.Now()
	s.events.Add(int64(len(b.Events)))
	err := s.Store.Commit(ctx, b)
	s.commit.since(t)
	d := time.Since(t)
	s.mu.Lock()
	if len(s.commitDurs) < 1_000_000 {
		s.commitDurs = append(s.commitDurs, d)
	}
	s.mu.Unlock()
	return err
}

func (s *timedStore) Run(ctx context.Context, id string) (*bridge.Run, error) {
	defer s.run.since(time.Now())
	return s.Store.Run(ctx, id)
}

// StoreStats are a phase's store calls: how many, and their mean duration.
type StoreStats struct {
	Streams     int     `json:"streams"`
	Commits     int64   `json:"commits"`
	CommitsPer  float64 `json:"commits_per_stream"`
	EventsPerTx float64 `json:"events_per_commit"`
	CommitUS    float64 `json:"commit_mean_us"`
	// Commit is the distribution of commit durations (ms).
	Commit        Dist    `json:"commit"`
	CreateSession float64 `json:"create_session_mean_us"`
	CreateRun     float64 `json:"create_run_mean_us"`
	Messages      float64 `json:"messages_mean_us"`
	RunReads      float64 `json:"run_reads_per_stream"`
	RunReadUS     float64 `json:"run_read_mean_us"`
}

type storeSnap struct {
	n, ns   [6]int64
	events  int64
	commits int // len(commitDurs)
}

func (s *timedStore) snap() storeSnap {
	var x storeSnap
	for i, o := range []*opStat{&s.createSession, &s.session, &s.messages, &s.createRun, &s.commit, &s.run} {
		x.n[i], x.ns[i] = o.n.Load(), o.ns.Load()
	}
	x.events = s.events.Load()
	s.mu.Lock()
	x.commits = len(s.commitDurs)
	s.mu.Unlock()
	return x
}

// statsSince reports the calls made since a.
func (s *timedStore) statsSince(a storeSnap, streams int) *StoreStats {
	b := s.snap()
	mean := func(i int) float64 {
		if n := b.n[i] - a.n[i]; n > 0 {
			return float64(b.ns[i]-a.ns[i]) / float64(n) / 1e3
		}
		return 0
	}
	st := &StoreStats{Streams: streams, Commits: b.n[4] - a.n[4], CommitUS: mean(4),
		CreateSession: mean(0), CreateRun: mean(3), Messages: mean(2), RunReadUS: mean(5)}
	s.mu.Lock()
	st.Commit = distOf(s.commitDurs[a.commits:b.commits])
	s.mu.Unlock()
	if st.Commits > 0 {
		st.EventsPerTx = float64(b.events-a.events) / float64(st.Commits)
	}
	if streams > 0 {
		st.CommitsPer = float64(st.Commits) / float64(streams)
		st.RunReads = float64(b.n[5]-a.n[5]) / float64(streams)
	}
	return st
}
