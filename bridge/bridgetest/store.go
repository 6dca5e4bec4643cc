package bridgetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bridge-dev/bridge/bridge"
)

// T0 is the base of every time the suite writes. It is in UTC and has whole
// microseconds, the finest resolution every store keeps (a PostgreSQL
// timestamp stops there).
var T0 = time.Date(2025, time.March, 1, 12, 0, 0, 123456000, time.UTC)

// at is T0 plus d.
func at(d time.Duration) time.Time { return T0.Add(d) }

// TestStore runs the conformance suite of bridge.Store, one subtest per
// behaviour. open is called once per subtest and must return a new, empty
// store; TestStore closes it when the subtest ends. Subtests do not run in
// parallel with each other.
func TestStore(t *testing.T, open func(t *testing.T) bridge.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s bridge.Store)
	}{
		{"Session", testSession},
		{"Run", testRun},
		{"IdempotencyKey", testIdempotencyKey},
		{"ListRuns", testListRuns},
		{"Events", testEvents},
		{"EventsAfterLimit", testEventsAfterLimit},
		{"LastSeq", testLastSeq},
		{"CommitRuns", testCommitRuns},
		{"CommitAtomic", testCommitAtomic},
		{"CommitCreates", testCommitCreates},
		{"Messages", testMessages},
		{"MessagesPaging", testMessagesPaging},
		{"RunMessages", testRunMessages},
		{"Supersede", testSupersede},
		{"SessionsPerPrincipal", testSessionsPerPrincipal},
		{"IDMap", testIDMap},
		{"InterruptRunning", testInterruptRunning},
		{"InterruptRunningKeep", testInterruptRunningKeep},
		{"DeleteEventsBefore", testDeleteEventsBefore},
		{"RunTimings", testRunTimings},
		{"NotFound", testNotFound},
		{"ConcurrentCommit", testConcurrentCommit},
		{"SessionEvents", testSessionEvents},
		{"SessionEventsInterrupt", testSessionEventsInterrupt},
		{"SessionEventsConcurrent", testSessionEventsConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// cmpOpts compare what a store gives back with what went in: a store need
// not tell a nil slice from an empty one.
// The commit order a store numbers (Event.SessionSeq, Session.LastSeq) has
// cases of its own (testSessionEvents); the others leave it out.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty(),
	cmpopts.IgnoreFields(bridge.Event{}, "SessionSeq")}

// ignoreMessageID compares messages without their store-assigned ids.
var ignoreMessageID = cmpopts.IgnoreFields(bridge.Message{}, "ID")

func diff(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, append(opts, cmpOpts...)...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func wantCode(t *testing.T, what string, err error, code bridge.Code) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want code %s", what, code)
		return
	}
	if got := bridge.ErrorCode(err); got != code {
		t.Errorf("%s: got code %s (%v), want %s", what, got, err, code)
	}
}

// wantUTC fails unless every time is zero or in UTC.
func wantUTC(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for i, tm := range ts {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("%s: time %d is in %v, want UTC", what, i, tm.Location())
		}
	}
}

func mustSession(t *testing.T, s bridge.Store, id, principal string) *bridge.Session {
	t.Helper()
	sess := &bridge.Session{ID: id, Principal: principal, Created: T0, Updated: T0}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("CreateSession(%s): %v", id, err)
	}
	return sess
}

// newRun is a running run of session, created at created.
func newRun(id, session, principal string, created time.Time) *bridge.Run {
	return &bridge.Run{
		ID:        id,
		SessionID: session,
		Principal: principal,
		Inbound:   "openai",
		Outbound:  "anthropic",
		Upstream:  "claude",
		Model:     "claude-test",
		Status:    bridge.StatusRunning,
		Render:    json.RawMessage(`{"include_usage":true}`),
		Created:   created,
	}
}

func mustRun(t *testing.T, s bridge.Store, r *bridge.Run, input ...bridge.Message) {
	t.Helper()
	if err := s.CreateRun(t.Context(), r, input); err != nil {
		t.Fatalf("CreateRun(%s): %v", r.ID, err)
	}
}

func mustCommit(t *testing.T, s bridge.Store, b *bridge.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func mustGetRun(t *testing.T, s bridge.Store, id string) *bridge.Run {
	t.Helper()
	r, err := s.Run(t.Context(), id)
	if err != nil {
		t.Fatalf("Run(%s): %v", id, err)
	}
	return r
}

func mustEvents(t *testing.T, s bridge.Store, run string, after int64, limit int) []bridge.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), run, after, limit)
	if err != nil {
		t.Fatalf("Events(%s, %d, %d): %v", run, after, limit, err)
	}
	return evs
}

func mustMessages(t *testing.T, s bridge.Store, principal, session string, before int64, limit int) ([]bridge.Message, bool) {
	t.Helper()
	msgs, more, err := s.Messages(t.Context(), principal, session, before, limit)
	if err != nil {
		t.Fatalf("Messages(%s, %s, %d, %d): %v", principal, session, before, limit, err)
	}
	return msgs, more
}

// TextDeltas returns n text_delta events of run with seqs from, from+1, ...
// and one-millisecond steps of time from T0.
func TextDeltas(run string, from int64, n int) []bridge.Event {
	evs := make([]bridge.Event, n)
	for i := range evs {
		seq := from + int64(i)
		evs[i] = bridge.Event{
			RunID:  run,
			Seq:    seq,
			Time:   at(time.Duration(seq) * time.Millisecond),
			Kind:   bridge.KindTextDelta,
			Source: bridge.SourceModel,
			Text:   "tok" + strconv.FormatInt(seq, 10) + " ",
		}
	}
	return evs
}

// position parses a message id "m<position>".
func position(t *testing.T, id string) int64 {
	t.Helper()
	s, ok := strings.CutPrefix(id, "m")
	p, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil || p <= 0 {
		t.Fatalf("message id %q is not m<position>", id)
	}
	return p
}

func fullUsage(n int64) *bridge.Usage {
	return &bridge.Usage{
		InputTokens:      bridge.Int64(n),
		OutputTokens:     bridge.Int64(n + 1),
		ReasoningTokens:  bridge.Int64(n + 2),
		CacheReadTokens:  bridge.Int64(n + 3),
		CacheWriteTokens: bridge.Int64(0), // a reported zero is not "not reported"
		TotalTokens:      bridge.Int64(2*n + 1),
	}
}

func testSession(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	sess := &bridge.Session{ID: "sess_1", Principal: "alice", Created: at(0), Updated: at(time.Second), State: []byte(`{"k":"v","n":[1,2]}`)}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	got, err := s.Session(ctx, "alice", "sess_1")
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	diff(t, "Session", sess, got)
	wantUTC(t, "Session", got.Created, got.Updated)
	// A session is named by its principal and id: another principal's
	// session of the id is none.
	for _, p := range []string{"mallory", ""} {
		_, err := s.Session(ctx, p, "sess_1")
		wantCode(t, "Session(another principal's)", err, bridge.CodeNotFound)
	}

	bare := &bridge.Session{ID: "sess_2", Created: at(time.Minute), Updated: at(time.Minute)}
	if err := s.CreateSession(ctx, bare); err != nil {
		t.Fatalf("CreateSession(no state): %v", err)
	}
	if got, err := s.Session(ctx, "", "sess_2"); err != nil {
		t.Fatalf("Session(no state): %v", err)
	} else {
		diff(t, "Session(no state)", bare, got)
	}

	dup := &bridge.Session{ID: "sess_1", Principal: "alice", Created: at(time.Hour), Updated: at(time.Hour)}
	wantCode(t, "CreateSession(duplicate)", s.CreateSession(ctx, dup), bridge.CodeConflict)
	if got, err := s.Session(ctx, "alice", "sess_1"); err != nil {
		t.Fatalf("Session after duplicate: %v", err)
	} else {
		diff(t, "Session after duplicate", sess, got)
	}
	// Another principal may have a session of the same id, its own.
	theirs := &bridge.Session{ID: "sess_1", Principal: "mallory", Created: at(time.Hour), Updated: at(time.Hour), State: []byte(`{"m":1}`)}
	if err := s.CreateSession(ctx, theirs); err != nil {
		t.Fatalf("CreateSession(another principal's, same id): %v", err)
	}
	if got, err := s.Session(ctx, "mallory", "sess_1"); err != nil {
		t.Fatalf("Session(mallory): %v", err)
	} else {
		diff(t, "Session(mallory)", theirs, got)
	}

	// UpdateSession writes Updated and State of the principal's session and
	// nothing else.
	upd := *sess
	upd.Created = at(time.Hour)
	upd.Updated, upd.State = at(2*time.Hour), []byte(`{"k":"w"}`)
	if err := s.UpdateSession(ctx, &upd); err != nil {
		t.Fatalf("UpdateSession: %v", err)
	}
	want := *sess
	want.Updated, want.State = upd.Updated, upd.State
	if got, err := s.Session(ctx, "alice", "sess_1"); err != nil {
		t.Fatalf("Session after update: %v", err)
	} else {
		diff(t, "Session after update", &want, got)
	}
	if got, err := s.Session(ctx, "mallory", "sess_1"); err != nil {
		t.Fatalf("Session(mallory) after alice's update: %v", err)
	} else {
		diff(t, "Session(mallory) after alice's update", theirs, got)
	}

	wantCode(t, "UpdateSession(missing)", s.UpdateSession(ctx, &bridge.Session{ID: "nope", Updated: T0}), bridge.CodeNotFound)
	wantCode(t, "UpdateSession(another principal's)",
		s.UpdateSession(ctx, &bridge.Session{ID: "sess_2", Principal: "mallory", Updated: T0}), bridge.CodeNotFound)
}

