package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// TestADKRestartResumesUpstream SIGKILLs a bridge while an OpenAI client
// (X-Session-Id: the run is detached) streams an answer from an ADK
// upstream, and restarts it on the same store. The restarted bridge asks
// the upstream's ADK session for the events after the last upstream event
// id it had committed (run_sse with lastEventId, no newMessage), and the
// run's events hold the whole answer exactly once, ending completed; the
// model upstream was called once. The ADK upstream is a bridge serving
// ADK over a slow OpenAI upstream (ADK itself has no resume: its runs end
// interrupted, as TestToolsAndErrors in outbound/adk shows).
func TestADKRestartResumesUpstream(t *testing.T) {
	answer := words("k", 120)
	up := newSlowOpenAI(t, 15*time.Millisecond, func(int) []string { return answer })
	agent := a2aBridge(t, up.baseURL())
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "adk="+agent)

	resp, runID := streamDetached(t.Context(), t, base, "agent", "adk-restart-1")
	var text strings.Builder
	readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > len(answer[0])*5
	})
	if text.Len() == 0 || runID == "" {
		t.Fatalf("run %q: text %q", runID, text.String())
	}
	killBridge(t, proc)
	resp.Body.Close()

	_, base = bridgeProcess(t, "--db", db, "--upstream", "adk="+agent)
	var got strings.Builder
	for _, ev := range replaySSE(t, base, runID) {
		got.WriteString(chunkText(t, ev.data))
	}
	if want := strings.Join(answer, ""); got.String() != want {
		t.Errorf("the run's text after the restart:\n got %q\nwant %q", got.String(), want)
	}
	if run := getRun(t, base, runID); run.Status != bridge.StatusCompleted {
		t.Errorf("run: %s %q", run.Status, run.Reason)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the model upstream got %d requests, want 1", n)
	}
}
