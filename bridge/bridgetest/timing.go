package bridgetest

import (
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// testRunTimings: the row that ends a run keeps its timings; timings
// learnt later (Batch.Timings) set only what the row has none of; a later
// row without them (a continued run's) keeps them; a run that does not
// exist is skipped; a new run has none.
func testRunTimings(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	r := newRun("r1", "sess_1", "alice", T0)
	r.FirstCommit = at(time.Hour) // a store keeps no timing of a run it creates
	mustRun(t, s, r)
	if got := mustGetRun(t, s, "r1"); !got.FirstCommit.IsZero() || !got.FirstClientByte.IsZero() {
		t.Errorf("a new run has timings %v %v", got.FirstCommit, got.FirstClientByte)
	}
	commit := at(5*time.Millisecond + 250*time.Microsecond)
	r.Status, r.Finished, r.LastSeq, r.FirstCommit, r.FirstClientByte = bridge.StatusCompleted, at(time.Second), 1, commit, time.Time{}
	mustCommit(t, s, &bridge.Batch{Events: TextDeltas("r1", 1, 1), Runs: []*bridge.Run{r}})
	got := mustGetRun(t, s, "r1")
	if !got.FirstCommit.Equal(commit) || !got.FirstClientByte.IsZero() {
		t.Errorf("after the final row: first commit %v, first byte %v; want %v and none", got.FirstCommit, got.FirstClientByte, commit)
	}
	wantUTC(t, "first commit", got.FirstCommit)

	firstByte := at(6 * time.Millisecond)
	mustCommit(t, s, &bridge.Batch{Timings: []bridge.RunTiming{
		{RunID: "r1", FirstCommit: at(time.Minute), FirstClientByte: firstByte}, // the commit is set already
		{RunID: "nope", FirstClientByte: firstByte},
	}})
	got = mustGetRun(t, s, "r1")
	if !got.FirstCommit.Equal(commit) || !got.FirstClientByte.Equal(firstByte) {
		t.Errorf("after late timings: first commit %v, first byte %v; want %v and %v", got.FirstCommit, got.FirstClientByte, commit, firstByte)
	}
	wantUTC(t, "first client byte", got.FirstClientByte)

	r.FirstCommit, r.FirstClientByte, r.Status, r.LastSeq = time.Time{}, time.Time{}, bridge.StatusCompleted, 2
	mustCommit(t, s, &bridge.Batch{Events: TextDeltas("r1", 2, 1), Runs: []*bridge.Run{r}})
	if got = mustGetRun(t, s, "r1"); !got.FirstCommit.Equal(commit) || !got.FirstClientByte.Equal(firstByte) {
		t.Errorf("a later row without timings: first commit %v, first byte %v; want them kept", got.FirstCommit, got.FirstClientByte)
	}
	if _, err := s.Run(t.Context(), "nope"); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("a timing of an unknown run made it: %v", err)
	}
}