// testIdempotencyKey: a Hermes run's client run id (its Idempotency-Key)
// is one run's per principal, by CreateRun and by Commit, whose batch then
// writes nothing; another principal's key, and other dialects' client run
// ids, may repeat.
func testIdempotencyKey(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	mustSession(t, s, "sess_2", "bob")
	keyed := func(id, session, principal string) *bridge.Run {
		r := newRun(id, session, principal, at(time.Second))
		r.Inbound, r.ClientRunID = "hermes", "key-1"
		return r
	}
	first := keyed("run_1", "sess_1", "alice")
	if !bridge.IdempotencyKeyed(first) {
		t.Fatal("a Hermes run with a client run id is not IdempotencyKeyed")
	}
	mustRun(t, s, first)
	wantCode(t, "CreateRun(a second run with alice's key)", s.CreateRun(ctx, keyed("run_2", "sess_1", "alice"), nil), bridge.CodeConflict)
	input := bridge.Message{RunID: "run_3", Created: at(time.Second), Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("again")}}
	err := s.Commit(ctx, &bridge.Batch{NewRuns: []*bridge.Run{keyed("run_3", "sess_1", "alice")}, Messages: []bridge.Message{input},
		Events: []bridge.Event{{RunID: "run_3", Seq: 1, Time: at(time.Second), Kind: bridge.KindRunStarted, Source: bridge.SourceBridge}}})
	wantCode(t, "Commit(a new run with alice's key)", err, bridge.CodeConflict)
	for _, id := range []string{"run_2", "run_3"} {
		_, err := s.Run(ctx, id)
		wantCode(t, "Run("+id+") refused", err, bridge.CodeNotFound)
	}
	if msgs, _ := mustMessages(t, s, "alice", "sess_1", 0, 0); len(msgs) != 0 {
		t.Errorf("the refused batch's message was stored: %+v", msgs)
	}
	got, err := s.RunByClientID(ctx, "alice", "key-1")
	if err != nil || got.ID != "run_1" {
		t.Fatalf("RunByClientID(alice, key-1) = %v, %v; want run_1", got, err)
	}
	mustRun(t, s, keyed("run_4", "sess_2", "bob")) // bob's key of the same name
	for i, id := range []string{"run_5", "run_6"} {
		r := newRun(id, "sess_1", "alice", at(time.Duration(i+2)*time.Second))
		r.ClientRunID = "key-1" // X-Client-Run-Id: a name, not a key
		mustRun(t, s, r)
	}
}

func testRun(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")

	running := newRun("run_1", "sess_1", "alice", at(time.Second))
	running.ClientRunID = "client-1"
	running.Usage = *fullUsage(10)
	running.Dropped = []string{"tools[0].cache_control", "metadata"}
	running.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	running.UpstreamRunID = "task-9"
	input := []bridge.Message{{RunID: "run_1", Created: at(time.Second), Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}
	mustRun(t, s, running, input...)

	done := newRun("run_2", "sess_1", "alice", at(time.Minute))
	done.Status, done.StopReason, done.Reason = bridge.StatusFailed, bridge.StopMaxTokens, "upstream gave up"
	done.Finished, done.LastSeq = at(2*time.Minute), 7
	mustRun(t, s, done)

	for _, want := range []*bridge.Run{running, done} {
		got := mustGetRun(t, s, want.ID)
		diff(t, "Run("+want.ID+")", want, got)
		wantUTC(t, "Run("+want.ID+")", got.Created, got.Finished)
	}

	got, err := s.RunByClientID(ctx, "alice", "client-1")
	if err != nil {
		t.Fatalf("RunByClientID: %v", err)
	}
	diff(t, "RunByClientID", running, got)
	_, err = s.RunByClientID(ctx, "bob", "client-1")
	wantCode(t, "RunByClientID(other principal)", err, bridge.CodeNotFound)
	_, err = s.RunByClientID(ctx, "alice", "client-2")
	wantCode(t, "RunByClientID(unknown)", err, bridge.CodeNotFound)

	dup := newRun("run_1", "sess_1", "mallory", at(time.Hour))
	wantCode(t, "CreateRun(duplicate)", s.CreateRun(ctx, dup, nil), bridge.CodeConflict)
	diff(t, "Run after duplicate", running, mustGetRun(t, s, "run_1"))

	msgs, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)
	diff(t, "input messages", input, msgs, ignoreMessageID)
}

func testListRuns(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_a", "alice")
	mustSession(t, s, "sess_b", "alice")
	type spec struct {
		id, session, principal string
		status                 bridge.Status
	}
	specs := []spec{
		{"a1", "sess_a", "alice", bridge.StatusCompleted},
		{"a2", "sess_a", "alice", bridge.StatusRunning},
		{"a3", "sess_a", "bob", bridge.StatusFailed},
		{"b1", "sess_b", "alice", bridge.StatusCompleted},
		{"b2", "sess_b", "bob", bridge.StatusRunning},
	}
	runs := map[string]*bridge.Run{}
	for i, sp := range specs {
		r := newRun(sp.id, sp.session, sp.principal, at(time.Duration(i+1)*time.Minute))
		r.Status = sp.status
		switch sp.id {
		case "a3":
			r.Inbound = "a2a"
		case "b1":
			r.Outbound = "openai"
		case "a2", "b2":
			r.Model = "m2"
		}
		mustRun(t, s, r)
		runs[sp.id] = r
	}
	// Two runs created at the same time, in another session (so the
	// filters above do not see them, but for all and limits: created last):
	// the list orders them by insertion, newest first, and pages between
	// them.
	mustSession(t, s, "sess_t", "tina")
	for _, id := range []string{"t1", "t2"} {
		r := newRun(id, "sess_t", "tina", at(10*time.Minute))
		r.Status = bridge.StatusCompleted
		mustRun(t, s, r)
		runs[id] = r
	}

	tests := []struct {
		name string
		f    bridge.RunFilter
		want []string
	}{
		{"all", bridge.RunFilter{}, []string{"t2", "t1", "b2", "b1", "a3", "a2", "a1"}},
		{"session", bridge.RunFilter{SessionID: "sess_a"}, []string{"a3", "a2", "a1"}},
		{"principal", bridge.RunFilter{Principal: "alice"}, []string{"b1", "a2", "a1"}},
		{"status", bridge.RunFilter{Status: bridge.StatusRunning}, []string{"b2", "a2"}},
		{"session and principal", bridge.RunFilter{SessionID: "sess_a", Principal: "alice"}, []string{"a2", "a1"}},
		{"all three", bridge.RunFilter{SessionID: "sess_a", Principal: "alice", Status: bridge.StatusCompleted}, []string{"a1"}},
		{"limit", bridge.RunFilter{Limit: 2}, []string{"t2", "t1"}},
		{"session and limit", bridge.RunFilter{SessionID: "sess_b", Limit: 1}, []string{"b2"}},
		{"limit beyond", bridge.RunFilter{SessionID: "sess_b", Limit: 10}, []string{"b2", "b1"}},
		{"no match", bridge.RunFilter{Status: bridge.StatusCancelled}, nil},
		{"unknown session", bridge.RunFilter{SessionID: "nope"}, nil},
		{"inbound", bridge.RunFilter{Inbound: "a2a"}, []string{"a3"}},
		{"outbound", bridge.RunFilter{Outbound: "openai"}, []string{"b1"}},
		{"model", bridge.RunFilter{Model: "m2"}, []string{"b2", "a2"}},
		{"since", bridge.RunFilter{Since: at(3 * time.Minute)}, []string{"t2", "t1", "b2", "b1", "a3"}},
		{"until", bridge.RunFilter{Until: at(3 * time.Minute)}, []string{"a2", "a1"}},
		{"since and until", bridge.RunFilter{Since: at(2 * time.Minute), Until: at(4 * time.Minute)}, []string{"a3", "a2"}},
		{"before", bridge.RunFilter{Before: "b1"}, []string{"a3", "a2", "a1"}},
		{"before and limit", bridge.RunFilter{Before: "b2", Limit: 2}, []string{"b1", "a3"}},
		{"before the last", bridge.RunFilter{Before: "a1"}, nil},
		{"before and principal", bridge.RunFilter{Before: "b2", Principal: "bob"}, []string{"a3"}},
		{"before an unknown run", bridge.RunFilter{Before: "nope"}, nil},
		{"before, same time", bridge.RunFilter{Before: "t2"}, []string{"t1", "b2", "b1", "a3", "a2", "a1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListRuns(ctx, tt.f)
			if err != nil {
				t.Fatalf("ListRuns(%+v): %v", tt.f, err)
			}
			var want []*bridge.Run
			for _, id := range tt.want {
				want = append(want, runs[id])
			}
			diff(t, fmt.Sprintf("ListRuns(%+v)", tt.f), want, got)
		})
	}
}

