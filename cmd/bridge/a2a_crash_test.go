package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
)

// resultOf is the result member of a frame's JSON-RPC response (the
// response's id is the request's, so replays differ there only).
func resultOf(t *testing.T, data string) string {
	t.Helper()
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		t.Fatalf("frame data: %v: %s", err, data)
	}
	return string(r.Result)
}

// TestA2AKillMidTask SIGKILLs the bridge while an A2A task streams. After a
// restart, tasks/get has the task with everything streamed before the
// kill, and tasks/resubscribe replays every frame the client saw, byte for
// byte in its result, then the rest after Last-Event-ID.
func TestA2AKillMidTask(t *testing.T) {
	up := newSlowOpenAI(t, 20*time.Millisecond, func(int) []string { return words("k", 200) })
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, addr := bridgeProcess(t, "--db", db, "--upstream", "openai="+up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()

	tap := &sseTap{}
	client, _ := a2aClient(t, ctx, addr, tap)
	var seen []a2asdk.Event
	sctx, drop := context.WithCancel(ctx)
	for ev, err := range client.SendStreamingMessage(sctx, userMessage("crash-ctx", "go")) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev)
		if len(seen) == 12 {
			break
		}
	}
	frames := tap.snapshot()[:len(seen)]
	killBridge(t, proc)
	drop()
	taskID := seen[0].TaskInfo().TaskID
	streamed := answerText(seen)
	if streamed == "" {
		t.Fatal("nothing of the answer was streamed before the kill")
	}

	_, addr = bridgeProcess(t, "--db", db, "--upstream", "openai="+up.baseURL())
	tap2 := &sseTap{}
	client, _ = a2aClient(t, ctx, addr, tap2)

	task, err := client.GetTask(ctx, &a2asdk.TaskQueryParams{ID: taskID})
	if err != nil {
		t.Fatal(err)
	}
	if task.ContextID != "crash-ctx" || task.Status.State != a2asdk.TaskStateFailed || !strings.HasPrefix(taskText(task), streamed) {
		t.Errorf("after the restart tasks/get = state %s context %s text %q; want failed (interrupted) in crash-ctx, text starting %q",
			task.Status.State, task.ContextID, taskText(task), streamed)
	}
	if task.Status.Message == nil || !strings.Contains(taskText(&a2asdk.Task{Artifacts: []*a2asdk.Artifact{{Parts: task.Status.Message.Parts}}}), "bridge restarted") {
		t.Errorf("the status message does not say the bridge restarted: %+v", task.Status.Message)
	}
	if len(task.History) == 0 || task.History[0].Role != a2asdk.MessageRoleUser {
		t.Errorf("history lost the user message: %+v", task.History)
	}

	// A replay from the start: every frame the client saw, unchanged.
	var replay []a2asdk.Event
	for ev, err := range client.ResubscribeToTask(ctx, &a2asdk.TaskIDParams{ID: taskID}) {
		if err != nil {
			t.Fatal(err)
		}
		replay = append(replay, ev)
	}
	got := map[string]string{}
	for _, f := range tap2.snapshot() {
		got[f.id] = resultOf(t, f.data)
	}
	for _, f := range frames {
		r, ok := got[f.id]
		switch {
		case !ok:
			t.Errorf("event %s the client saw is not replayed after the restart", f.id)
		case r != resultOf(t, f.data):
			t.Errorf("event %s replays as\n%s\nbut the client saw\n%s", f.id, r, resultOf(t, f.data))
		}
	}
	if st, final := finalState(replay); st != a2asdk.TaskStateFailed || !final {
		t.Errorf("the replay ends in %s (final %v), want failed", st, final)
	}

	// After the last frame seen: the rest, then the end.
	tap2.reset()
	last := frames[len(frames)-1].id
	var rest []a2asdk.Event
	for ev, err := range client.ResubscribeToTask(context.WithValue(ctx, lastEventIDKey{}, last), &a2asdk.TaskIDParams{ID: taskID}) {
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, ev)
	}
	if answerText(seen)+answerText(rest) != taskText(task) {
		t.Errorf("seen + resumed text %q, the task holds %q", answerText(seen)+answerText(rest), taskText(task))
	}
	if rf := tap2.snapshot(); len(rf) > 0 {
		_, s0, _ := bridge.ParseEventID(last)
		_, s1, _ := bridge.ParseEventID(rf[0].id)
		if s1 != s0+1 {
			t.Errorf("resumed at seq %d after %d", s1, s0)
		}
	}
}
