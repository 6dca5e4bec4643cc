package bridge_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// TestSteerWhileAnswering: a steer that arrives while the model writes its
// final answer makes one more model call in the same run, with the steer at
// the end of the transcript.
func TestSteerWhileAnswering(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Gate: gate, Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return bridgetest.TextEvents("first ", "answer")
		}
		return bridgetest.TextEvents("second")
	}}
	e, _ := newEngine(t, up)
	req := userRequest("hello")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{} // message_started
	gate <- struct{}{} // "first "
	steer := bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("also this")}}
	if err := e.Steer(t.Context(), run.ID, steer); err != nil {
		t.Fatal(err)
	}
	for range 3 + 4 { // the rest of call 1, then call 2
		gate <- struct{}{}
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	evs := collect(t, events)
	var kinds []bridge.Kind
	var text string
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
		text += ev.Text
	}
	if text != "first answersecond" {
		t.Errorf("text = %q", text)
	}
	if f := evs[len(evs)-1].Final; f == nil || f.Status != bridge.StatusCompleted {
		t.Fatalf("final = %+v", f)
	}
	// The steer is in the log between the first call's start and the second's.
	steerAt, secondAt := -1, -1
	for i, ev := range evs {
		if ev.Kind == bridge.KindUserMessage && ev.Message.Text() == "also this" {
			steerAt = i
		}
		if ev.Kind == bridge.KindMessageStarted && i > 1 {
			secondAt = i
		}
	}
	if steerAt < 2 || secondAt < steerAt {
		t.Errorf("steer at %d, second call at %d: %v", steerAt, secondAt, kinds)
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream calls, want 2", len(reqs))
	}
	var roles []string
	for _, m := range reqs[1].Messages {
		roles = append(roles, string(m.Role)+":"+m.Text())
	}
	want := []string{"user:hello", "assistant:first answer", "user:also this"}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("second call's transcript (-want +got):\n%s", diff)
	}
	page, _ := e.History(t.Context(), run.SessionID, "", 0)
	roles = roles[:0]
	for _, m := range page.Messages {
		roles = append(roles, string(m.Role)+":"+m.Text())
	}
	want = append(want, "assistant:second")
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}

	// The run has ended: a steer now is refused, not lost.
	if err := e.Steer(t.Context(), run.ID, steer); bridge.ErrorCode(err) != bridge.CodeConflict {
		t.Errorf("steer after the end: %v, want conflict", err)
	}
	if err := e.Steer(t.Context(), "run_nope", steer); bridge.ErrorCode(err) != bridge.CodeNotFound {
		t.Errorf("steer of an unknown run: %v, want not found", err)
	}
}

// TestSteerWaitsForToolResults: a steer during a step that ends in client
// tool calls joins the run after the client's results.
func TestSteerWaitsForToolResults(t *testing.T) {
	gate := make(chan struct{}, 100)
	call := bridge.ToolCall{ID: "call_9", Name: "f", Arguments: "{}"}
	up := &bridgetest.Upstream{Gate: gate, Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return []bridge.Event{
				{Kind: bridge.KindMessageStarted},
				{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: call.ID, Name: call.Name}},
				{Kind: bridge.KindToolCallDone, ToolCall: &call},
				{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
			}
		}
		return bridgetest.TextEvents("done")
	}}
	e, _ := newEngine(t, up)
	run, err := e.Start(t.Context(), userRequest("go"))
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	if err := e.Steer(t.Context(), run.ID, bridge.Message{Parts: []bridge.Part{bridge.TextPart("hurry")}}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		gate <- struct{}{}
	}
	_, events, _ := e.Subscribe(t.Context(), run.ID, 0)
	collect(t, events)
	next := userRequest("go")
	next.SessionID = run.SessionID
	next.Messages = append(next.Messages,
		bridge.Message{Role: bridge.RoleAssistant, NullContent: true, ToolCalls: []bridge.ToolCall{call}},
		bridge.Message{Role: bridge.RoleTool, ToolCallID: call.ID, Parts: []bridge.Part{bridge.TextPart("ok")}})
	run2, err := e.Start(t.Context(), next)
	if err != nil || run2.ID != run.ID {
		t.Fatalf("continuation: %v, run %v", err, run2)
	}
	_, events, _ = e.Subscribe(t.Context(), run.ID, 0)
	collect(t, events)
	reqs := up.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1]; got.Role != bridge.RoleUser || got.Text() != "hurry" || last[len(last)-2].Role != bridge.RoleTool {
		t.Errorf("continued transcript ends %+v, want the tool result then the steer", last[len(last)-2:])
	}
}