// everyKind returns one event of every kind for run, seq 1..n, with every
// field its kind uses set, and last one event with every field at once.
func everyKind(run string) []bridge.Event {
	opaque := func(d string) *bridge.Opaque {
		return &bridge.Opaque{Dialect: "anthropic", Data: json.RawMessage(`{"type":"` + d + `","n":[1,2.5,null,true]}`)}
	}
	apiErr := &bridge.Error{
		Code: bridge.CodeRateLimited, Message: "slow down", Status: 429, Type: "rate_limit_error",
		Param: "model", UpstreamCode: "rate_limited", RetryAfter: 1500 * time.Millisecond,
	}
	parts := []bridge.Part{
		bridge.TextPart("forty-two"),
		{Type: bridge.PartImage, URL: "https://example.com/a.png", MediaType: "image/png", Detail: "high"},
		{Type: bridge.PartAudio, Data: "UklGRg==", Format: "wav"},
		{Type: bridge.PartFile, Filename: "a.pdf", FileID: "file-1", MediaType: "application/pdf"},
		{Type: bridge.PartData, JSON: json.RawMessage(`{"x":1,"y":["a"]}`)},
		{Type: bridge.PartReasoning, Text: "hmm", Signature: "sig", Encrypted: "enc"},
		{Type: bridge.PartOpaque, Opaque: opaque("part")},
	}
	evs := []bridge.Event{
		{Kind: bridge.KindRunStarted, Source: bridge.SourceBridge},
		{Kind: bridge.KindMessageStarted, Source: bridge.SourceModel, ResponseID: "chatcmpl-1", Model: "gpt-test"},
		{Kind: bridge.KindReasoningDelta, Source: bridge.SourceModel, Text: "let me think", Signature: "c2ln", Encrypted: "ZW5j", Opaque: opaque("thinking")},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Index: 1, Text: "Hello <world> & \"friends\" é 🌍\n\t\\"},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "I can't", Refusal: true},
		{Kind: bridge.KindToolCallStarted, Source: bridge.SourceModel, Index: 2, ToolCall: &bridge.ToolCall{ID: "call_1", Name: "lookup", Index: 2, Opaque: opaque("tool")}},
		{Kind: bridge.KindToolCallDelta, Source: bridge.SourceModel, Index: 2, ToolCall: &bridge.ToolCall{ID: "call_1", Arguments: `{"q":`, Index: 2}},
		{Kind: bridge.KindToolCallDone, Source: bridge.SourceModel, Index: 2, ToolCall: &bridge.ToolCall{ID: "call_1", Name: "lookup", Arguments: `{"q": "x"`, Index: 2}},
		{Kind: bridge.KindToolResult, Source: bridge.SourceAgent, ToolResult: &bridge.ToolResult{CallID: "call_1", Name: "lookup", Content: parts, IsError: true}},
		{Kind: bridge.KindArtifact, Source: bridge.SourceAgent, Artifact: &bridge.Artifact{ID: "art-1", Name: "report", Parts: parts[:2], Append: true, LastChunk: true}},
		{Kind: bridge.KindStateUpdate, Source: bridge.SourceAgent, State: json.RawMessage(`{"counter":3,"nested":{"a":[true]}}`)},
		{Kind: bridge.KindUsage, Source: bridge.SourceModel, Usage: fullUsage(100)},
		{Kind: bridge.KindError, Source: bridge.SourceBridge, Error: apiErr},
		{Kind: bridge.KindMessageDone, Source: bridge.SourceModel, Index: 1},
		{Kind: bridge.KindFinal, Source: bridge.SourceBridge, Final: &bridge.Final{
			Status: bridge.StatusFailed, StopReason: bridge.StopMaxTokens, Reason: "out of tokens", Usage: fullUsage(7), Error: apiErr,
		}},
		{
			Kind: bridge.KindTextDelta, Source: bridge.SourceAgent, Index: 3, Text: "all", Refusal: true,
			Signature: "s", Encrypted: "e",
			ToolCall:   &bridge.ToolCall{ID: "c", Name: "n", Arguments: "{}", Index: 3, Opaque: opaque("c")},
			ToolResult: &bridge.ToolResult{CallID: "c", Content: parts[:1]},
			Artifact:   &bridge.Artifact{ID: "a", Parts: parts[4:5]},
			State:      json.RawMessage(`{"s":1}`),
			Usage:      fullUsage(1),
			Error:      apiErr,
			Final:      &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn},
			Opaque:     opaque("all"),
			ResponseID: "resp_1", Model: "m",
		},
	}
	for i := range evs {
		seq := int64(i + 1)
		evs[i].RunID, evs[i].Seq = run, seq
		evs[i].Time = at(time.Duration(seq)*time.Millisecond + time.Duration(seq)*time.Microsecond)
		evs[i].UpstreamID = "up-" + strconv.FormatInt(seq, 10)
	}
	return evs
}

func testEvents(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0))
	mustRun(t, s, newRun("run_2", "sess_1", "alice", T0))

	want1, want2 := everyKind("run_1"), TextDeltas("run_2", 1, 3)
	want2[1].Time = time.Time{} // an event without a time keeps none
	// One batch with events of two runs, interleaved.
	var batch []bridge.Event
	for i := range want1 {
		batch = append(batch, want1[i])
		if i < len(want2) {
			batch = append(batch, want2[i])
		}
	}
	mustCommit(t, s, &bridge.Batch{Events: batch})

	got1 := mustEvents(t, s, "run_1", 0, 0)
	diff(t, "Events(run_1)", want1, got1)
	for _, e := range got1 {
		wantUTC(t, fmt.Sprintf("event %d", e.Seq), e.Time)
	}
	diff(t, "Events(run_2)", want2, mustEvents(t, s, "run_2", 0, 0))

	if got := mustGetRun(t, s, "run_1").LastSeq; got != int64(len(want1)) {
		t.Errorf("run_1 LastSeq = %d, want %d", got, len(want1))
	}
	mustRun(t, s, newRun("run_3", "sess_1", "alice", T0))
	if got := mustEvents(t, s, "run_3", 0, 0); len(got) != 0 {
		t.Errorf("Events(run without events) = %v, want none", got)
	}
}

func testEventsAfterLimit(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0))
	all := TextDeltas("run_1", 1, 10)
	// Several batches, of different sizes.
	mustCommit(t, s, &bridge.Batch{Events: all[:1]})
	mustCommit(t, s, &bridge.Batch{Events: all[1:6]})
	mustCommit(t, s, &bridge.Batch{Events: all[6:]})

	tests := []struct {
		name     string
		after    int64
		limit    int
		from, to int // want all[from:to]
	}{
		{"all", 0, 0, 0, 10},
		{"negative limit", 0, -1, 0, 10},
		{"after", 3, 0, 3, 10},
		{"limit", 0, 4, 0, 4},
		{"after and limit", 2, 3, 2, 5},
		{"limit past the end", 8, 5, 8, 10},
		{"after the last", 10, 0, 10, 10},
		{"far after the last", 1000, 3, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustEvents(t, s, "run_1", tt.after, tt.limit)
			diff(t, fmt.Sprintf("Events(after=%d, limit=%d)", tt.after, tt.limit), all[tt.from:tt.to], got)
		})
	}
}

