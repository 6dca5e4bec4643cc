package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestStore runs the store conformance suite storage/sqlite passes, against
// a real PostgreSQL server, each subtest in an empty schema of its own.
func TestStore(t *testing.T) {
	bridgetest.TestStore(t, func(t *testing.T) bridge.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestResponseStore runs the stored-responses suite storage/sqlite passes.
func TestResponseStore(t *testing.T) {
	bridgetest.TestResponseStore(t, func(t *testing.T) bridge.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRecordingStore runs the recordings suite storage/sqlite passes.
func TestRecordingStore(t *testing.T) {
	bridgetest.TestRecordingStore(t, func(t *testing.T) bridge.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// openStore opens a store on the database at url, closed when t ends.
func openStore(t *testing.T, url string, opt postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// commitTooBig commits four text deltas of run from seq from, 3,000 bytes
// of text each: more than a notification carries (its limit is 7,800
// bytes), so a follower is woken and reads the store.
func commitTooBig(ctx context.Context, t *testing.T, s *postgres.Store, run string, from int64) {
	t.Helper()
	big := bridgetest.TextDeltas(run, from, 4)
	for i := range big {
		big[i].Text = strings.Repeat("x", 3000)
	}
	if err := s.Commit(ctx, &bridge.Batch{Events: big}); err != nil {
		t.Fatal(err)
	}
}

// TestWatchRun: a process watching a run is woken by another process's
// commit of its events, and not by another run's.
func TestWatchRun(t *testing.T) {
	url := pgtest.Schema(t)
	open := func() *postgres.Store { return openStore(t, url, postgres.Options{}) }
	a, b := open(), open()
	ctx := t.Context()
	if err := a.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if err := a.CreateRun(ctx, &bridge.Run{ID: id, SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
			t.Fatal(err)
		}
	}
	wake, stop := b.WatchRun("r1")
	defer stop()
	if err := a.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("r2", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Fatal("woken by another run's commit")
	case <-time.After(200 * time.Millisecond):
	}
	if err := a.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("r1", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken by the run's commit in another process")
	}
}

// TestWatchRunEvents: a notification carries the events of a commit that
// fit in one (two runs interleaved in one batch, a final with its
// payload), each as the store reads it back (its session seq too); a
// commit whose events do not fit signals without them, and the follower
// is told to read the store.
func TestWatchRunEvents(t *testing.T) {
	url := pgtest.Schema(t)
	open := func() *postgres.Store { return openStore(t, url, postgres.Options{}) }
	a, b := open(), open()
	ctx := t.Context()
	if err := a.CreateSession(ctx, &bridge.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if err := a.CreateRun(ctx, &bridge.Run{ID: id, SessionID: "s", Status: bridge.StatusRunning}, nil); err != nil {
			t.Fatal(err)
		}
	}
	wake, take, stop := b.WatchRunEvents("r1")
	defer stop()
	wait := func(what string) ([]bridge.Event, bool) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not woken in 10s", what)
		}
		return take()
	}
	one, other := bridgetest.TextDeltas("r1", 1, 3), bridgetest.TextDeltas("r2", 1, 3)
	one[2].Text = "line\nbreak \"quoted\" \u2603"
	batch := []bridge.Event{one[0], other[0], one[1], other[1], one[2], other[2]}
	if err := a.Commit(ctx, &bridge.Batch{Events: batch}); err != nil {
		t.Fatal(err)
	}
	got, read := wait("a batch of two runs")
	want, err := b.Events(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if read || len(want) != 3 || want[0].SessionSeq == 0 {
		t.Fatalf("read = %v, store holds %d events (session seq %d)", read, len(want), want[0].SessionSeq)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("the notification's events differ from the store's (-store +notified):\n%s", d)
	}

	final := bridge.Event{RunID: "r1", Seq: 4, Time: time.Unix(1700000000, 123456789).UTC(), Kind: bridge.KindFinal,
		Source: bridge.SourceBridge, Final: &bridge.Final{Status: bridge.StatusCompleted}}
	if err := a.Commit(ctx, &bridge.Batch{Events: []bridge.Event{final},
		Runs: []*bridge.Run{{ID: "r1", SessionID: "s", Status: bridge.StatusRunning, LastSeq: 4}}}); err != nil {
		t.Fatal(err)
	}
	got, read = wait("a final in a transaction")
	want, err = b.Events(ctx, "r1", 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); read || d != "" {
		t.Fatalf("read = %v; (-store +notified):\n%s", read, d)
	}

	commitTooBig(ctx, t, a, "r1", 5)
	if got, read = wait("a batch too big for a notification"); !read || len(got) != 0 {
		t.Fatalf("got %d events, read = %v: want none and read", len(got), read)
	}
}

// TestWatchSessions: each commit's notification names its run's
// principal and session to the session watchers of every process (a
// principal with a quote and a newline in it too), with the events it
// carries, or, when they do not fit, none; a run of no session
// names none; a notification of an older replica (no names) wakes its
// run's followers and names nothing.
func TestWatchSessions(t *testing.T) {
	url := pgtest.Schema(t)
	open := func() *postgres.Store { return openStore(t, url, postgres.Options{}) }
	a, b := open(), open()
	ctx := t.Context()
	const principal = "key \"one\"\nof two"
	if err := a.CreateSession(ctx, &bridge.Session{ID: "s", Principal: principal}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*bridge.Run{{ID: "r1", SessionID: "s", Principal: principal}, {ID: "r0"}} {
		r.Status = bridge.StatusRunning
		if err := a.CreateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	type named struct {
		run, principal, session string
		carried                 int // events; -1: none (read the store)
	}
	commits := make(chan named, 16)
	stopSessions := b.WatchSessions(func(run, principal, session string, evs []bridge.Event) {
		n := named{run, principal, session, len(evs)}
		if evs == nil {
			n.carried = -1
		}
		commits <- n
	}, func() {})
	defer stopSessions()
	wake, take, stop := b.WatchRunEvents("r1")
	defer stop()
	next := func(what string) named {
		t.Helper()
		select {
		case n := <-commits:
			return n
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no session named in 10s", what)
		}
		return named{}
	}
	woken := func(what string) ([]bridge.Event, bool) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: r1's follower not woken in 10s", what)
		}
		return take()
	}
	want := named{"r1", principal, "s", 2}

	// One batch of both runs: r1 named, with its events; r0 not.
	batch := append(bridgetest.TextDeltas("r0", 1, 2), bridgetest.TextDeltas("r1", 1, 2)...)
	if err := a.Commit(ctx, &bridge.Batch{Events: batch}); err != nil {
		t.Fatal(err)
	}
	if n := next("a batch of r0 and r1"); n != want {
		t.Fatalf("named %+v, want %+v", n, want)
	}
	if evs, read := woken("a batch of r0 and r1"); read || len(evs) != 2 {
		t.Fatalf("r1's follower got %d events, read = %v: want its 2 carried", len(evs), read)
	}

	// An older replica's notification of r1 (its events, no names).
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_notify('bridge_events', '9 r1' || E'\n3 1700000000000000000' || E'\n{"kind":"text_delta","text":"old"}')`); err != nil {
		t.Fatal(err)
	}
	if evs, read := woken("an older replica's notification"); read || len(evs) != 1 || evs[0].Seq != 3 || evs[0].Text != "old" {
		t.Fatalf("r1's follower got %+v, read = %v: want the one event carried", evs, read)
	}

	// Too big to carry its events: named all the same, and the follower
	// reads the store. (The older replica's notification named nothing:
	// this is the next one.)
	commitTooBig(ctx, t, a, "r1", 3)
	want.carried = -1
	if n := next("a batch too big to carry"); n != want {
		t.Fatalf("named %+v, want %+v", n, want)
	}
	if evs, read := woken("a batch too big to carry"); !read || len(evs) != 0 {
		t.Fatalf("r1's follower got %d events, read = %v: want none and read", len(evs), read)
	}
	select {
	case n := <-commits:
		t.Fatalf("named %+v more", n)
	default:
	}
}

// TestMigrationResponses: the stored responses a bridge kept in id_map move
// to the responses table (migration 0004), and leave id_map.
func TestMigrationResponses(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, name := range []string{"0001_init.sql", "0002_superseded.sql", "0003_runs_by_created.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, $2, 1)`, v+1, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, row := range [][4]string{
		{"response", "alice", "resp_1", `{"id":"resp_1","run":"run_1","session":"sess_1","after":0,"created":1740830400,"model":"m","background":true,"echo":{"temperature":0.5}}`},
		{"response.input", "alice", "resp_1", `[{"id":"msg_1","type":"message"}]`},
		{"response.output", "alice", "resp_1", `{"id":"resp_1","object":"response"}`},
		{"response.end", "alice", "resp_1", "4"},
		{"response", "alice", "resp_2", `{"id":"resp_2","run":"run_1","session":"sess_1","after":6,"prev":"resp_1","created":1740830401,"model":"m"}`},
		{"response.head", "alice", "sess_1", "resp_2"},
		{"response.runs", "alice", "run_1", `[[0,"resp_1"],[6,"resp_2"]]`},
		{"tool_call", "up", "call_1", "call_up_1"},
	} {
		if _, err := conn.Exec(ctx, `INSERT INTO id_map (kind, scope, local, remote) VALUES ($1, $2, $3, $4)`, row[0], row[1], row[2], row[3]); err != nil {
			t.Fatal(err)
		}
	}
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.RunResponses(ctx, "alice", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	want := []*bridge.StoredResponse{
		{ID: "resp_1", Principal: "alice", RunID: "run_1", SessionID: "sess_1", Created: time.Unix(1740830400, 0).UTC(), Model: "m",
			Background: true, Echo: json.RawMessage(`{"temperature": 0.5}`), Input: json.RawMessage(`[{"id":"msg_1","type":"message"}]`),
			Output: json.RawMessage(`{"id":"resp_1","object":"response"}`), End: 4},
		{ID: "resp_2", Principal: "alice", RunID: "run_1", SessionID: "sess_1", After: 6, Previous: "resp_1",
			Created: time.Unix(1740830401, 0).UTC(), Model: "m"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("responses after the migration (-want +got):\n%s", d)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM id_map WHERE kind LIKE 'response%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d response rows left in id_map (%v), want 0", n, err)
	}
	if v, err := s.RemoteID(ctx, bridge.IDToolCall, "up", "call_1"); err != nil || v != "call_up_1" {
		t.Errorf("another id mapping after the migration: %q, %v", v, err)
	}
}

// TestMigrationSessionsByPrincipal: 0007 (storage/sqlite's 0011) keeps the
// sessions, their messages and the upstreams' id-map entries, now named
// by principal and id; the anonymous principal's entries and the ADK
// dialect's own stay as they were.
func TestMigrationSessionsByPrincipal(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Schema(t)
	conn := migratedBefore(t, url, "0007_")
	for _, q := range []string{
		`INSERT INTO sessions (id, principal, created, updated) VALUES ('demo', 'alice', 1, 1), ('anon', '', 1, 1)`,
		`INSERT INTO runs (id, session_id, principal, status, created) VALUES ('run_a', 'demo', 'alice', 'completed', 1), ('run_n', 'anon', '', 'completed', 2)`,
		`INSERT INTO messages (session_id, run_id, role, payload, created) VALUES
			('demo', 'run_a', 'user', '{"role":"user","parts":[{"type":"text","text":"alice says"}]}', 1),
			('anon', 'run_n', 'user', '{"role":"user","parts":[{"type":"text","text":"anon says"}]}', 2)`,
		`INSERT INTO id_map (kind, scope, local, remote) VALUES
			('session', 'up', 'demo', 'ctx-alice'), ('session', 'adk', 'bridge-session:demo', 'adk-alice'),
			('session', 'up', 'anon', 'ctx-anon'), ('session', 'adk-in:alice', 'demo', 'sess_x'), ('run', 'up', 'run_a', 'task-a')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Session(ctx, "alice", "demo"); err != nil {
		t.Errorf("alice's session after the migration: %v", err)
	}
	if _, err := s.Session(ctx, "", "demo"); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("alice's session found without her principal: %v", err)
	}
	for _, c := range []struct{ principal, session, text string }{{"alice", "demo", "alice says"}, {"", "anon", "anon says"}} {
		msgs, _, err := s.Messages(ctx, c.principal, c.session, 0, 0)
		if err != nil || len(msgs) != 1 || msgs[0].Text() != c.text {
			t.Errorf("messages of (%q, %s) after the migration: %+v, %v", c.principal, c.session, msgs, err)
		}
	}
	for _, c := range []struct{ scope, local, want string }{
		{"up", "alice\x1fdemo", "ctx-alice"}, {"adk", "bridge-session:alice\x1fdemo", "adk-alice"}, {"up", "anon", "ctx-anon"},
		{"adk-in:alice", "demo", "sess_x"},
	} {
		if got, err := s.RemoteID(ctx, bridge.IDSession, c.scope, c.local); err != nil || got != c.want {
			t.Errorf("id map (%s, %q) after the migration: %q, %v; want %q", c.scope, c.local, got, err, c.want)
		}
	}
	if got, _ := s.RemoteID(ctx, bridge.IDSession, "up", "demo"); got != "" {
		t.Errorf("the old name of alice's entry still maps: %q", got)
	}
	// Another principal may now have a session "demo" of its own.
	if err := s.CreateSession(ctx, &bridge.Session{ID: "demo", Principal: "bob"}); err != nil {
		t.Errorf("bob's demo after the migration: %v", err)
	}
}

// migratedBefore connects to url and applies the migrations before the one
// whose file name starts with stop, as a bridge of then would have.
func migratedBefore(t *testing.T, url, stop string) *pgx.Conn {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for v, name := range names {
		if strings.HasPrefix(filepath.Base(name), stop) {
			return conn
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, $2, 1)`, v+1, filepath.Base(name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no migration %s*", stop)
	return nil
}

// TestMigrationSessionSeqOpeners: the events numbered before migration 0011
// (a commit of run_a, then one of run_b, then run_a again) have the first
// event of each run's commit marked, and a session's events are found from
// every position as before; the commits after it page on from there.
func TestMigrationSessionSeqOpeners(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Schema(t)
	conn := migratedBefore(t, url, "0011_")
	for _, q := range []string{
		`INSERT INTO sessions (id, principal, created, updated) VALUES ('demo', 'alice', 1, 1)`,
		`INSERT INTO runs (id, session_id, principal, status, created) VALUES ('run_a', 'demo', 'alice', 'running', 1), ('run_b', 'demo', 'alice', 'running', 2)`,
		`INSERT INTO events (run_id, seq, kind, payload, time, sseq) VALUES
			('run_a', 1, 'text_delta', '{"kind":"text_delta","text":"a1"}', 1, 1),
			('run_a', 2, 'text_delta', '{"kind":"text_delta","text":"a2"}', 1, 1),
			('run_b', 1, 'text_delta', '{"kind":"text_delta","text":"b1"}', 1, 2),
			('run_a', 3, 'text_delta', '{"kind":"text_delta","text":"a3"}', 1, 3),
			('run_a', 4, 'text_delta', '{"kind":"text_delta","text":"a4"}', 1, 3)`,
		`INSERT INTO session_seqs (principal, session_id, last_seq) VALUES ('alice', 'demo', 3)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var openers []string
	rows, err := conn.Query(ctx, `SELECT run_id || ':' || seq FROM events WHERE opens ORDER BY sseq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		openers = append(openers, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"run_a:1", "run_b:1", "run_a:3"}, openers); d != "" {
		t.Fatalf("the events marked as opening a commit (-want +got):\n%s", d)
	}
	if err := s.Commit(ctx, &bridge.Batch{Events: []bridge.Event{
		{RunID: "run_b", Seq: 2, Kind: bridge.KindTextDelta, Text: "b2"}, {RunID: "run_a", Seq: 5, Kind: bridge.KindTextDelta, Text: "a5"}}}); err != nil {
		t.Fatal(err)
	}
	order := []string{"a1", "a2", "b1", "a3", "a4", "b2", "a5"}
	all, err := s.SessionEvents(ctx, "alice", "demo", bridge.SessionPos{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range all {
		texts = append(texts, e.Text)
	}
	if d := cmp.Diff(order, texts); d != "" {
		t.Fatalf("the session's events in commit order (-want +got):\n%s", d)
	}
	for i, e := range all {
		page, err := s.SessionEvents(ctx, "alice", "demo", bridge.SessionPos{SessionSeq: e.SessionSeq, Seq: e.Seq}, 2)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range page {
			got = append(got, p.Text)
		}
		want := order[i+1 : min(i+3, len(order))]
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("the page after %s (-want +got):\n%s", e.Text, d)
		}
	}
}

// TestMigrationIdempotencyKeys: runs two replicas made with one Hermes
// Idempotency-Key before 0012 keep the key on the newest (the one
// RunByClientID found), other dialects' repeated client run ids stay, and
// from then on a key is one run's.
func TestMigrationIdempotencyKeys(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Schema(t)
	conn := migratedBefore(t, url, "0012_")
	for _, q := range []string{
		`INSERT INTO sessions (id, principal, created, updated) VALUES ('sess_1', 'alice', 1, 1)`,
		`INSERT INTO runs (id, session_id, client_run_id, principal, inbound, status, created) VALUES
			('run_old', 'sess_1', 'k', 'alice', 'hermes', 'completed', 1), ('run_new', 'sess_1', 'k', 'alice', 'hermes', 'completed', 2),
			('run_o1', 'sess_1', 'k', 'alice', 'openai', 'completed', 3), ('run_o2', 'sess_1', 'k', 'alice', 'openai', 'completed', 4)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[string]string{"run_old": "", "run_new": "k", "run_o1": "k", "run_o2": "k"} {
		if r, err := s.Run(ctx, id); err != nil || r.ClientRunID != want {
			t.Errorf("%s after the migration: %+v, %v; want client run id %q", id, r, err, want)
		}
	}
	err = s.CreateRun(ctx, &bridge.Run{ID: "run_again", SessionID: "sess_1", ClientRunID: "k", Principal: "alice", Inbound: "hermes",
		Status: bridge.StatusRunning}, nil)
	if bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("a third Hermes run with the key: %v, want CodeConflict", err)
	}
}
