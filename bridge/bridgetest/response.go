package bridgetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// TestResponseStore runs the conformance suite of bridge.ResponseStore,
// one subtest per behaviour. open is called once per subtest and must
// return a new, empty store that implements it; TestResponseStore closes
// it when the subtest ends.
func TestResponseStore(t *testing.T, open func(t *testing.T) bridge.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s bridge.ResponseStore)
	}{
		{"PutGet", testResponsePutGet},
		{"Principal", testResponsePrincipal},
		{"RunResponses", testRunResponses},
		{"Finish", testResponseFinish},
		{"End", testResponseEnd},
		{"Delete", testResponseDelete},
		{"NotFound", testResponseNotFound},
		{"Concurrent", testResponseConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			rs, ok := s.(bridge.ResponseStore)
			if !ok {
				t.Fatalf("%T does not implement bridge.ResponseStore", s)
			}
			tt.fn(t, rs)
		})
	}
}

// newResponse is a stored response of principal in run r1 of session s1.
func newResponse(principal, id string, after int64) *bridge.StoredResponse {
	return &bridge.StoredResponse{
		ID: id, Principal: principal, RunID: "r1", SessionID: "s1", After: after, Previous: "resp_0",
		Created: T0, Model: "gpt-test", Background: true,
		Echo:  json.RawMessage(`{"temperature":0.5,"metadata":{"k":"v"}}`),
		Input: json.RawMessage(`[{"id":"msg_1","type":"message","role":"user","content":"hi"}]`),
	}
}

func mustPutResponse(t *testing.T, s bridge.ResponseStore, r *bridge.StoredResponse) {
	t.Helper()
	if err := s.PutResponse(t.Context(), r); err != nil {
		t.Fatalf("PutResponse(%s): %v", r.ID, err)
	}
}

func mustResponse(t *testing.T, s bridge.ResponseStore, principal, id string) *bridge.StoredResponse {
	t.Helper()
	r, err := s.Response(t.Context(), principal, id)
	if err != nil {
		t.Fatalf("Response(%s, %s): %v", principal, id, err)
	}
	return r
}

func testResponsePutGet(t *testing.T, s bridge.ResponseStore) {
	want := newResponse("alice", "resp_1", 7)
	mustPutResponse(t, s, want)
	got := mustResponse(t, s, "alice", "resp_1")
	wantUTC(t, "Created", got.Created)
	diff(t, "response", want, got)
	// The bare minimum: no JSON, no times.
	min := &bridge.StoredResponse{ID: "resp_2", RunID: "r2", SessionID: "s2"}
	mustPutResponse(t, s, min)
	diff(t, "minimal response", min, mustResponse(t, s, "", "resp_2"))
	wantCode(t, "PutResponse of an existing id", s.PutResponse(t.Context(), newResponse("alice", "resp_1", 9)), bridge.CodeConflict)
	diff(t, "response after a conflict", want, mustResponse(t, s, "alice", "resp_1"))
}

func testResponsePrincipal(t *testing.T, s bridge.ResponseStore) {
	mustPutResponse(t, s, newResponse("alice", "resp_1", 0))
	_, err := s.Response(t.Context(), "bob", "resp_1")
	wantCode(t, "another principal's response", err, bridge.CodeNotFound)
	got, err := s.RunResponses(t.Context(), "bob", "r1")
	if err != nil || len(got) != 0 {
		t.Errorf("RunResponses of another principal = %v, %v; want none", got, err)
	}
	wantCode(t, "FinishResponse by another principal", s.FinishResponse(t.Context(), "bob", "resp_1", json.RawMessage(`{}`)), bridge.CodeNotFound)
	wantCode(t, "DeleteResponse by another principal", s.DeleteResponse(t.Context(), "bob", "resp_1"), bridge.CodeNotFound)
	if err := s.EndResponses(t.Context(), "bob", "s1", 4); err != nil {
		t.Fatal(err)
	}
	r := mustResponse(t, s, "alice", "resp_1")
	if r.Output != nil || r.Deleted || r.End != 0 {
		t.Errorf("another principal changed the response: %+v", r)
	}
	// The same id may name another principal's response.
	mustPutResponse(t, s, newResponse("bob", "resp_1", 3))
	if got := mustResponse(t, s, "bob", "resp_1"); got.After != 3 {
		t.Errorf("bob's resp_1 After = %d, want 3", got.After)
	}
}