func testLastSeq(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0))
	// Batches of events alone keep the run's LastSeq at its last event.
	for _, b := range [][2]int64{{1, 3}, {4, 1}, {5, 20}} {
		mustCommit(t, s, &bridge.Batch{Events: TextDeltas("run_1", b[0], int(b[1]))})
		if got, want := mustGetRun(t, s, "run_1").LastSeq, b[0]+b[1]-1; got != want {
			t.Errorf("after events %d..%d: LastSeq = %d, want %d", b[0], want, got, want)
		}
	}
	// A run change that comes with events agrees with them.
	r := mustGetRun(t, s, "run_1")
	r.Status, r.Finished, r.LastSeq = bridge.StatusCompleted, at(time.Minute), 25
	mustCommit(t, s, &bridge.Batch{Events: TextDeltas("run_1", 25, 1), Runs: []*bridge.Run{r}})
	diff(t, "Run after final batch", r, mustGetRun(t, s, "run_1"))
}

func testCommitRuns(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	created := newRun("run_1", "sess_1", "alice", T0)
	mustRun(t, s, created)

	ended := *created
	ended.Status, ended.StopReason, ended.Reason = bridge.StatusCompleted, bridge.StopEndTurn, "done"
	ended.Usage = *fullUsage(5)
	ended.Dropped = []string{"logprobs"}
	ended.TraceID, ended.UpstreamRunID = "trace-1", "upstream-run-1"
	ended.Finished, ended.LastSeq = at(time.Minute), 3
	answer := bridge.Message{RunID: "run_1", Created: at(time.Minute), Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("tok1 tok2 tok3")}}
	mustCommit(t, s, &bridge.Batch{
		Events:   TextDeltas("run_1", 1, 3),
		Runs:     []*bridge.Run{&ended},
		Messages: []bridge.Message{answer},
	})
	diff(t, "Run after commit", &ended, mustGetRun(t, s, "run_1"))
	msgs, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)
	diff(t, "Messages after commit", []bridge.Message{answer}, msgs, ignoreMessageID)

	// Continued, maybe on another upstream: running again, nothing
	// finished; the usage stays.
	cont := ended
	cont.Status, cont.StopReason, cont.Reason, cont.Finished = bridge.StatusRunning, "", "", time.Time{}
	cont.Dropped = nil
	cont.Outbound, cont.Upstream, cont.Model = "responses", "gpt", "gpt-test"
	mustCommit(t, s, &bridge.Batch{Runs: []*bridge.Run{&cont}})
	diff(t, "Run after continuation", &cont, mustGetRun(t, s, "run_1"))

	// The fields a run is created with stay.
	moved := cont
	moved.SessionID, moved.ClientRunID, moved.Principal, moved.Inbound, moved.Created = "sess_2", "c2", "mallory", "a2a", at(time.Hour)
	mustCommit(t, s, &bridge.Batch{Runs: []*bridge.Run{&moved}})
	diff(t, "Run after changing fixed fields", &cont, mustGetRun(t, s, "run_1"))

	// An empty batch is a no-op.
	mustCommit(t, s, &bridge.Batch{})
	diff(t, "Run after empty batch", &cont, mustGetRun(t, s, "run_1"))
}

func testCommitAtomic(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	r := newRun("run_1", "sess_1", "alice", T0)
	input := bridge.Message{RunID: "run_1", Created: T0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}
	mustRun(t, s, r, input)
	base := TextDeltas("run_1", 1, 2)
	mustCommit(t, s, &bridge.Batch{Events: base})
	before := mustGetRun(t, s, "run_1")

	ended := *before
	ended.Status, ended.Finished, ended.LastSeq = bridge.StatusCompleted, at(time.Minute), 4
	answer := bridge.Message{RunID: "run_1", Created: at(time.Minute), Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("x")}}
	ghost := *before
	ghost.ID = "run_nope"

	tests := []struct {
		name string
		b    bridge.Batch
	}{
		{"duplicate seq in the batch", bridge.Batch{
			Events:   slices.Concat(TextDeltas("run_1", 3, 2), TextDeltas("run_1", 4, 1)),
			Runs:     []*bridge.Run{&ended},
			Messages: []bridge.Message{answer},
		}},
		{"seq already committed", bridge.Batch{
			Events:   slices.Concat(TextDeltas("run_1", 3, 1), TextDeltas("run_1", 2, 1)),
			Messages: []bridge.Message{answer},
		}},
		{"event of an unknown run", bridge.Batch{
			Events: slices.Concat(TextDeltas("run_1", 3, 2), TextDeltas("run_nope", 1, 1)),
			Runs:   []*bridge.Run{&ended},
		}},
		{"unknown run", bridge.Batch{
			Events:   TextDeltas("run_1", 3, 2),
			Runs:     []*bridge.Run{&ended, &ghost},
			Messages: []bridge.Message{answer},
		}},
		{"message of an unknown run", bridge.Batch{
			Events:   TextDeltas("run_1", 3, 2),
			Runs:     []*bridge.Run{&ended},
			Messages: []bridge.Message{answer, {RunID: "run_nope", Created: T0, Role: bridge.RoleUser}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Commit(ctx, &tt.b); err == nil {
				t.Fatalf("Commit succeeded, want an error")
			}
			diff(t, "events", base, mustEvents(t, s, "run_1", 0, 0))
			diff(t, "run", before, mustGetRun(t, s, "run_1"))
			msgs, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)
			diff(t, "messages", []bridge.Message{input}, msgs, ignoreMessageID)
		})
	}

	// The store still takes the batch that failed once it is fixed.
	mustCommit(t, s, &bridge.Batch{Events: TextDeltas("run_1", 3, 2), Runs: []*bridge.Run{&ended}, Messages: []bridge.Message{answer}})
	diff(t, "run after a good batch", &ended, mustGetRun(t, s, "run_1"))
}

// testCommitCreates: a batch may create a session and a run and hold their
// first messages and events; a batch whose creation fails writes nothing.
func testCommitCreates(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	sess := &bridge.Session{ID: "sess_new", Principal: "alice", Created: T0, Updated: T0}
	r := newRun("run_new", "sess_new", "alice", T0)
	input := bridge.Message{RunID: "run_new", Created: T0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}
	started := bridge.Event{RunID: "run_new", Seq: 1, Time: T0, Kind: bridge.KindRunStarted, Source: bridge.SourceBridge}
	mustCommit(t, s, &bridge.Batch{Sessions: []*bridge.Session{sess}, NewRuns: []*bridge.Run{r},
		Messages: []bridge.Message{input}, Events: []bridge.Event{started}})

	got, err := s.Session(ctx, "alice", "sess_new")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "session", sess, got)
	want := *r
	want.LastSeq = 1
	diff(t, "run", &want, mustGetRun(t, s, "run_new"))
	diff(t, "events", []bridge.Event{started}, mustEvents(t, s, "run_new", 0, 0))
	msgs, _ := mustMessages(t, s, "alice", "sess_new", 0, 0)
	diff(t, "messages", []bridge.Message{input}, msgs, ignoreMessageID)

	// The session exists now: the batch fails whole, its run is not created.
	r2 := newRun("run_other", "sess_new", "alice", T0)
	err = s.Commit(ctx, &bridge.Batch{Sessions: []*bridge.Session{sess}, NewRuns: []*bridge.Run{r2},
		Events: []bridge.Event{{RunID: "run_other", Seq: 1, Time: T0, Kind: bridge.KindRunStarted}}})
	if bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("creating an existing session: %v, want conflict", err)
	}
	if _, err := s.Run(ctx, "run_other"); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("the failed batch's run exists: %v", err)
	}
}

