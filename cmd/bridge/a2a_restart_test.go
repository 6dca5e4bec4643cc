package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
)

// readSSE reads SSE events from r until stop says enough (or the stream
// ends), and returns them.
func readSSE(t *testing.T, r io.Reader, stop func([]sseEvent) bool) []sseEvent {
	t.Helper()
	var (
		out []sseEvent
		cur sseEvent
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
			if stop != nil && stop(out) {
				return out
			}
		}
	}
	return out
}

// chunkText is the delta content of an OpenAI chunk ("" for [DONE] and
// chunks without text).
func chunkText(t *testing.T, data string) string {
	t.Helper()
	if data == "[DONE]" {
		return ""
	}
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("chunk %s: %v", data, err)
	}
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Delta.Content
}

// TestA2ARestartResumesUpstream SIGKILLs a bridge while an OpenAI client
// (X-Session-Id: the run is detached) streams an answer from an A2A
// upstream agent, and restarts it on the same store. The run is not
// interrupted: the restarted bridge resubscribes to the agent's task with
// Last-Event-ID the last upstream event id it had committed, and the run's
// events from the start hold the agent's whole answer exactly once, every
// event the client saw unchanged, seqs with no gap, ending completed. The
// agent was sent one message: the task went on, it was not started again.
//
// The agent is a bridge serving A2A over a slow OpenAI upstream: its
// tasks/resubscribe replays the frames after Last-Event-ID (a2a-go's own
// server only follows the events produced after it resubscribes, so the
// chunks streamed while the bridge was down would be lost to any client).
func TestA2ARestartResumesUpstream(t *testing.T) {
	answer := words("r", 150)
	up := newSlowOpenAI(t, 15*time.Millisecond, func(int) []string { return answer })
	agent := a2aBridge(t, up.baseURL())
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent)

	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	resp, runID := streamDetached(ctx, t, base, "agent", "restart-1")
	var text strings.Builder
	seen := readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > len(answer[0])*5 // a few words in
	})
	if text.Len() == 0 || runID == "" {
		t.Fatalf("run %q: read %d events, text %q", runID, len(seen), text.String())
	}
	killBridge(t, proc)
	resp.Body.Close()

	_, base = bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent)
	if run := getRun(t, base, runID); run.Status != bridge.StatusRunning && run.Status != bridge.StatusCompleted {
		t.Fatalf("after the restart the run is %s (%q), want running (resumed upstream)", run.Status, run.Reason)
	}

	// From the start: follows the resumed run to its end.
	all := replaySSE(t, base, runID)
	var got strings.Builder
	var last int64
	ids := map[string]string{}
	for _, ev := range all {
		got.WriteString(chunkText(t, ev.data))
		if ev.id == "" {
			continue
		}
		rid, seq, ok := bridge.ParseEventID(ev.id)
		if !ok || rid != runID {
			t.Fatalf("event id %q does not name run %s", ev.id, runID)
		}
		if seq <= last {
			t.Errorf("event %s after seq %d", ev.id, last)
		}
		last = seq
		ids[ev.id] = ev.data
	}
	if want := strings.Join(answer, ""); got.String() != want {
		t.Errorf("the run's answer after the restart is\n%q\nwant exactly once\n%q", got.String(), want)
	}
	for _, ev := range seen {
		if ev.id == "" {
			continue
		}
		if d, ok := ids[ev.id]; !ok || d != ev.data {
			t.Errorf("event %s the client saw replays as %q, want %q", ev.id, d, ev.data)
		}
	}

	if run := getRun(t, base, runID); run.Status != bridge.StatusCompleted || len(run.Dropped) != 0 {
		t.Errorf("the resumed run ended %s (%q), dropped %v; want completed, nothing dropped", run.Status, run.Reason, run.Dropped)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the agent's model was called %d times, want once (the task resumed, not sent again)", n)
	}
}

// TestA2ARestartResumeRefused: when the agent is gone after the restart,
// the run cannot be resumed: tried again for --resume-retry (300 ms here),
// it is closed as interrupted, with a reason that says the resume failed;
// the events the client saw stay.
func TestA2ARestartResumeRefused(t *testing.T) {
	agent := a2atest.New(func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: words("g", 100), Delay: 15 * time.Millisecond}
	})
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent.URL)

	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	resp, runID := streamDetached(ctx, t, base, "agent", "restart-2")
	var text strings.Builder
	seen := readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > 10
	})
	killBridge(t, proc)
	resp.Body.Close()
	agent.Close()

	_, base = bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent.URL, "--resume-retry", "300ms")
	ids := map[string]string{}
	for _, ev := range replaySSE(t, base, runID) {
		ids[ev.id] = ev.data
	}
	for _, ev := range seen {
		if d, ok := ids[ev.id]; ev.id != "" && (!ok || d != ev.data) {
			t.Errorf("event %s the client saw replays as %q, want %q", ev.id, d, ev.data)
		}
	}
	run := getRun(t, base, runID)
	for deadline := time.Now().Add(10 * time.Second); run.Status == bridge.StatusRunning && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // the resume is tried again in the background
		run = getRun(t, base, runID)
	}
	if run.Status != bridge.StatusInterrupted || !strings.Contains(run.Reason, "could not resume") {
		t.Errorf("the run is %s (%q), want interrupted saying the resume failed", run.Status, run.Reason)
	}
}

