package bridgetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// TestRecordingStore runs the conformance suite of bridge.RecordingStore,
// one subtest per behaviour. open is called once per subtest and must
// return a new, empty store that implements it; TestRecordingStore closes
// it when the subtest ends.
func TestRecordingStore(t *testing.T, open func(t *testing.T) bridge.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s bridge.Store, rs bridge.RecordingStore)
	}{
		{"AddList", testRecordingAddList},
		{"Bounds", testRecordingBounds},
		{"Retention", testRecordingRetention},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			rs, ok := s.(bridge.RecordingStore)
			if !ok {
				t.Fatalf("%T does not implement bridge.RecordingStore", s)
			}
			tt.fn(t, s, rs)
		})
	}
}

func recording(run string, n int, at time.Time) *bridge.Recording {
	return &bridge.Recording{RunID: run, Created: at, Data: json.RawMessage(fmt.Sprintf(`{"method":"POST","url":"/v1/chat/completions","n":%d,"body":"data: {}\n\n"}`, n))}
}

func mustRecord(t *testing.T, rs bridge.RecordingStore, r *bridge.Recording) {
	t.Helper()
	if err := rs.AddRecording(t.Context(), r); err != nil {
		t.Fatalf("AddRecording(%s): %v", r.RunID, err)
	}
}

func mustRecordings(t *testing.T, rs bridge.RecordingStore, run string) []bridge.Recording {
	t.Helper()
	got, err := rs.Recordings(t.Context(), run)
	if err != nil {
		t.Fatalf("Recordings(%s): %v", run, err)
	}
	return got
}

// testRecordingAddList: a run's recordings come back whole, in the order
// they were added, each with its time in UTC; another run's stay apart; a
// run without any has none.
func testRecordingAddList(t *testing.T, s bridge.Store, rs bridge.RecordingStore) {
	mustSession(t, s, "sess_1", "alice")
	for _, id := range []string{"r1", "r2", "r3"} {
		mustRun(t, s, newRun(id, "sess_1", "alice", T0))
	}
	want := []bridge.Recording{*recording("r1", 1, at(time.Second)), *recording("r1", 2, at(time.Millisecond)), *recording("r1", 3, at(time.Hour))}
	mustRecord(t, rs, recording("r2", 9, T0))
	for i := range want {
		mustRecord(t, rs, &want[i])
	}
	got := mustRecordings(t, rs, "r1")
	diff(t, "recordings of r1", want, got)
	wantUTC(t, "recordings' times", got[0].Created, got[1].Created)
	if got := mustRecordings(t, rs, "r2"); len(got) != 1 || !strings.Contains(string(got[0].Data), `"n":9`) {
		t.Errorf("recordings of r2 = %s", got)
	}
	if got := mustRecordings(t, rs, "r3"); len(got) != 0 {
		t.Errorf("a run without recordings has %d", len(got))
	}
	if got := mustRecordings(t, rs, "nope"); len(got) != 0 {
		t.Errorf("an unknown run has %d recordings", len(got))
	}
}

// testRecordingBounds: a recording longer than MaxRecording, one more than
// MaxRecordings of a run, and one of an unknown run are refused, and
// nothing of them is kept.
func testRecordingBounds(t *testing.T, s bridge.Store, rs bridge.RecordingStore) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("r1", "sess_1", "alice", T0))
	mustRun(t, s, newRun("r2", "sess_1", "alice", T0))
	big := &bridge.Recording{RunID: "r1", Created: T0, Data: json.RawMessage(`"` + strings.Repeat("x", bridge.MaxRecording) + `"`)}
	wantCode(t, "a recording over the cap", rs.AddRecording(ctx, big), bridge.CodeTooLarge)
	for i := range bridge.MaxRecordings {
		mustRecord(t, rs, recording("r1", i, T0))
	}
	wantCode(t, "one recording more than a run keeps", rs.AddRecording(ctx, recording("r1", -1, T0)), bridge.CodeTooLarge)
	if n := len(mustRecordings(t, rs, "r1")); n != bridge.MaxRecordings {
		t.Errorf("r1 has %d recordings, want %d", n, bridge.MaxRecordings)
	}
	mustRecord(t, rs, recording("r2", 1, T0)) // the bound is per run
	wantCode(t, "a recording of an unknown run", rs.AddRecording(ctx, recording("nope", 1, T0)), bridge.CodeNotFound)
}

// testRecordingRetention: DeleteEventsBefore takes the recordings of the
// runs whose events it deletes, and leaves the others'.
func testRecordingRetention(t *testing.T, s bridge.Store, rs bridge.RecordingStore) {
	mustSession(t, s, "sess_1", "alice")
	cutoff := at(2 * time.Hour)
	for _, sp := range []struct {
		id       string
		status   bridge.Status
		finished time.Time
	}{{"old", bridge.StatusCompleted, at(time.Hour)}, {"new", bridge.StatusCompleted, at(3 * time.Hour)}, {"running", bridge.StatusRunning, time.Time{}}} {
		r := newRun(sp.id, "sess_1", "alice", T0)
		mustRun(t, s, r)
		r.Status, r.Finished, r.LastSeq = sp.status, sp.finished, 1
		mustCommit(t, s, &bridge.Batch{Events: TextDeltas(sp.id, 1, 1), Runs: []*bridge.Run{r}})
		mustRecord(t, rs, recording(sp.id, 1, T0))
	}
	if _, err := s.DeleteEventsBefore(t.Context(), cutoff); err != nil {
		t.Fatalf("DeleteEventsBefore: %v", err)
	}
	for id, want := range map[string]int{"old": 0, "new": 1, "running": 1} {
		if n := len(mustRecordings(t, rs, id)); n != want {
			t.Errorf("run %s keeps %d recordings after retention, want %d", id, n, want)
		}
	}
}