func testMessages(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	mustSession(t, s, "sess_2", "alice")
	input := []bridge.Message{
		{RunID: "run_1", Created: at(0), Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart("be brief")}, StringContent: true},
		{RunID: "run_1", Created: at(time.Second), Role: bridge.RoleUser, Name: "al", Parts: []bridge.Part{
			bridge.TextPart("look"),
			{Type: bridge.PartImage, URL: "data:image/png;base64,iVBO", MediaType: "image/png", Detail: "low"},
			{Type: bridge.PartData, JSON: json.RawMessage(`{"a":[1,2]}`)},
		}},
	}
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0), input...)
	mustRun(t, s, newRun("run_x", "sess_2", "alice", T0),
		bridge.Message{RunID: "run_x", Created: T0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("elsewhere")}})
	out := []bridge.Message{
		{RunID: "run_1", Created: at(time.Minute), Role: bridge.RoleAssistant, NullContent: true, ToolCalls: []bridge.ToolCall{
			{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`},
			{ID: "call_2", Name: "lookup", Arguments: `{"q":"y"}`, Index: 1, Opaque: &bridge.Opaque{Dialect: "openai", Data: json.RawMessage(`{"k":1}`)}},
		}, Parts: []bridge.Part{{Type: bridge.PartReasoning, Text: "t", Signature: "sig"}}},
		{RunID: "run_1", Created: at(2 * time.Minute), Role: bridge.RoleTool, ToolCallID: "call_1", IsError: true, Parts: []bridge.Part{bridge.TextPart("boom")}},
		{RunID: "run_1", Created: at(3 * time.Minute), Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("ok")},
			Opaque: &bridge.Opaque{Dialect: "responses", Data: json.RawMessage(`{"id":"msg_1"}`)}},
	}
	mustCommit(t, s, &bridge.Batch{Messages: out})

	want := slices.Concat(input, out)
	got, more := mustMessages(t, s, "alice", "sess_1", 0, 0)
	diff(t, "Messages", want, got, ignoreMessageID)
	if more {
		t.Errorf("Messages(all): more = true, want false")
	}
	var last int64
	for _, m := range got {
		p := position(t, m.ID)
		if p <= last {
			t.Errorf("message %s does not come after position %d", m.ID, last)
		}
		last = p
		wantUTC(t, "message "+m.ID, m.Created)
	}

	other, _ := mustMessages(t, s, "alice", "sess_2", 0, 0)
	if len(other) != 1 || other[0].Parts[0].Text != "elsewhere" {
		t.Errorf("Messages(sess_2) = %+v, want its one message", other)
	}
	if got, more := mustMessages(t, s, "alice", "nope", 0, 10); len(got) != 0 || more {
		t.Errorf("Messages(unknown session) = %v, %v; want none, false", got, more)
	}
}

func testRunMessages(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	in1 := bridge.Message{RunID: "run_1", Created: T0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("one")}}
	in2 := bridge.Message{RunID: "run_2", Created: at(time.Second), Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("two")}}
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0), in1)
	mustRun(t, s, newRun("run_2", "sess_1", "alice", at(time.Second)), in2)
	out1 := bridge.Message{RunID: "run_1", Created: at(time.Minute), Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("ONE")}}
	mustCommit(t, s, &bridge.Batch{Messages: []bridge.Message{out1}})

	got, err := s.RunMessages(t.Context(), "run_1")
	if err != nil {
		t.Fatalf("RunMessages: %v", err)
	}
	diff(t, "RunMessages(run_1)", []bridge.Message{in1, out1}, got, ignoreMessageID)
	all, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)
	if len(got) == 2 && len(all) == 3 && (got[0].ID != all[0].ID || got[1].ID != all[2].ID) {
		t.Errorf("RunMessages ids %s %s, Messages gives %s %s", got[0].ID, got[1].ID, all[0].ID, all[2].ID)
	}
	if got, err := s.RunMessages(t.Context(), "nope"); err != nil || len(got) != 0 {
		t.Errorf("RunMessages(unknown run) = %v, %v; want none", got, err)
	}
}

// testSupersede: a run and the later runs of its session leave the
// transcript Messages gives, stay in AllMessages and RunMessages, and are
// marked; a message committed to a superseded run is born superseded;
// other sessions are untouched.
func testSupersede(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	mustSession(t, s, "sess_2", "alice")
	msg := func(run string, role bridge.Role, text string) bridge.Message {
		return bridge.Message{RunID: run, Created: T0, Role: role, Parts: []bridge.Part{bridge.TextPart(text)}}
	}
	for i, id := range []string{"run_1", "run_2", "run_3"} {
		mustRun(t, s, newRun(id, "sess_1", "alice", at(time.Duration(i)*time.Second)), msg(id, bridge.RoleUser, "q"+id))
		mustCommit(t, s, &bridge.Batch{Messages: []bridge.Message{msg(id, bridge.RoleAssistant, "a"+id)}})
	}
	mustRun(t, s, newRun("run_x", "sess_2", "alice", at(time.Minute)), msg("run_x", bridge.RoleUser, "elsewhere"))
	before, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)

	ids, err := s.Supersede(ctx, "run_2", at(time.Hour))
	if err != nil {
		t.Fatalf("Supersede: %v", err)
	}
	diff(t, "Supersede ids", []string{"run_2", "run_3"}, ids)
	kept, more := mustMessages(t, s, "alice", "sess_1", 0, 0)
	diff(t, "Messages after Supersede", before[:2], kept)
	if more {
		t.Errorf("Messages: more = true")
	}
	if page, more := mustMessages(t, s, "alice", "sess_1", position(t, before[4].ID), 1); len(page) != 1 || page[0].ID != before[1].ID || !more {
		t.Errorf("Messages(before %s, 1) = %v, more %v; want %s and more", before[4].ID, page, more, before[1].ID)
	}
	all, _, err := s.AllMessages(ctx, "alice", "sess_1", 0, 0)
	if err != nil {
		t.Fatalf("AllMessages: %v", err)
	}
	diff(t, "AllMessages", before, all)
	if got, err := s.RunMessages(ctx, "run_3"); err != nil || len(got) != 2 {
		t.Errorf("RunMessages(run_3) = %v, %v; want its 2 messages", got, err)
	}
	for id, want := range map[string]bool{"run_1": false, "run_2": true, "run_3": true, "run_x": false} {
		if got := mustGetRun(t, s, id).Superseded; got != want {
			t.Errorf("run %s superseded = %v, want %v", id, got, want)
		}
	}
	runs, err := s.ListRuns(ctx, bridge.RunFilter{SessionID: "sess_1"})
	if err != nil || len(runs) != 3 || !runs[0].Superseded || runs[2].Superseded {
		t.Errorf("ListRuns = %v, %v; want run_3, run_2 superseded, run_1 not", runs, err)
	}

	// A late message of a superseded run (its final, racing the discard).
	mustCommit(t, s, &bridge.Batch{Messages: []bridge.Message{msg("run_3", bridge.RoleAssistant, "late")}})
	if kept2, _ := mustMessages(t, s, "alice", "sess_1", 0, 0); len(kept2) != 2 {
		t.Errorf("a message committed to a superseded run is in the transcript: %v", kept2)
	}
	if ids, err := s.Supersede(ctx, "run_3", at(2*time.Hour)); err != nil || len(ids) != 0 {
		t.Errorf("Supersede(run_3) again = %v, %v; want none marked", ids, err)
	}
	if other, _ := mustMessages(t, s, "alice", "sess_2", 0, 0); len(other) != 1 {
		t.Errorf("Messages(sess_2) = %v, want its one message", other)
	}
	_, err = s.Supersede(ctx, "nope", T0)
	wantCode(t, "Supersede(unknown)", err, bridge.CodeNotFound)
}

// testSessionsPerPrincipal: two principals each have a session "demo",
// created one directly and one by a batch, with runs and messages; each
// principal's Messages, AllMessages and ListRuns hold its own only, and a
// Supersede in one leaves the other's alone.
func testSessionsPerPrincipal(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	msg := func(run, text string) bridge.Message {
		return bridge.Message{RunID: run, Created: T0, Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(text)}}
	}
	mustSession(t, s, "demo", "alice")
	mustRun(t, s, newRun("run_a1", "demo", "alice", at(0)), msg("run_a1", "alice 1"))
	// mallory's "demo", made by a batch as the engine makes a fresh one.
	mustCommit(t, s, &bridge.Batch{Sessions: []*bridge.Session{{ID: "demo", Principal: "mallory", Created: at(time.Second), Updated: at(time.Second)}},
		NewRuns: []*bridge.Run{newRun("run_m1", "demo", "mallory", at(time.Second))}, Messages: []bridge.Message{msg("run_m1", "mallory 1")}})
	mustRun(t, s, newRun("run_a2", "demo", "alice", at(2*time.Second)), msg("run_a2", "alice 2"))
	mustRun(t, s, newRun("run_m2", "demo", "mallory", at(3*time.Second)), msg("run_m2", "mallory 2"))

	texts := func(principal string, all bool) []string {
		t.Helper()
		get := s.Messages
		if all {
			get = s.AllMessages
		}
		msgs, _, err := get(ctx, principal, "demo", 0, 0)
		if err != nil {
			t.Fatalf("messages of %s's demo: %v", principal, err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Text())
		}
		return out
	}
	diff(t, "alice's messages", []string{"alice 1", "alice 2"}, texts("alice", false))
	diff(t, "mallory's messages", []string{"mallory 1", "mallory 2"}, texts("mallory", false))
	diff(t, "the anonymous principal's messages", []string(nil), texts("", false))
	for p, want := range map[string][]string{"alice": {"run_a2", "run_a1"}, "mallory": {"run_m2", "run_m1"}} {
		runs, err := s.ListRuns(ctx, bridge.RunFilter{SessionID: "demo", Principal: p})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		diff(t, p+"'s runs of demo", want, ids)
	}

	ids, err := s.Supersede(ctx, "run_a1", at(time.Hour))
	if err != nil {
		t.Fatalf("Supersede: %v", err)
	}
	diff(t, "Supersede(alice's first run) marked", []string{"run_a1", "run_a2"}, ids)
	diff(t, "alice's messages after Supersede", []string(nil), texts("alice", false))
	diff(t, "alice's messages with the superseded", []string{"alice 1", "alice 2"}, texts("alice", true))
	diff(t, "mallory's messages after alice's Supersede", []string{"mallory 1", "mallory 2"}, texts("mallory", false))
	for _, id := range []string{"run_m1", "run_m2"} {
		if mustGetRun(t, s, id).Superseded {
			t.Errorf("alice's Supersede marked mallory's %s", id)
		}
	}
}

func testMessagesPaging(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	var all []bridge.Message
	for i := range 7 {
		all = append(all, bridge.Message{RunID: "run_1", Created: at(time.Duration(i) * time.Second), Role: bridge.RoleUser,
			Parts: []bridge.Part{bridge.TextPart("message " + strconv.Itoa(i))}})
	}
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0), all[:3]...)
	mustCommit(t, s, &bridge.Batch{Messages: all[3:5]})
	mustCommit(t, s, &bridge.Batch{Messages: all[5:]})

	stored, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)
	if len(stored) != len(all) {
		t.Fatalf("Messages(all) gave %d messages, want %d", len(stored), len(all))
	}
	pos := func(i int) int64 { return position(t, stored[i].ID) }

	tests := []struct {
		name     string
		before   int // an index into all, -1 for 0 (no bound)
		limit    int
		from, to int // want all[from:to]
		more     bool
	}{
		{"newest page", -1, 3, 4, 7, true},
		{"all", -1, 0, 0, 7, false},
		{"exactly all", -1, 7, 0, 7, false},
		{"limit beyond", -1, 100, 0, 7, false},
		{"before, page", 4, 3, 1, 4, true},
		{"before, last page", 3, 3, 0, 3, false},
		{"before, short last page", 2, 3, 0, 2, false},
		{"before the first", 0, 3, 0, 0, false},
		{"before, no limit", 5, 0, 0, 5, false},
		{"one", 6, 1, 5, 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before int64
			if tt.before >= 0 {
				before = pos(tt.before)
			}
			got, more := mustMessages(t, s, "alice", "sess_1", before, tt.limit)
			diff(t, fmt.Sprintf("Messages(before=%d, limit=%d)", before, tt.limit), stored[tt.from:tt.to], got)
			if more != tt.more {
				t.Errorf("Messages(before=%d, limit=%d): more = %v, want %v", before, tt.limit, more, tt.more)
			}
		})
	}

	// Walking back page by page from the newest visits every message once.
	var walked []bridge.Message
	var before int64
	for range len(all) + 1 {
		page, more := mustMessages(t, s, "alice", "sess_1", before, 2)
		walked = append(slices.Clone(page), walked...)
		if !more {
			break
		}
		before = position(t, page[0].ID)
	}
	diff(t, "walked pages", stored, walked)
}

func testIDMap(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	put := func(m bridge.IDMapping) {
		t.Helper()
		if err := s.PutID(ctx, m); err != nil {
			t.Fatalf("PutID(%+v): %v", m, err)
		}
	}
	put(bridge.IDMapping{Kind: bridge.IDToolCall, Scope: "claude", Local: "call_1", Remote: "toolu_1"})
	put(bridge.IDMapping{Kind: bridge.IDToolCall, Scope: "gpt", Local: "call_1", Remote: "call_abc"})
	put(bridge.IDMapping{Kind: bridge.IDRun, Scope: "claude", Local: "call_1", Remote: "task_1"})
	put(bridge.IDMapping{Kind: bridge.IDSession, Scope: "adk", Local: "sess_1", Remote: "ctx_old"})
	put(bridge.IDMapping{Kind: bridge.IDSession, Scope: "adk", Local: "sess_1", Remote: "ctx_new"}) // replaces

	tests := []struct {
		name         string
		kind         bridge.IDKind
		scope        string
		local        string
		remote       string
		wantNotFound bool
	}{
		{"tool call", bridge.IDToolCall, "claude", "call_1", "toolu_1", false},
		{"same local, other scope", bridge.IDToolCall, "gpt", "call_1", "call_abc", false},
		{"same local, other kind", bridge.IDRun, "claude", "call_1", "task_1", false},
		{"replaced", bridge.IDSession, "adk", "sess_1", "ctx_new", false},
		{"unknown scope", bridge.IDToolCall, "gemini", "call_1", "toolu_1", true},
		{"unknown kind", bridge.IDCursor, "claude", "call_1", "toolu_1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote, err := s.RemoteID(ctx, tt.kind, tt.scope, tt.local)
			local, err2 := s.LocalID(ctx, tt.kind, tt.scope, tt.remote)
			if tt.wantNotFound {
				wantCode(t, "RemoteID", err, bridge.CodeNotFound)
				wantCode(t, "LocalID", err2, bridge.CodeNotFound)
				return
			}
			if err != nil || remote != tt.remote {
				t.Errorf("RemoteID(%s, %s, %s) = %q, %v; want %q", tt.kind, tt.scope, tt.local, remote, err, tt.remote)
			}
			if err2 != nil || local != tt.local {
				t.Errorf("LocalID(%s, %s, %s) = %q, %v; want %q", tt.kind, tt.scope, tt.remote, local, err2, tt.local)
			}
		})
	}
	_, err := s.LocalID(ctx, bridge.IDSession, "adk", "ctx_old")
	wantCode(t, "LocalID(replaced remote)", err, bridge.CodeNotFound)
}

func testInterruptRunning(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_busy", "sess_1", "alice", at(time.Second)))
	mustRun(t, s, newRun("run_fresh", "sess_1", "alice", at(2*time.Second)))
	done := newRun("run_done", "sess_1", "alice", at(0))
	mustRun(t, s, done)
	busy := TextDeltas("run_busy", 1, 3)
	mustCommit(t, s, &bridge.Batch{Events: busy})
	done.Status, done.Finished, done.LastSeq = bridge.StatusCompleted, at(time.Minute), 2
	doneEvents := TextDeltas("run_done", 1, 2)
	mustCommit(t, s, &bridge.Batch{Events: doneEvents, Runs: []*bridge.Run{done}})

	now := at(time.Hour)
	ids, err := s.InterruptRunning(ctx, "bridge restarted", now)
	if err != nil {
		t.Fatalf("InterruptRunning: %v", err)
	}
	slices.Sort(ids)
	diff(t, "interrupted ids", []string{"run_busy", "run_fresh"}, ids)

	final := func(run string, seq int64) bridge.Event {
		return bridge.Event{
			RunID: run, Seq: seq, Time: now, Kind: bridge.KindFinal, Source: bridge.SourceBridge,
			Final: &bridge.Final{Status: bridge.StatusInterrupted, Reason: "bridge restarted"},
		}
	}
	diff(t, "events of run_busy", append(busy, final("run_busy", 4)), mustEvents(t, s, "run_busy", 0, 0))
	diff(t, "events of run_fresh", []bridge.Event{final("run_fresh", 1)}, mustEvents(t, s, "run_fresh", 0, 0))
	diff(t, "events of run_done", doneEvents, mustEvents(t, s, "run_done", 0, 0))

	for _, c := range []struct {
		id      string
		lastSeq int64
	}{{"run_busy", 4}, {"run_fresh", 1}} {
		r := mustGetRun(t, s, c.id)
		if r.Status != bridge.StatusInterrupted || r.Reason != "bridge restarted" || !r.Finished.Equal(now) || r.LastSeq != c.lastSeq {
			t.Errorf("%s = {Status: %s, Reason: %q, Finished: %v, LastSeq: %d}, want {%s, %q, %v, %d}",
				c.id, r.Status, r.Reason, r.Finished, r.LastSeq, bridge.StatusInterrupted, "bridge restarted", now, c.lastSeq)
		}
	}
	diff(t, "run_done", done, mustGetRun(t, s, "run_done"))

	ids, err = s.InterruptRunning(ctx, "again", at(2*time.Hour))
	if err != nil || len(ids) != 0 {
		t.Errorf("second InterruptRunning = %v, %v; want none", ids, err)
	}
}

// testInterruptRunningKeep: the runs named in keep (resumed upstream) stay
// running, their events untouched; the others are interrupted.
func testInterruptRunningKeep(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_resumed", "sess_1", "alice", at(time.Second)))
	mustRun(t, s, newRun("run_lost", "sess_1", "alice", at(2*time.Second)))
	resumed := TextDeltas("run_resumed", 1, 3)
	mustCommit(t, s, &bridge.Batch{Events: resumed})

	ids, err := s.InterruptRunning(ctx, "bridge restarted", at(time.Hour), "run_resumed", "run_unknown")
	if err != nil {
		t.Fatalf("InterruptRunning: %v", err)
	}
	diff(t, "interrupted ids", []string{"run_lost"}, ids)
	if r := mustGetRun(t, s, "run_resumed"); r.Status != bridge.StatusRunning || !r.Finished.IsZero() {
		t.Errorf("run_resumed = {Status: %s, Finished: %v}, want running", r.Status, r.Finished)
	}
	diff(t, "events of run_resumed", resumed, mustEvents(t, s, "run_resumed", 0, 0))
	if r := mustGetRun(t, s, "run_lost"); r.Status != bridge.StatusInterrupted {
		t.Errorf("run_lost is %s, want interrupted", r.Status)
	}

	// Without keep, the kept run is interrupted after its last event.
	ids, err = s.InterruptRunning(ctx, "bridge restarted", at(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "second interrupted ids", []string{"run_resumed"}, ids)
	if evs := mustEvents(t, s, "run_resumed", 0, 0); len(evs) != 4 || evs[3].Kind != bridge.KindFinal {
		t.Errorf("run_resumed has %d events after the interrupt, want 3 and a final", len(evs))
	}
}

func testDeleteEventsBefore(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	type spec struct {
		id       string
		status   bridge.Status
		finished time.Time
		kept     bool
	}
	cutoff := at(2 * time.Hour)
	specs := []spec{
		{"old", bridge.StatusCompleted, at(time.Hour), false},
		{"old_failed", bridge.StatusFailed, at(time.Minute), false},
		{"at_cutoff", bridge.StatusCompleted, cutoff, true},
		{"new", bridge.StatusCompleted, at(3 * time.Hour), true},
		{"running", bridge.StatusRunning, time.Time{}, true},
		// Continued after it had ended: running again, whatever Finished says.
		{"running_stale", bridge.StatusRunning, at(time.Minute), true},
		{"input_required", bridge.StatusInputRequired, time.Time{}, true},
	}
	want := map[string][]bridge.Event{}
	for _, sp := range specs {
		r := newRun(sp.id, "sess_1", "alice", T0)
		mustRun(t, s, r)
		evs := TextDeltas(sp.id, 1, 3)
		r.Status, r.Finished, r.LastSeq = sp.status, sp.finished, 3
		mustCommit(t, s, &bridge.Batch{Events: evs, Runs: []*bridge.Run{r}})
		if sp.kept {
			want[sp.id] = evs
		}
	}

	n, err := s.DeleteEventsBefore(ctx, cutoff)
	if err != nil {
		t.Fatalf("DeleteEventsBefore: %v", err)
	}
	if n != 6 {
		t.Errorf("DeleteEventsBefore deleted %d events, want 6", n)
	}
	for _, sp := range specs {
		diff(t, "events of "+sp.id, want[sp.id], mustEvents(t, s, sp.id, 0, 0))
		if r := mustGetRun(t, s, sp.id); r.Status != sp.status {
			t.Errorf("run %s: status %s, want %s", sp.id, r.Status, sp.status)
		}
	}
	if n, err := s.DeleteEventsBefore(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("second DeleteEventsBefore = %d, %v; want 0", n, err)
	}
}

func testNotFound(t *testing.T, s bridge.Store) {
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_1", "sess_1", "alice", T0))
	tests := []struct {
		name string
		call func() error
	}{
		{"Session", func() error { _, err := s.Session(ctx, "alice", "nope"); return err }},
		{"UpdateSession", func() error { return s.UpdateSession(ctx, &bridge.Session{ID: "nope", Updated: T0}) }},
		{"Run", func() error { _, err := s.Run(ctx, "nope"); return err }},
		{"RunByClientID", func() error { _, err := s.RunByClientID(ctx, "alice", "nope"); return err }},
		{"RunByClientID empty", func() error { _, err := s.RunByClientID(ctx, "alice", ""); return err }},
		{"RemoteID", func() error { _, err := s.RemoteID(ctx, bridge.IDToolCall, "claude", "nope"); return err }},
		{"LocalID", func() error { _, err := s.LocalID(ctx, bridge.IDToolCall, "claude", "nope"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.name, tt.call(), bridge.CodeNotFound) })
	}
}

func testConcurrentCommit(t *testing.T, s bridge.Store) {
	const (
		writers  = 4
		batches  = 25
		perBatch = 8
	)
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	runID := func(w int) string { return "run_" + strconv.Itoa(w) }
	for w := range writers {
		mustRun(t, s, newRun(runID(w), "sess_1", "alice", T0))
	}

	var (
		writing sync.WaitGroup
		reading sync.WaitGroup
		done    = make(chan struct{})
		errs    = make(chan error, writers+2)
	)
	for w := range writers {
		writing.Go(func() {
			for b := range batches {
				evs := TextDeltas(runID(w), int64(b*perBatch+1), perBatch)
				msg := bridge.Message{RunID: runID(w), Created: T0, Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart(strconv.Itoa(b))}}
				if err := s.Commit(ctx, &bridge.Batch{Events: evs, Messages: []bridge.Message{msg}}); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, b, err)
					return
				}
			}
		})
	}
	// Readers see whole batches, in order, with no gaps.
	for range 2 {
		reading.Go(func() {
			for {
				for w := range writers {
					evs, err := s.Events(ctx, runID(w), 0, 0)
					if err != nil {
						errs <- fmt.Errorf("reader: %w", err)
						return
					}
					if len(evs)%perBatch != 0 {
						errs <- fmt.Errorf("reader: %s has %d events, not whole batches of %d", runID(w), len(evs), perBatch)
						return
					}
					for i, e := range evs {
						if e.Seq != int64(i+1) {
							errs <- fmt.Errorf("reader: %s event %d has seq %d", runID(w), i, e.Seq)
							return
						}
					}
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	writing.Wait()
	close(done)
	reading.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for w := range writers {
		want := TextDeltas(runID(w), 1, batches*perBatch)
		diff(t, "events of "+runID(w), want, mustEvents(t, s, runID(w), 0, 0))
		if got := mustGetRun(t, s, runID(w)).LastSeq; got != batches*perBatch {
			t.Errorf("%s LastSeq = %d, want %d", runID(w), got, batches*perBatch)
		}
	}
	msgs, _ := mustMessages(t, s, "alice", "sess_1", 0, 0)
	if len(msgs) != writers*batches {
		t.Errorf("got %d messages, want %d", len(msgs), writers*batches)
	}
}

// sessionOrder is what SessionEvents gives: run:seq@sessionSeq.
func sessionOrder(evs []bridge.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.RunID + ":" + strconv.FormatInt(e.Seq, 10) + "@" + strconv.FormatInt(e.SessionSeq, 10)
	}
	return out
}

func mustSessionEvents(t *testing.T, s bridge.Store, session string, after bridge.SessionPos, limit int) []bridge.Event {
	t.Helper()
	evs, err := s.SessionEvents(t.Context(), "alice", session, after, limit)
	if err != nil {
		t.Fatalf("SessionEvents(%s, %+v, %d): %v", session, after, limit, err)
	}
	return evs
}

func wantSessionSeq(t *testing.T, s bridge.Store, principal, session string, want int64) {
	t.Helper()
	if n, err := s.SessionSeq(t.Context(), principal, session); err != nil || n != want {
		t.Errorf("SessionSeq(%s, %s) = %d, %v; want %d", principal, session, n, err, want)
	}
}

// testSessionEvents: each commit numbers a session's events in commit
// order, one number per run of the batch (in the order of the batch's
// events); SessionEvents reads them back in that order from any position,
// a page at a time with no gap and no duplicate; Events gives each its
// number; the session's LastSeq follows; another session counts its own.
func testSessionEvents(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	mustSession(t, s, "sess_2", "alice")
	mustRun(t, s, newRun("run_a", "sess_1", "alice", at(0)))
	mustRun(t, s, newRun("run_b", "sess_1", "alice", at(time.Second)))
	mustRun(t, s, newRun("run_c", "sess_2", "alice", at(2*time.Second)))

	// run_a alone; then run_b's and run_a's deltas in one batch (run_b
	// first: its first event comes first), packs of deltas among them;
	// then run_c of the other session with run_a; then run_b ends.
	mustCommit(t, s, &bridge.Batch{Events: TextDeltas("run_a", 1, 3)})
	b2 := append(TextDeltas("run_b", 1, 4), TextDeltas("run_a", 4, 2)...)
	b2 = append(b2, bridge.Event{RunID: "run_b", Seq: 5, Time: at(0), Kind: bridge.KindUsage, Source: bridge.SourceModel, Usage: fullUsage(3)})
	mustCommit(t, s, &bridge.Batch{Events: b2})
	mustCommit(t, s, &bridge.Batch{Events: append(TextDeltas("run_c", 1, 2), TextDeltas("run_a", 6, 1)...)})
	end := newRun("run_b", "sess_1", "alice", at(time.Second))
	end.Status, end.Finished, end.LastSeq = bridge.StatusCompleted, at(time.Minute), 6
	mustCommit(t, s, &bridge.Batch{Events: []bridge.Event{{RunID: "run_b", Seq: 6, Time: at(time.Minute), Kind: bridge.KindFinal,
		Source: bridge.SourceBridge, Final: &bridge.Final{Status: bridge.StatusCompleted}}}, Runs: []*bridge.Run{end}})

	want := []string{"run_a:1@1", "run_a:2@1", "run_a:3@1",
		"run_b:1@2", "run_b:2@2", "run_b:3@2", "run_b:4@2", "run_b:5@2",
		"run_a:4@3", "run_a:5@3",
		"run_a:6@4",
		"run_b:6@5"}
	all := mustSessionEvents(t, s, "sess_1", bridge.SessionPos{}, 0)
	diff(t, "SessionEvents(sess_1) in commit order", want, sessionOrder(all))
	diff(t, "SessionEvents(sess_2)", []string{"run_c:1@1", "run_c:2@1"}, sessionOrder(mustSessionEvents(t, s, "sess_2", bridge.SessionPos{}, 0)))
	if evs := mustSessionEvents(t, s, "sess_unknown", bridge.SessionPos{}, 0); len(evs) != 0 {
		t.Errorf("SessionEvents of an unknown session = %v, want none", sessionOrder(evs))
	}
	// The events themselves, as Events gives them.
	for _, e := range all {
		got := mustEvents(t, s, e.RunID, e.Seq-1, 1)
		if len(got) != 1 {
			t.Fatalf("Events(%s, %d, 1) = %d events", e.RunID, e.Seq-1, len(got))
		}
		diff(t, "SessionEvents' "+e.ID()+" against Events'", got[0], e)
		if got[0].SessionSeq != e.SessionSeq {
			t.Errorf("Events gives %s SessionSeq %d, SessionEvents %d", e.ID(), got[0].SessionSeq, e.SessionSeq)
		}
	}
	wantSessionSeq(t, s, "alice", "sess_1", 5)
	wantSessionSeq(t, s, "alice", "sess_2", 1)
	wantSessionSeq(t, s, "bob", "sess_1", 0)
	if evs, err := s.SessionEvents(t.Context(), "bob", "sess_1", bridge.SessionPos{}, 0); err != nil || len(evs) != 0 {
		t.Errorf("SessionEvents of another principal's session = %v, %v; want none", sessionOrder(evs), err)
	}

	// From every position, and a page at a time: the rest, once each.
	for i := range all {
		after := all[i].Pos()
		diff(t, "SessionEvents after "+all[i].ID(), want[i+1:], sessionOrder(mustSessionEvents(t, s, "sess_1", after, 0)))
	}
	diff(t, "SessionEvents before run_b's first", want[3:], sessionOrder(mustSessionEvents(t, s, "sess_1", bridge.SessionPos{SessionSeq: 2}, 0)))
	for _, page := range []int{1, 2, 3, 5} {
		var got []string
		var after bridge.SessionPos
		for range 100 {
			evs := mustSessionEvents(t, s, "sess_1", after, page)
			if len(evs) > page {
				t.Fatalf("SessionEvents(limit %d) = %d events", page, len(evs))
			}
			if len(evs) == 0 {
				break
			}
			got = append(got, sessionOrder(evs)...)
			after = evs[len(evs)-1].Pos()
		}
		diff(t, "SessionEvents a page of "+strconv.Itoa(page)+" at a time", want, got)
	}
}

// testSessionEventsInterrupt: the final event InterruptRunning appends
// takes its session's next number.
func testSessionEventsInterrupt(t *testing.T, s bridge.Store) {
	mustSession(t, s, "sess_1", "alice")
	mustRun(t, s, newRun("run_a", "sess_1", "alice", at(0)))
	mustRun(t, s, newRun("run_b", "sess_1", "alice", at(time.Second)))
	mustCommit(t, s, &bridge.Batch{Events: append(TextDeltas("run_a", 1, 2), TextDeltas("run_b", 1, 1)...)})
	if _, err := s.InterruptRunning(t.Context(), "bridge restarted", at(time.Hour)); err != nil {
		t.Fatalf("InterruptRunning: %v", err)
	}
	got := sessionOrder(mustSessionEvents(t, s, "sess_1", bridge.SessionPos{SessionSeq: 2, Seq: 1}, 0))
	if len(got) != 2 || !slices.Contains(got, "run_a:3@3") && !slices.Contains(got, "run_a:3@4") ||
		!slices.Contains(got, "run_b:2@3") && !slices.Contains(got, "run_b:2@4") || got[0][len(got[0])-1] != '3' {
		t.Errorf("after InterruptRunning: %v, want run_a:3 and run_b:2 numbered 3 and 4", got)
	}
	wantSessionSeq(t, s, "alice", "sess_1", 4)
}

// testSessionEventsConcurrent: writers commit to runs of one session at
// once; every reader's SessionEvents is in commit order as it saw it: each
// run's events in seq order, each number one run's, no number read
// before a lower one (a reader that saw number n saw every number below
// it), and at the end all of them, numbered 1 to the session's LastSeq.
func testSessionEventsConcurrent(t *testing.T, s bridge.Store) {
	const (
		writers  = 4
		batches  = 20
		perBatch = 3
	)
	ctx := t.Context()
	mustSession(t, s, "sess_1", "alice")
	runID := func(w int) string { return "run_" + strconv.Itoa(w) }
	for w := range writers {
		mustRun(t, s, newRun(runID(w), "sess_1", "alice", T0))
	}
	var (
		writing sync.WaitGroup
		reading sync.WaitGroup
		done    = make(chan struct{})
		errs    = make(chan error, writers+2)
	)
	for w := range writers {
		writing.Go(func() {
			for b := range batches {
				if err := s.Commit(ctx, &bridge.Batch{Events: TextDeltas(runID(w), int64(b*perBatch+1), perBatch)}); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, b, err)
					return
				}
			}
		})
	}
	check := func(evs []bridge.Event) error {
		last := map[string]int64{}
		owner := map[int64]string{}
		var prev int64
		for _, e := range evs {
			if e.Seq != last[e.RunID]+1 {
				return fmt.Errorf("%s after %s:%d", e.ID(), e.RunID, last[e.RunID])
			}
			last[e.RunID] = e.Seq
			if o, ok := owner[e.SessionSeq]; ok && o != e.RunID {
				return fmt.Errorf("number %d is %s's and %s's", e.SessionSeq, o, e.RunID)
			}
			owner[e.SessionSeq] = e.RunID
			if e.SessionSeq != prev && e.SessionSeq != prev+1 {
				return fmt.Errorf("number %d after %d: one is missing", e.SessionSeq, prev)
			}
			prev = e.SessionSeq
		}
		return nil
	}
	for range 2 {
		reading.Go(func() {
			for {
				evs, err := s.SessionEvents(ctx, "alice", "sess_1", bridge.SessionPos{}, 0)
				if err == nil {
					err = check(evs)
				}
				if err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					return
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	writing.Wait()
	close(done)
	reading.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	evs := mustSessionEvents(t, s, "sess_1", bridge.SessionPos{}, 0)
	if err := check(evs); err != nil {
		t.Error(err)
	}
	if len(evs) != writers*batches*perBatch || evs[len(evs)-1].SessionSeq != writers*batches {
		t.Fatalf("%d events, the last numbered %d; want %d events numbered up to %d", len(evs), evs[len(evs)-1].SessionSeq, writers*batches*perBatch, writers*batches)
	}
	wantSessionSeq(t, s, "alice", "sess_1", writers*batches)
}
