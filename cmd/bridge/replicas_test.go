package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// replicaLease is the lease of the replicas of these tests: short, so a
// killed replica's runs are taken over within a second or two.
const replicaLease = "1s"

// threeReplicas starts three `bridge serve` processes on one fresh
// PostgreSQL schema with the given upstream.
func threeReplicas(t *testing.T, upstream string, extra ...string) (procs [3]*exec.Cmd, bases [3]string) {
	t.Helper()
	db := pgtest.Schema(t)
	for i := range procs {
		proc, addr := bridgeProcess(t, append([]string{"--db", db, "--lease", replicaLease, "--upstream", upstream}, extra...)...)
		procs[i], bases[i] = proc, addr
	}
	return procs, bases
}

// replicaScenario is the scenario over three replicas: a stream
// starts on A; 5 of its events are read through B's run API; A is
// SIGKILLed; the client resumes on C from the last id it saw and reads to
// the end; the history is read through B. It returns what the client read
// (text, whole stream, the run) for the caller's checks.
func replicaScenario(t *testing.T, bases [3]string, killA func(), model, input string) (text string, ids []string, run bridge.Run, hist string) {
	t.Helper()
	a, b, c := bases[0], bases[1], bases[2]
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", a+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"`+input+`"}]}`))
	req.Header.Set("X-Session-Id", "replicas")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	runID := resp.Header.Get("X-Run-Id")
	var got strings.Builder
	seen := readSSE(t, resp.Body, func(evs []sseEvent) bool {
		got.WriteString(chunkText(t, evs[len(evs)-1].data))
		return len(evs) >= 3
	})
	if runID == "" || len(seen) < 3 {
		t.Fatalf("run %q: %d events from A", runID, len(seen))
	}
	for _, ev := range seen {
		ids = append(ids, ev.id)
	}

	// 5 events through B's run API, as A drives the run.
	req, _ = http.NewRequestWithContext(ctx, "GET", b+"/v1/runs/"+runID+"/events", nil)
	rb, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	fromB := readSSE(t, rb.Body, func(evs []sseEvent) bool { return len(evs) >= 5 })
	rb.Body.Close()
	if len(fromB) < 5 {
		t.Fatalf("B gave %d events of A's run, want 5", len(fromB))
	}
	for i := range seen {
		if fromB[i] != seen[i] {
			t.Fatalf("B's event %d differs from A's:\nB %v\nA %v", i, fromB[i], seen[i])
		}
	}

	killA()
	resp.Body.Close()

	// The client resumes on C from the last id it saw, to the end.
	text, more := resumeChat(t, ctx, c, runID, ids[len(ids)-1])
	got.WriteString(text)
	ids = append(ids, more...)
	run = getRun(t, b, runID)
	hist = getBody(t, ctx, b+"/v1/sessions/replicas/history?format=openai")
	if strings.Count(hist, `"content":"`+input+`"`) != 1 { // the message, not a run id that happens to hold the text
		t.Errorf("B's history of the session does not hold the run's input once: %s", hist)
	}
	return got.String(), ids, run, hist
}

// resumeChat resumes the Chat stream of runID on the bridge at base after
// the frame id after, reads it to its [DONE], and returns its text and
// frame ids.
func resumeChat(t *testing.T, ctx context.Context, base, runID, after string) (string, []string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/runs/"+runID+"/events", nil)
	req.Header.Set("Last-Event-ID", after)
	rc, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rest := readSSE(t, rc.Body, nil)
	rc.Body.Close()
	if rc.StatusCode != 200 || len(rest) == 0 || rest[len(rest)-1].data != "[DONE]" {
		t.Fatalf("resume on %s: %d, %d events, want to [DONE]", base, rc.StatusCode, len(rest))
	}
	var text strings.Builder
	var ids []string
	for _, ev := range rest {
		text.WriteString(chunkText(t, ev.data))
		if ev.id != "" {
			ids = append(ids, ev.id)
		}
	}
	return text.String(), ids
}

func getBody(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// noDuplicates fails t when an event id repeats.
func noDuplicates(t *testing.T, ids []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("event id %s twice in the client's stream", id)
		}
		seen[id] = true
	}
}

// noneRunning fails t when a run of the store is left running, asked
// through base.
func noneRunning(t *testing.T, base string, runs ...string) {
	t.Helper()
	for _, id := range runs {
		if r := getRun(t, base, id); r.Status == bridge.StatusRunning {
			t.Errorf("run %s left running", id)
		}
	}
}

// TestReplicasA2AResumedUpstream: the three-replica scenario over
// an A2A upstream (another bridge as the agent): once A's lease ends, B or
// C resumes the run upstream, and the client that resumes on C ends with
// the agent's exact answer once. Then a stop sent to B of a run C drives
// reaches C: the run ends cancelled, and C's client's stream ends.
func TestReplicasA2AResumedUpstream(t *testing.T) {
	answer := words("q", 120)
	up := newSlowOpenAI(t, 15*time.Millisecond, func(int) []string { return answer })
	agent := a2aBridge(t, up.baseURL())
	procs, bases := threeReplicas(t, "a2a="+agent)
	text, ids, run, hist := replicaScenario(t, bases, func() { killBridge(t, procs[0]) }, "agent", "go")
	want := strings.Join(answer, "")
	if text != want {
		t.Errorf("the client read:\n %q\nwant\n %q", text, want)
	}
	if strings.Count(hist, strings.TrimSpace(want)) != 1 {
		t.Errorf("B's history does not hold the answer once: %s", hist)
	}
	noDuplicates(t, ids)
	if run.Status != bridge.StatusCompleted {
		t.Errorf("run: %s %q, want completed", run.Status, run.Reason)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1 (the task resumed, not started again)", n)
	}

	// Stop through B, of a run C drives.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, runID := streamDetached(ctx, t, bases[2], "agent", "replicas-stop")
	defer resp.Body.Close()
	readSSE(t, resp.Body, func(evs []sseEvent) bool { return len(evs) >= 3 })
	req, _ := http.NewRequestWithContext(ctx, "POST", bases[1]+"/v1/runs/"+runID+"/stop", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var stopped bridge.Run
	err = json.NewDecoder(r.Body).Decode(&stopped)
	r.Body.Close()
	if err != nil || r.StatusCode != 200 || stopped.Status != bridge.StatusCancelled {
		t.Fatalf("stop through B: %d %+v %v, want the run cancelled", r.StatusCode, stopped, err)
	}
	readSSE(t, resp.Body, nil) // C's client's stream ends
	noneRunning(t, bases[1], run.ID, runID)
}

// TestReplicasInterruptedWhenNotResumable: the same scenario over an
// upstream that cannot resume (the echo model): the surviving replica
// closes the run as interrupted, and the client that resumes on C gets
// what it had not seen, then the end, nothing twice.
func TestReplicasInterruptedWhenNotResumable(t *testing.T) {
	procs, bases := threeReplicas(t, "echo", "--echo-delay", "40ms")
	_, ids, run, _ := replicaScenario(t, bases, func() { killBridge(t, procs[0]) }, "echo", strings.TrimSpace(strings.Join(words("e", 60), "")))
	noDuplicates(t, ids)
	if run.Status != bridge.StatusInterrupted {
		t.Errorf("run: %s %q, want interrupted", run.Status, run.Reason)
	}
}
