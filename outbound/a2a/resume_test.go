package a2a_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sony/gobreaker"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound"
	outa2a "github.com/bridge-dev/bridge/outbound/a2a"
	"github.com/bridge-dev/bridge/storage/memory"
)

// TestResumeAfterRestart: a client of another process (the bridge
// restarted) resumes a task from the events the first one yielded: the
// resubscribe, which begins with a Task snapshot holding the artifact so
// far, adds only the text not yet emitted, with no second
// message_started; the whole answer is there once and the task ends
// completed.
func TestResumeAfterRestart(t *testing.T) {
	all := "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 "
	a := newCorpusAgent(t, "a2a-v0.3/server/agent-card.json", nil)
	a.answer("message/stream", loadCapture(t, "a2a-v0.3/server/tasks-resubscribe.before-disconnect.sse"))
	ids := memory.New(nil)
	call, err := outa2a.New(outa2a.Config{Name: "agent", URL: a.URL, IDs: ids}).Open(ctxRun(t), userReq("slow"))
	if err != nil {
		t.Fatal(err)
	}
	first := drain(t, call) // the stream breaks; this agent cannot resume it
	if first.err == nil || first.text != "w1 " {
		t.Fatalf("first process: text %q err %v", first.text, first.err)
	}
	run := &bridge.Run{ID: "run_1", SessionID: "sess_1"}
	for _, ev := range first.events {
		if ev.Kind == bridge.KindMessageStarted {
			run.UpstreamRunID = ev.ResponseID
		}
	}

	a.answer("tasks/resubscribe", loadCapture(t, "a2a-v0.3/server/tasks-resubscribe.sse"))
	resumed, err := outa2a.New(outa2a.Config{Name: "agent", URL: a.URL, IDs: ids}).Resume(ctxRun(t), userReq("slow"), run, first.events)
	if err != nil {
		t.Fatal(err)
	}
	r := drain(t, resumed)
	if r.err != nil || first.text+r.text != all || r.final == nil || r.final.Status != bridge.StatusCompleted {
		t.Errorf("resumed: text %q (after %q) final %+v err %v; want %q once", r.text, first.text, r.final, r.err, all)
	}
	for _, ev := range r.events {
		if ev.Kind == bridge.KindMessageStarted {
			t.Errorf("the resumed call starts the message again")
		}
	}
	// The resubscribe, then tasks/get at the end, comparing the answer
	// with the task's (this agent has no tasks/get: it cannot tell).
	if m := a.methods(); len(m) < 2 || strings.Join(m[len(m)-2:], ",") != "tasks/resubscribe,tasks/get" {
		t.Errorf("calls %s", strings.Join(m, ","))
	}
	if len(resumed.Dropped) != 0 {
		t.Errorf("dropped %v", resumed.Dropped)
	}

	// A run whose task was never named cannot be resumed.
	if _, err := outa2a.New(outa2a.Config{URL: a.URL}).Resume(ctxRun(t), nil, &bridge.Run{ID: "run_2"}, nil); err == nil {
		t.Error("Resume of a run with no task: no error")
	}
}

// TestResumeOfUnnamedTaskSparesTheBreaker: a run the crash cut before its
// agent named the task cannot be resumed, and says so without reaching the
// agent; that is not the agent failing, so a restart that finds several
// such runs in a row does not open the agent's breaker (it did: five of
// them refused the resume of every run after them, which ended all
// interrupted).
func TestResumeOfUnnamedTaskSparesTheBreaker(t *testing.T) {
	a := newCorpusAgent(t, "a2a-v0.3/server/agent-card.json", nil)
	b := outbound.NewBreaker("agent", outbound.BreakerConfig{Failures: 2}, nil, nil)
	up := outbound.WrapAdmit(outa2a.New(outa2a.Config{Name: "agent", URL: a.URL, IDs: memory.New(nil)}), b.Admit, b.Middleware())
	res, ok := bridge.ResumerOf(up)
	if !ok {
		t.Fatal("the wrapped A2A client has no Resumer")
	}
	for i := range 4 {
		_, err := res.Resume(ctxRun(t), userReq("hi"), &bridge.Run{ID: "run_" + string(rune('a'+i)), SessionID: "sess_1"}, nil)
		if err == nil || errors.Is(err, outbound.ErrBreakerOpen) || bridge.AsError(err).Retryable() {
			t.Fatalf("resume %d of a run with no task: err %v, want a refusal that is not the agent's fault", i, err)
		}
	}
	if s := b.State(); s != gobreaker.StateClosed {
		t.Errorf("breaker %s after resumes of runs with no task, want closed", s)
	}
}