// TestA2ARestartOverA2AGo: a2a-go's server resubscribes a task with only
// the events made after the resubscribe, so what it streamed while the
// bridge was down is not in the resumed run. That is never silent: the
// run says it dropped it (the task's artifacts, read at the end, hold
// more than the run), and no text is repeated.
func TestA2ARestartOverA2AGo(t *testing.T) {
	answer := words("g", 100)
	agent := a2atest.New(func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: answer, Delay: 15 * time.Millisecond}
	})
	t.Cleanup(agent.Close)
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent.URL)
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	resp, runID := streamDetached(ctx, t, base, "agent", "restart-3")
	var text strings.Builder
	readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > 10
	})
	killBridge(t, proc)
	resp.Body.Close()

	_, base = bridgeProcess(t, "--db", db, "--upstream", "a2a="+agent.URL)
	var got strings.Builder
	for _, ev := range replaySSE(t, base, runID) {
		got.WriteString(chunkText(t, ev.data))
	}
	run := getRun(t, base, runID)
	if run.Status != bridge.StatusCompleted {
		t.Errorf("the resumed run ended %s (%q), want completed", run.Status, run.Reason)
	}
	seen := map[string]bool{}
	for _, w := range strings.Fields(got.String()) {
		if seen[w] {
			t.Errorf("%q twice in %q", w, got.String())
		}
		seen[w] = true
	}
	lost := got.String() != strings.Join(answer, "")
	if said := slices.Contains(run.Dropped, "a2a:text_streamed_while_the_bridge_was_down"); said != lost {
		t.Errorf("text %q (lost some: %v), the run's dropped %v", got.String(), lost, run.Dropped)
	}
}

// TestA2ARestartResumesOverFallback: the route's primary is down (nothing
// listens), so its A2A fallback serves the run; the bridge is SIGKILLed
// mid-answer and restarted on the same store and config. The run resumes
// over the fallback that served it (not closed as interrupted, as it was
// while only the route's own upstream could resume), to the whole answer
// exactly once; the agent was sent one message.
func TestA2ARestartResumesOverFallback(t *testing.T) {
	answer := words("f", 150)
	up := newSlowOpenAI(t, 15*time.Millisecond, func(int) []string { return answer })
	agent := a2aBridge(t, up.baseURL())
	dir := t.TempDir()
	db, cfg := filepath.Join(dir, "bridge.db"), filepath.Join(dir, "bridge.yaml")
	yaml := "upstreams:\n" +
		"  - name: down\n    dialect: openai\n    url: http://127.0.0.1:1/v1\n    models: [\"*\"]\n    fallbacks: [agent]\n" +
		"    retry: {disabled: true}\n" +
		"  - name: agent\n    dialect: a2a\n    url: " + agent + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	proc, base := bridgeProcess(t, "--db", db, "--config", cfg)

	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	resp, runID := streamDetached(ctx, t, base, "any", "fallback-restart")
	var text strings.Builder
	readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > len(answer[0])*5
	})
	if run := getRun(t, base, runID); run.Upstream != "agent" {
		t.Fatalf("the run went to %q, want the fallback agent", run.Upstream)
	}
	killBridge(t, proc)
	resp.Body.Close()

	_, base = bridgeProcess(t, "--db", db, "--config", cfg)
	if run := getRun(t, base, runID); run.Status != bridge.StatusRunning && run.Status != bridge.StatusCompleted {
		t.Fatalf("after the restart the run is %s (%q), want resumed over its fallback", run.Status, run.Reason)
	}
	var got strings.Builder
	for _, ev := range replaySSE(t, base, runID) {
		got.WriteString(chunkText(t, ev.data))
	}
	if want := strings.Join(answer, ""); got.String() != want {
		t.Errorf("the run's answer after the restart is\n%q\nwant exactly once\n%q", got.String(), want)
	}
	if run := getRun(t, base, runID); run.Status != bridge.StatusCompleted || run.Upstream != "agent" {
		t.Errorf("the resumed run ended %s (%q) on %q; want completed on agent", run.Status, run.Reason, run.Upstream)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the agent's model was called %d times, want once (the task resumed, not sent again)", n)
	}
}
