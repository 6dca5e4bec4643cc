package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// MustOpen opens a store on path, closed when tb ends.
func MustOpen(tb testing.TB, path string, opt sqlite.Options) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(tb.Context(), path, opt)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	bridgetest.TestStore(t, func(t *testing.T) bridge.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s // TestStore closes it
	})
}

func TestResponseStore(t *testing.T) {
	bridgetest.TestResponseStore(t, func(t *testing.T) bridge.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestRecordingStore(t *testing.T) {
	bridgetest.TestRecordingStore(t, func(t *testing.T) bridge.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestStoreMemory(t *testing.T) {
	bridgetest.TestStore(t, func(t *testing.T) bridge.Store {
		s, err := sqlite.Open(t.Context(), ":memory:", sqlite.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// rawDB opens the file directly, for looking at what the store wrote.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bridge.db")
	MustOpen(t, path, sqlite.Options{})
	var mode string
	if err := rawDB(t, path).QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestMigrationsReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bridge.db")
	for i := range 3 {
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		if err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	rows, err := rawDB(t, path).QueryContext(t.Context(), `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type applied struct {
		Version int
		Name    string
	}
	var got []applied
	for rows.Next() {
		var a applied
		if err := rows.Scan(&a.Version, &a.Name); err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []applied{{1, "0001_init.sql"}, {2, "0002_run_render.sql"}, {3, "0003_event_packs.sql"}, {4, "0004_client_id_partial.sql"},
		{5, "0005_fewer_pages.sql"}, {6, "0006_pack_deltas.sql"}, {7, "0007_superseded.sql"}, {8, "0008_runs_by_created.sql"},
		{9, "0009_responses.sql"}, {10, "0010_recordings.sql"}, {11, "0011_sessions_by_principal.sql"}, {12, "0012_run_timings.sql"}, {13, "0013_session_seq.sql"},
		{14, "0014_idempotency_keys.sql"}, {15, "0015_no_events_by_sseq.sql"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("schema_migrations mismatch (-want +got):\n%s", d)
	}
}

// TestRefusesNewerDatabase: a database a newer bridge migrated (it may hold
// rows this one cannot read) is refused with a clear error, not misread.
func TestRefusesNewerDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bridge.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := rawDB(t, path).ExecContext(t.Context(), `INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 1)`); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	if err == nil || !strings.Contains(err.Error(), "migrated by a newer bridge (migration 9999") {
		t.Fatalf("Open of a newer database: %v", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	t0 := bridgetest.T0

	sess := &bridge.Session{ID: "sess_1", Principal: "alice", Created: t0, Updated: t0, State: []byte(`{"a":1}`)}
	run := &bridge.Run{ID: "run_1", SessionID: "sess_1", ClientRunID: "c1", Principal: "alice", Inbound: "openai",
		Status: bridge.StatusRunning, Created: t0, Usage: bridge.Usage{InputTokens: bridge.Int64(3)}}
	input := []bridge.Message{{RunID: "run_1", Created: t0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}
	events := bridgetest.TextDeltas("run_1", 1, 300)
	ended := *run
	ended.Status, ended.Finished, ended.LastSeq = bridge.StatusCompleted, t0.Add(time.Minute), 300
	answer := bridge.Message{RunID: "run_1", Created: t0.Add(time.Minute), Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("yo")}}
	mapping := bridge.IDMapping{Kind: bridge.IDToolCall, Scope: "claude", Local: "call_1", Remote: "toolu_1"}

	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, run, input); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &bridge.Batch{Events: events, Runs: []*bridge.Run{&ended}, Messages: []bridge.Message{answer}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutID(ctx, mapping); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = MustOpen(t, path, sqlite.Options{})
	gotSess, err := s.Session(ctx, "alice", "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sess, gotSess); d != "" {
		t.Errorf("Session mismatch (-want +got):\n%s", d)
	}
	gotRun, err := s.Run(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&ended, gotRun); d != "" {
		t.Errorf("Run mismatch (-want +got):\n%s", d)
	}
	gotEvents, err := s.Events(ctx, "run_1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(events, gotEvents); d != "" {
		t.Errorf("Events mismatch (-want +got):\n%s", d)
	}
	msgs, more, err := s.Messages(ctx, "alice", "sess_1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(input, answer), msgs, cmpopts.IgnoreFields(bridge.Message{}, "ID")); d != "" || more {
		t.Errorf("Messages mismatch (more=%v) (-want +got):\n%s", more, d)
	}
	if remote, err := s.RemoteID(ctx, mapping.Kind, mapping.Scope, mapping.Local); err != nil || remote != mapping.Remote {
		t.Errorf("RemoteID = %q, %v; want %q", remote, err, mapping.Remote)
	}
}

// TestClock checks that times the caller leaves zero come from Options.Now.
func TestClock(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	s := MustOpen(t, filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{Now: func() time.Time { return now }})

	if err := s.CreateSession(ctx, &bridge.Session{ID: "sess_1"}); err != nil {
		t.Fatal(err)
	}
	sess, err := s.Session(ctx, "", "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	if !sess.Created.Equal(now) || !sess.Updated.Equal(now) {
		t.Errorf("session times = %v, %v; want %v", sess.Created, sess.Updated, now)
	}
	if err := s.CreateRun(ctx, &bridge.Run{ID: "run_1", SessionID: "sess_1", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &bridge.Batch{Messages: []bridge.Message{{RunID: "run_1", Role: bridge.RoleUser}}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := s.Messages(ctx, "", "sess_1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Created.Equal(now) || len(msgs) != 1 || !msgs[0].Created.Equal(now) {
		t.Errorf("run created %v, messages %+v; want times %v", r.Created, msgs, now)
	}
}

// TestCommitCodes checks the codes a failed Commit reports.
func TestCommitCodes(t *testing.T) {
	ctx := t.Context()
	s := MustOpen(t, filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err := s.CreateRun(ctx, &bridge.Run{ID: "run_1", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("run_1", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	// Large batches are written many rows per statement; a failure still
	// names the event.
	dupInChunk := bridgetest.TextDeltas("run_1", 3, 40)
	dupInChunk[20].Seq = 2
	tests := []struct {
		name string
		b    bridge.Batch
		want bridge.Code
		says string
	}{
		{"duplicate event", bridge.Batch{Events: bridgetest.TextDeltas("run_1", 2, 1)}, bridge.CodeConflict, "run=run_1 seq=2"},
		{"duplicate event in a large batch", bridge.Batch{Events: dupInChunk}, bridge.CodeConflict, "run=run_1 seq=2"},
		{"duplicate event at the end of a large batch", bridge.Batch{Events: bridgetest.TextDeltas("run_1", -37, 40)}, bridge.CodeConflict, "run=run_1 seq=1"},
		{"event of unknown run", bridge.Batch{Events: bridgetest.TextDeltas("run_2", 1, 1)}, bridge.CodeNotFound, "run=run_2 seq=1"},
		{"events of unknown run", bridge.Batch{Events: bridgetest.TextDeltas("run_2", 1, 40)}, bridge.CodeNotFound, "run=run_2 seq=1"},
		{"unknown run", bridge.Batch{Runs: []*bridge.Run{{ID: "run_2", Status: bridge.StatusCompleted}}}, bridge.CodeNotFound, `"run_2"`},
		{"message of unknown run", bridge.Batch{Messages: []bridge.Message{{RunID: "run_2", Role: bridge.RoleUser}}}, bridge.CodeNotFound, `"run_2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Commit(ctx, &tt.b)
			if got := bridge.ErrorCode(err); got != tt.want {
				t.Errorf("Commit: code %s (%v), want %s", got, err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Commit: error %q does not say %q", err, tt.says)
			}
		})
	}
	evs, err := s.Events(ctx, "run_1", 0, 0)
	if err != nil || len(evs) != 2 {
		t.Errorf("after failed commits: %d events, %v; want 2", len(evs), err)
	}
}

// TestCommitCanceled checks that a batch whose context ends writes nothing.
func TestCommitCanceled(t *testing.T) {
	s := MustOpen(t, filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err := s.CreateRun(t.Context(), &bridge.Run{ID: "run_1", Status: bridge.StatusRunning}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("run_1", 1, 100)}); err == nil {
		t.Errorf("Commit with a canceled context succeeded")
	}
	evs, err := s.Events(t.Context(), "run_1", 0, 0)
	if err != nil || len(evs) != 0 {
		t.Errorf("after a canceled commit: %d events, %v; want none", len(evs), err)
	}
}

// TestEventPacks: a run's consecutive deltas share a row, which no reader
// can tell: every cursor and page size reads exactly the events committed,
// a seq inside a pack conflicts, and a running run's last seq, a restart's
// interrupting final and the retention count all see the pack's events.
func TestEventPacks(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	s := MustOpen(t, path, sqlite.Options{})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, id := range []string{"run_a", "run_b"} {
		if err := s.CreateRun(ctx, &bridge.Run{ID: id, Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// run_a: run_started, 5 deltas, a tool call start, 3 reasoning deltas;
	// interleaved in one batch with run_b's deltas; then 2 more deltas.
	var want []bridge.Event
	seq := int64(0)
	add := func(k bridge.Kind, text string) bridge.Event {
		seq++
		ev := bridge.Event{RunID: "run_a", Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Kind: k, Source: bridge.SourceModel, Text: text}
		if k == bridge.KindToolCallStarted {
			ev.Text, ev.ToolCall = "", &bridge.ToolCall{ID: "call_1", Name: "f"}
		}
		want = append(want, ev)
		return ev
	}
	var batch []bridge.Event
	b := bridgetest.TextDeltas("run_b", 1, 4)
	batch = append(batch, add(bridge.KindRunStarted, ""), b[0])
	for i := range 5 {
		batch = append(batch, add(bridge.KindTextDelta, fmt.Sprintf("t%d ", i)))
		if i == 2 {
			batch = append(batch, b[1], b[2])
		}
	}
	batch = append(batch, add(bridge.KindToolCallStarted, ""), b[3])
	for i := range 3 {
		batch = append(batch, add(bridge.KindReasoningDelta, fmt.Sprintf("r%d ", i)))
	}
	if err := s.Commit(ctx, &bridge.Batch{Events: batch}); err != nil {
		t.Fatal(err)
	}
	more := []bridge.Event{add(bridge.KindTextDelta, "u0 "), add(bridge.KindTextDelta, "u1 ")}
	if err := s.Commit(ctx, &bridge.Batch{Events: more}); err != nil {
		t.Fatal(err)
	}
	var rows, packed int
	if err := rawDB(t, path).QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN last > seq THEN 1 END) FROM events WHERE run_id = 'run_a'`).Scan(&rows, &packed); err != nil {
		t.Fatal(err)
	}
	if rows != 5 || packed != 3 {
		t.Errorf("run_a is %d rows (%d packs), want 5 rows (3 packs)", rows, packed)
	}
	for after := int64(0); after <= seq; after++ {
		for _, limit := range []int{0, 1, 2, 3, 7} {
			got, err := s.Events(ctx, "run_a", after, limit)
			if err != nil {
				t.Fatal(err)
			}
			exp := want[after:]
			if limit > 0 && len(exp) > limit {
				exp = exp[:limit]
			}
			if d := cmp.Diff(exp, got, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("Events(after %d, limit %d) (-want +got):\n%s", after, limit, d)
			}
		}
	}
	if got, err := s.Events(ctx, "run_b", 0, 0); err != nil || cmp.Diff(b, got) != "" {
		t.Errorf("run_b's events: %v\n%s", err, cmp.Diff(b, got))
	}
	// A seq inside a pack, alone or at the end of a new stretch.
	for _, dup := range [][]bridge.Event{
		bridgetest.TextDeltas("run_a", 4, 1),
		bridgetest.TextDeltas("run_a", 10, 5),
	} {
		err := s.Commit(ctx, &bridge.Batch{Events: dup})
		if bridge.ErrorCode(err) != bridge.CodeConflict || !strings.Contains(err.Error(), fmt.Sprintf("seq=%d", dup[0].Seq)) {
			t.Errorf("committing seq %d again: %v, want a conflict naming it", dup[0].Seq, err)
		}
	}
	r, err := s.Run(ctx, "run_a")
	if err != nil || r.LastSeq != seq {
		t.Errorf("running run_a: last seq %v (%v), want %d", r, err, seq)
	}
	ids, err := s.InterruptRunning(ctx, "bridge restarted", t0.Add(time.Minute))
	if err != nil || len(ids) != 2 {
		t.Fatalf("InterruptRunning: %v %v", ids, err)
	}
	evs, err := s.Events(ctx, "run_a", seq, 0)
	if err != nil || len(evs) != 1 || evs[0].Seq != seq+1 || evs[0].Kind != bridge.KindFinal {
		t.Errorf("after the restart: %v %v, want the final at seq %d", evs, err, seq+1)
	}
	n, err := s.DeleteEventsBefore(ctx, t0.Add(2*time.Minute))
	if err != nil || n != int64(len(want)+1+len(b)+1) {
		t.Errorf("DeleteEventsBefore: %d %v, want %d", n, err, len(want)+1+len(b)+1)
	}
}

// TestMigrationFewerPages: migration 0005 rebuilds sessions (WITHOUT
// ROWID) and messages (no AUTOINCREMENT) in a database the earlier
// migrations made, keeping every row and every message position, so the
// runColumns04 are the columns of runs at version 4.
const runColumns04 = `id, session_id, client_run_id, principal, inbound, outbound, upstream, model,
	status, stop_reason, reason, usage, dropped, trace_id, upstream_run_id, created, finished, last_seq, render`

// history's ids and cursors hold; a new message is numbered after them.
func TestMigrationFewerPages(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	t0 := bridgetest.T0
	// Rows written by the store, to copy into a database at version 4.
	src := filepath.Join(dir, "src.db")
	s := MustOpen(t, src, sqlite.Options{})
	sess := &bridge.Session{ID: "sess_1", Principal: "alice", Created: t0, Updated: t0, State: []byte(`{"a":1}`)}
	run := &bridge.Run{ID: "run_1", SessionID: "sess_1", Principal: "alice", Status: bridge.StatusRunning, Created: t0}
	input := []bridge.Message{
		{RunID: "run_1", Created: t0, Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("be brief")}},
		{RunID: "run_1", Created: t0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}},
	}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, run, input); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	old := filepath.Join(dir, "old.db")
	db := rawDB(t, old)
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, name := range []string{"0001_init.sql", "0002_run_render.sql", "0003_event_packs.sql", "0004_client_id_partial.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 1)`, v+1, name); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := db.Conn(ctx) // ATTACH holds for one connection
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ATTACH DATABASE '` + src + `' AS src`,
		`INSERT INTO sessions (id, principal, created, updated, state) SELECT id, principal, created, updated, state FROM src.sessions`,
		`INSERT INTO runs SELECT ` + strings.ReplaceAll(runColumns04, "\n", " ") + ` FROM src.runs`,
		// positions 11 and 12, after a gap: what AUTOINCREMENT may leave
		`INSERT INTO messages (position, session_id, run_id, role, payload, fingerprint, created)
			SELECT position + 10, session_id, run_id, role, payload, fingerprint, created FROM src.messages`,
		`DETACH DATABASE src`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	db.Close()

	s = MustOpen(t, old, sqlite.Options{}) // applies 0005
	if got, err := s.Session(ctx, "alice", "sess_1"); err != nil || !cmp.Equal(sess, got) {
		t.Errorf("Session after the migration: %+v, %v; want %+v", got, err, sess)
	}
	msgs, _, err := s.Messages(ctx, "alice", "sess_1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ids := []string{msgs[0].ID, msgs[1].ID}; len(msgs) != 2 || ids[0] != "m11" || ids[1] != "m12" {
		t.Errorf("message ids %v, want [m11 m12]", ids)
	}
	if d := cmp.Diff(input, msgs, cmpopts.IgnoreFields(bridge.Message{}, "ID")); d != "" {
		t.Errorf("Messages after the migration (-want +got):\n%s", d)
	}
	answer := bridge.Message{RunID: "run_1", Created: t0, Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("yo")}}
	if err := s.Commit(ctx, &bridge.Batch{Messages: []bridge.Message{answer}}); err != nil {
		t.Fatal(err)
	}
	if msgs, _, err = s.Messages(ctx, "alice", "sess_1", 0, 0); err != nil || len(msgs) != 3 || msgs[2].ID != "m13" {
		t.Errorf("after a new message: %+v, %v; want it as m13", msgs, err)
	}
	raw := rawDB(t, old)
	var sessSQL, msgSQL string
	var seq int
	if err := raw.QueryRowContext(ctx, `SELECT (SELECT sql FROM sqlite_master WHERE name = 'sessions'),
		(SELECT sql FROM sqlite_master WHERE name = 'messages'),
		(SELECT count(*) FROM sqlite_sequence WHERE name = 'messages')`).Scan(&sessSQL, &msgSQL, &seq); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sessSQL, "WITHOUT ROWID") || strings.Contains(msgSQL, "AUTOINCREMENT") || seq != 0 {
		t.Errorf("schema after the migration: sessions %q, messages %q, %d sqlite_sequence rows for messages", sessSQL, msgSQL, seq)
	}
	var fk, integrity string
	if err := raw.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity_check %q, %v", integrity, err)
	}
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != "0" {
		t.Errorf("foreign_key_check: %s violations, %v", fk, err)
	}
}

// TestReadOnly opens a file another Store is writing, as the soak's checks
// do: it reads what was committed, its integrity check passes, a write
// fails, and a file that does not exist or is at another schema is refused.
func TestReadOnly(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	w := MustOpen(t, path, sqlite.Options{})
	sess := &bridge.Session{ID: "sess_1", Created: bridgetest.T0, Updated: bridgetest.T0}
	if err := w.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	run := &bridge.Run{ID: "run_1", SessionID: "sess_1", Inbound: "openai", Status: bridge.StatusRunning, Created: bridgetest.T0}
	if err := w.CreateRun(ctx, run, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("run_1", 1, 40)}); err != nil {
		t.Fatal(err)
	}

	r := MustOpen(t, path, sqlite.Options{ReadOnly: true})
	runs, err := r.ListRuns(ctx, bridge.RunFilter{Status: bridge.StatusRunning})
	if err != nil || len(runs) != 1 || runs[0].ID != "run_1" {
		t.Fatalf("ListRuns(running) = %v, %v; want run_1", runs, err)
	}
	if evs, err := r.Events(ctx, "run_1", 0, 0); err != nil || len(evs) != 40 {
		t.Fatalf("Events = %d events, %v; want 40", len(evs), err)
	}
	if s, err := r.Integrity(ctx); err != nil || s != "ok" {
		t.Fatalf("Integrity = %q, %v", s, err)
	}
	if err := r.CreateSession(ctx, &bridge.Session{ID: "sess_2"}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("CreateSession on a read-only store: %v", err)
	}
	// What the writer commits later is seen too.
	if err := w.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("run_1", 41, 2)}); err != nil {
		t.Fatal(err)
	}
	if evs, err := r.Events(ctx, "run_1", 40, 0); err != nil || len(evs) != 2 {
		t.Fatalf("Events after 40 = %d events, %v; want 2", len(evs), err)
	}

	if _, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "none.db"), sqlite.Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only Open of a missing file succeeded")
	}
	if _, err := rawDB(t, path).ExecContext(ctx, `INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "migration 9999") {
		t.Fatalf("read-only Open of a newer database: %v", err)
	}
}

// TestMigrationResponses: the stored responses a bridge kept in id_map
// (six kinds of their own) move to the responses table, and leave id_map.
func TestMigrationResponses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join("migrations", "000[1-8]_*.sql"))
	if err != nil || len(names) != 8 {
		t.Fatalf("migrations 1-8: %v, %v", names, err)
	}
	for v, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 1)`, v+1, filepath.Base(name)); err != nil {
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
		{"response", "alice", "resp_3", `{"id":"resp_3","run":"","session":"","after":0,"created":0,"model":"","deleted":true}`},
		{"tool_call", "up", "call_1", "call_up_1"},
	} {
		if _, err := db.ExecContext(ctx, `INSERT INTO id_map (kind, scope, local, remote) VALUES (?, ?, ?, ?)`, row[0], row[1], row[2], row[3]); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s := MustOpen(t, path, sqlite.Options{}) // applies 0009
	want := []*bridge.StoredResponse{
		{ID: "resp_1", Principal: "alice", RunID: "run_1", SessionID: "sess_1", Created: time.Unix(1740830400, 0).UTC(), Model: "m",
			Background: true, Echo: json.RawMessage(`{"temperature":0.5}`), Input: json.RawMessage(`[{"id":"msg_1","type":"message"}]`),
			Output: json.RawMessage(`{"id":"resp_1","object":"response"}`), End: 4},
		{ID: "resp_2", Principal: "alice", RunID: "run_1", SessionID: "sess_1", After: 6, Previous: "resp_1",
			Created: time.Unix(1740830401, 0).UTC(), Model: "m"},
	}
	got, err := s.RunResponses(ctx, "alice", "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("responses after the migration (-want +got):\n%s", d)
	}
	if r, err := s.Response(ctx, "alice", "resp_3"); err != nil || !r.Deleted {
		t.Errorf("a deleted response after the migration: %+v, %v; want it marked deleted", r, err)
	}
	var n int
	if err := rawDB(t, path).QueryRowContext(ctx, `SELECT count(*) FROM id_map WHERE kind LIKE 'response%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d response rows left in id_map (%v), want 0", n, err)
	}
	if v, err := s.RemoteID(ctx, bridge.IDToolCall, "up", "call_1"); err != nil || v != "call_up_1" {
		t.Errorf("another id mapping after the migration: %q, %v", v, err)
	}
}

// TestMigrationSessionSeq: the events stored before 0013 get one number
// per run, a session's runs in the order they were created, and the
// session's next commit goes on after them.
func TestMigrationSessionSeq(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	s := MustOpen(t, path, sqlite.Options{})
	if err := s.CreateSession(ctx, &bridge.Session{ID: "sess_1", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	t0 := bridgetest.T0
	for i, id := range []string{"run_b", "run_a", "run_c"} { // created in this order
		r := &bridge.Run{ID: id, SessionID: "sess_1", Principal: "alice", Status: bridge.StatusRunning, Created: t0.Add(time.Duration(i) * time.Second)}
		if id == "run_c" {
			r.SessionID = "" // a run of no session
		}
		if err := s.CreateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Interleaved commits, which the old schema did not number.
	for _, b := range [][]bridge.Event{bridgetest.TextDeltas("run_a", 1, 3), bridgetest.TextDeltas("run_b", 1, 2),
		bridgetest.TextDeltas("run_a", 4, 1), bridgetest.TextDeltas("run_c", 1, 1)} {
		if err := s.Commit(ctx, &bridge.Batch{Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	// (0015 dropped 0013's index; applied again, 0013 makes it and 0015
	// drops it again.)
	for _, q := range []string{`ALTER TABLE events DROP COLUMN sseq`, `DROP TABLE session_seqs`,
		`DELETE FROM schema_migrations WHERE version IN (13, 15)`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	s = MustOpen(t, path, sqlite.Options{}) // applies 0013 and 0015
	if err := s.Commit(ctx, &bridge.Batch{Events: bridgetest.TextDeltas("run_a", 5, 1)}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.SessionEvents(ctx, "alice", "sess_1", bridge.SessionPos{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s@%d", e.ID(), e.SessionSeq))
	}
	want := []string{"run_b:1@1", "run_b:2@1", "run_a:1@2", "run_a:2@2", "run_a:3@2", "run_a:4@2", "run_a:5@3"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SessionEvents after the migration (-want +got):\n%s", d)
	}
	if evs, err := s.Events(ctx, "run_c", 0, 0); err != nil || len(evs) != 1 || evs[0].SessionSeq != 0 {
		t.Errorf("the run of no session: %+v, %v; want its event unnumbered", evs, err)
	}
	if n, err := s.SessionSeq(ctx, "alice", "sess_1"); err != nil || n != 3 {
		t.Errorf("SessionSeq = %d, %v; want 3", n, err)
	}
}

// TestMigrationIdempotencyKeys: runs made twice with one Hermes
// Idempotency-Key before 0014 keep the key on the newest (the one
// RunByClientID found), other dialects' repeated client run ids stay, and
// from then on a key is one run's.
func TestMigrationIdempotencyKeys(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	s := MustOpen(t, path, sqlite.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	for _, q := range []string{`DROP INDEX runs_by_idempotency_key`, `DELETE FROM schema_migrations WHERE version = 14`,
		`INSERT INTO sessions (id, principal, created, updated) VALUES ('sess_1', 'alice', 1, 1)`,
		`INSERT INTO runs (id, session_id, client_run_id, principal, inbound, status, created) VALUES
			('run_old', 'sess_1', 'k', 'alice', 'hermes', 'completed', 1), ('run_new', 'sess_1', 'k', 'alice', 'hermes', 'completed', 2),
			('run_o1', 'sess_1', 'k', 'alice', 'openai', 'completed', 3), ('run_o2', 'sess_1', 'k', 'alice', 'openai', 'completed', 4)`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	s = MustOpen(t, path, sqlite.Options{}) // applies 0014
	for id, want := range map[string]string{"run_old": "", "run_new": "k", "run_o1": "k", "run_o2": "k"} {
		if r, err := s.Run(ctx, id); err != nil || r.ClientRunID != want {
			t.Errorf("%s after the migration: %+v, %v; want client run id %q", id, r, err, want)
		}
	}
	err := s.CreateRun(ctx, &bridge.Run{ID: "run_again", SessionID: "sess_1", ClientRunID: "k", Principal: "alice", Inbound: "hermes",
		Status: bridge.StatusRunning}, nil)
	if bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("a third Hermes run with the key: %v, want CodeConflict", err)
	}
}

// TestMigrationSessionsByPrincipal: 0011 keeps a database's sessions, their
// messages and the upstreams' id-map entries, now named by principal and
// id: a keyed principal's session is found with its principal (and its
// messages with it), its upstream entries (plain and the ADK client's
// "bridge-session:") move to principal U+001F id, and the anonymous
// principal's entries and the ADK dialect's own (scope adk-in:...) stay.
func TestMigrationSessionsByPrincipal(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for v, name := range names {
		if strings.HasPrefix(filepath.Base(name), "0011_") {
			break
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 1)`, v+1, filepath.Base(name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, principal, created, updated) VALUES ('demo', 'alice', 1, 1), ('anon', '', 1, 1)`,
		`INSERT INTO runs (id, session_id, principal, status, created) VALUES ('run_a', 'demo', 'alice', 'completed', 1), ('run_n', 'anon', '', 'completed', 2)`,
		`INSERT INTO messages (session_id, run_id, role, payload, fingerprint, created) VALUES
			('demo', 'run_a', 'user', '{"role":"user","parts":[{"type":"text","text":"alice says"}]}', 'f1', 1),
			('anon', 'run_n', 'user', '{"role":"user","parts":[{"type":"text","text":"anon says"}]}', 'f2', 2)`,
		`INSERT INTO id_map (kind, scope, local, remote) VALUES
			('session', 'up', 'demo', 'ctx-alice'), ('session', 'adk', 'bridge-session:demo', 'adk-alice'),
			('session', 'up', 'anon', 'ctx-anon'), ('session', 'adk-in:alice', 'demo', 'sess_x'), ('run', 'up', 'run_a', 'task-a')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := MustOpen(t, path, sqlite.Options{}) // applies 0011
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
	if got, err := s.RemoteID(ctx, bridge.IDRun, "up", "run_a"); err != nil || got != "task-a" {
		t.Errorf("a run's entry after the migration: %q, %v", got, err)
	}
}

// TestSessionSeqCounted: a store counts its sessions' numbers in memory
// (no row written per commit), so these hold across what could lose the
// count: a session's next commit after retention deleted the events that
// held its last number, a store opened again, and commits of another
// connection to the same file (another process) in between.
func TestSessionSeqCounted(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	a := MustOpen(t, path, sqlite.Options{})
	t0 := bridgetest.T0
	create := func(s *sqlite.Store, run string) {
		t.Helper()
		if err := s.CreateRun(ctx, &bridge.Run{ID: run, SessionID: "sess_1", Principal: "alice", Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(s *sqlite.Store, run string, from int64, want int64) {
		t.Helper()
		b := &bridge.Batch{Events: bridgetest.TextDeltas(run, from, 1)}
		if err := s.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := b.Events[0].SessionSeq; got != want {
			t.Errorf("%s:%d numbered %d; want %d", run, from, got, want)
		}
		if n, err := s.SessionSeq(ctx, "alice", "sess_1"); err != nil || n != want {
			t.Errorf("after %s:%d SessionSeq = %d, %v; want %d", run, from, n, err, want)
		}
	}
	create(a, "run_1")
	commit(a, "run_1", 1, 1)
	commit(a, "run_1", 2, 2)

	// Another connection writes the session: a's count is stale, and a
	// must see it (else a gives run_1:3 the number b gave run_2:1).
	b := MustOpen(t, path, sqlite.Options{})
	create(b, "run_2")
	commit(b, "run_2", 1, 3)
	commit(a, "run_1", 3, 4)
	commit(b, "run_2", 2, 5)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Retention deletes every event of the session (its runs ended): the
	// next run's numbers go on after the deleted ones.
	for _, run := range []string{"run_1", "run_2"} {
		done := &bridge.Run{ID: run, SessionID: "sess_1", Principal: "alice", Status: bridge.StatusCompleted, Created: t0, Finished: t0.Add(time.Second)}
		if err := a.Commit(ctx, &bridge.Batch{Runs: []*bridge.Run{done}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.DeleteEventsBefore(ctx, t0.Add(time.Hour)); err != nil || n != 5 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 5 events deleted", n, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = MustOpen(t, path, sqlite.Options{}) // nothing counted in memory
	if n, err := a.SessionSeq(ctx, "alice", "sess_1"); err != nil || n != 5 {
		t.Errorf("SessionSeq with the session's events deleted = %d, %v; want 5", n, err)
	}
	create(a, "run_3")
	commit(a, "run_3", 1, 6)
	commit(a, "run_3", 2, 7)
}

// TestSessionEventsLongRuns: SessionEvents finds a run's first row after
// a position by a binary search of the run's rows (no index of sseq), so
// it is checked on runs of many rows, packs and single events, two runs
// of one session taking turns: from every position, the rest of the
// session's events, once each and in commit order.
func TestSessionEventsLongRuns(t *testing.T) {
	ctx := t.Context()
	s := MustOpen(t, filepath.Join(t.TempDir(), "bridge.db"), sqlite.Options{})
	if err := s.CreateSession(ctx, &bridge.Session{ID: "sess_1", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run_a", "run_b"} {
		if err := s.CreateRun(ctx, &bridge.Run{ID: id, SessionID: "sess_1", Principal: "alice", Status: bridge.StatusRunning, Created: bridgetest.T0}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// 150 commits: run_a's each time (1 to 4 deltas, a pack from 2 on),
	// run_b's every third time (a delta, or a delta and a usage event,
	// which does not pack).
	next := map[string]int64{"run_a": 1, "run_b": 1}
	one := int64(1)
	var (
		want []string
		n    int64 // the session's last number: one a run a commit
	)
	for i := range 150 {
		var b []bridge.Event
		add := func(evs ...bridge.Event) {
			if len(b) == 0 || b[len(b)-1].RunID != evs[0].RunID {
				n++
			}
			for _, e := range evs {
				want = append(want, fmt.Sprintf("%s:%d@%d", e.RunID, e.Seq, n))
				next[e.RunID]++
			}
			b = append(b, evs...)
		}
		if i%3 == 0 {
			add(bridgetest.TextDeltas("run_b", next["run_b"], 1)...)
			if i%2 == 0 {
				add(bridge.Event{RunID: "run_b", Seq: next["run_b"], Time: bridgetest.T0, Kind: bridge.KindUsage, Source: bridge.SourceModel, Usage: &bridge.Usage{InputTokens: &one}})
			}
		}
		add(bridgetest.TextDeltas("run_a", next["run_a"], 1+i%4)...)
		if err := s.Commit(ctx, &bridge.Batch{Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	// Within a commit, SessionEvents gives the batch's runs in the order
	// their first events came (run_b's first here): the same as want.
	order := func(evs []bridge.Event) []string {
		var o []string
		for _, e := range evs {
			o = append(o, fmt.Sprintf("%s:%d@%d", e.RunID, e.Seq, e.SessionSeq))
		}
		return o
	}
	all, err := s.SessionEvents(ctx, "alice", "sess_1", bridge.SessionPos{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, order(all)); d != "" {
		t.Fatalf("SessionEvents from the start (-want +got):\n%s", d)
	}
	for i := range all {
		evs, err := s.SessionEvents(ctx, "alice", "sess_1", all[i].Pos(), 7)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(order(all[i+1:min(i+8, len(all))]), order(evs)); d != "" {
			t.Fatalf("SessionEvents after %s, a page of 7 (-want +got):\n%s", all[i].ID(), d)
		}
	}
}
