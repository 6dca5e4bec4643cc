package main

import (
	"net/http"
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

	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"agent","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("X-Session-Id", "adk-restart-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	runID := resp.Header.Get("X-Run-Id")
	var text strings.Builder
	readSSE(t, resp.Body, func(evs []sseEvent) bool {
		text.WriteString(chunkText(t, evs[len(evs)-1].data))
		return text.Len() > len(answer[0])*5
	})
	if text.Len() == 0 || runID == "" {
		t.Fatalf("run %q: text %q", runID, text.String())
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	resp.Body.Close()

	_, base = bridgeProcess(t, "--db", db, "--upstream", "adk="+agent)
	r, err := http.Get(base + "/v1/runs/" + runID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	all := readSSE(t, r.Body, nil)
	r.Body.Close()
	var got strings.Builder
	for _, ev := range all {
		got.WriteString(chunkText(t, ev.data))
	}
	if want := strings.Join(answer, ""); got.String() != want {
		t.Errorf("the run's text after the restart:\n got %q\nwant %q", got.String(), want)
	}
	rr, err := http.Get(base + "/v1/runs/" + runID)
	if err != nil {
		t.Fatal(err)
	}
	var run bridge.Run
	err = jsonDecode(rr, &run)
	rr.Body.Close()
	if err != nil || run.Status != bridge.StatusCompleted {
		t.Errorf("run: %v %s %q", err, run.Status, run.Reason)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the model upstream got %d requests, want 1", n)
	}
}