func testRunResponses(t *testing.T, s bridge.ResponseStore) {
	for _, r := range []*bridge.StoredResponse{
		newResponse("alice", "resp_c", 20),
		newResponse("alice", "resp_a", 0),
		newResponse("alice", "resp_b", 9),
	} {
		mustPutResponse(t, s, r)
	}
	other := newResponse("alice", "resp_x", 1)
	other.RunID = "r2"
	mustPutResponse(t, s, other)
	if err := s.DeleteResponse(t.Context(), "alice", "resp_b"); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunResponses(t.Context(), "alice", "r1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	diff(t, "RunResponses, by After, the deleted one too", []string{"resp_a", "resp_b", "resp_c"}, ids)
	if len(got) == 3 && !got[1].Deleted {
		t.Errorf("RunResponses: resp_b not marked deleted")
	}
	got, err = s.RunResponses(t.Context(), "alice", "r-none")
	if err != nil || len(got) != 0 {
		t.Errorf("RunResponses of a run without responses = %v, %v; want none", got, err)
	}
}

func testResponseFinish(t *testing.T, s bridge.ResponseStore) {
	mustPutResponse(t, s, newResponse("alice", "resp_1", 0))
	out := json.RawMessage(`{"id":"resp_1","object":"response","status":"completed","output":[]}`)
	if err := s.FinishResponse(t.Context(), "alice", "resp_1", out); err != nil {
		t.Fatal(err)
	}
	want := newResponse("alice", "resp_1", 0)
	want.Output = out
	diff(t, "finished response", want, mustResponse(t, s, "alice", "resp_1"))
}

func testResponseEnd(t *testing.T, s bridge.ResponseStore) {
	a, b, c := newResponse("alice", "resp_a", 0), newResponse("alice", "resp_b", 5), newResponse("alice", "resp_c", 0)
	c.SessionID = "s2"
	for _, r := range []*bridge.StoredResponse{a, b, c} {
		mustPutResponse(t, s, r)
	}
	if err := s.EndResponses(t.Context(), "alice", "s1", 4); err != nil {
		t.Fatal(err)
	}
	d := newResponse("alice", "resp_d", 9)
	mustPutResponse(t, s, d)
	if err := s.EndResponses(t.Context(), "alice", "s1", 8); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int64{"resp_a": 4, "resp_b": 4, "resp_c": 0, "resp_d": 8} {
		if got := mustResponse(t, s, "alice", id).End; got != want {
			t.Errorf("%s End = %d, want %d (a recorded end stays; another session's is untouched)", id, got, want)
		}
	}
}

func testResponseDelete(t *testing.T, s bridge.ResponseStore) {
	r := newResponse("alice", "resp_1", 3)
	mustPutResponse(t, s, r)
	if err := s.FinishResponse(t.Context(), "alice", "resp_1", json.RawMessage(`{"id":"resp_1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResponse(t.Context(), "alice", "resp_1"); err != nil {
		t.Fatal(err)
	}
	want := *r
	want.Deleted, want.Echo, want.Input, want.Output = true, nil, nil, nil
	diff(t, "deleted response", &want, mustResponse(t, s, "alice", "resp_1"))
}

func testResponseNotFound(t *testing.T, s bridge.ResponseStore) {
	ctx := t.Context()
	_, err := s.Response(ctx, "alice", "resp_none")
	wantCode(t, "Response", err, bridge.CodeNotFound)
	wantCode(t, "FinishResponse", s.FinishResponse(ctx, "alice", "resp_none", json.RawMessage(`{}`)), bridge.CodeNotFound)
	wantCode(t, "DeleteResponse", s.DeleteResponse(ctx, "alice", "resp_none"), bridge.CodeNotFound)
	if err := s.EndResponses(ctx, "alice", "s-none", 3); err != nil {
		t.Errorf("EndResponses of a session without responses: %v", err)
	}
	wantCode(t, "PutResponse without an id", s.PutResponse(ctx, &bridge.StoredResponse{RunID: "r1"}), bridge.CodeInvalid)
}

// testResponseConcurrent: the writes of different parties to one response
// (its output, its end) do not undo each other.
func testResponseConcurrent(t *testing.T, s bridge.ResponseStore) {
	const n = 8
	for i := range n {
		mustPutResponse(t, s, newResponse("alice", "resp_"+string(rune('a'+i)), int64(i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			errs <- s.FinishResponse(t.Context(), "alice", "resp_"+string(rune('a'+i)), json.RawMessage(`{"done":true}`))
		})
	}
	wg.Go(func() { errs <- s.EndResponses(t.Context(), "alice", "s1", 42) })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("concurrent writes did not finish")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		r := mustResponse(t, s, "alice", "resp_"+string(rune('a'+i)))
		if string(r.Output) != `{"done":true}` || r.End != 42 {
			t.Errorf("%s: Output %s End %d, want both written", r.ID, r.Output, r.End)
		}
	}
}
