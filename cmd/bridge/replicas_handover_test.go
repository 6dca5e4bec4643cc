package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// heldOpenAI is an OpenAI upstream that streams an answer's first words,
// then holds the rest until release is called: a run on it cannot end
// before the test lets it, however slow the machine.
type heldOpenAI struct {
	*httptest.Server
	answer    []string
	hold      int // words sent before the hold
	released  chan struct{}
	once      sync.Once
	requests  atomic.Int32
	cancelled atomic.Int32 // requests whose client went away before the answer's end
}

func newHeldOpenAI(t *testing.T, answer []string, hold int) *heldOpenAI {
	t.Helper()
	u := &heldOpenAI{answer: answer, hold: hold, released: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() { u.release(); u.Server.Close() })
	return u
}

func (u *heldOpenAI) baseURL() string { return u.URL + "/v1" }

func (u *heldOpenAI) release() { u.once.Do(func() { close(u.released) }) }

func (u *heldOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	c := &openaitest.Chunks{ID: "chatcmpl-held", Model: "m"}
	chunks := c.Role().Text(u.answer...).Finish("stop").Usage(3, len(u.answer)).List()
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i, data := range chunks {
		if i == u.hold+1 { // the role chunk, then hold words
			select {
			case <-u.released:
			case <-r.Context().Done():
				u.cancelled.Add(1)
				return
			}
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil || rc.Flush() != nil {
			u.cancelled.Add(1)
			return
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// graceConfig writes a config file whose shutdown_grace is grace.
func graceConfig(t *testing.T, grace string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(p, []byte("shutdown_grace: "+grace+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runRow reads a run's owner and status from the database.
func runRow(ctx context.Context, t *testing.T, db, id string) (owner, status string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.QueryRow(ctx, `SELECT owner, status FROM runs WHERE id = $1`, id).Scan(&owner, &status); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	return owner, status
}

// rawLines reads sc's lines until stop says enough (nil: to the end, or
// a cut).
func rawLines(sc *bufio.Scanner, stop func(line string) bool) []string {
	var out []string
	for sc.Scan() {
		out = append(out, sc.Text())
		if stop != nil && stop(sc.Text()) {
			break
		}
	}
	return out
}

// TestReplicasGracefulHandover: three `bridge serve` replicas on one
// PostgreSQL over an agent upstream that can resume a run (another bridge
// as the agent, spoken to in A2A, ADK and Hermes in turn), with a lease of
// two minutes and a grace of 300 ms. A Chat Completions stream and an
// Anthropic one start on A; A gets SIGTERM. When its grace ends, A hands
// both runs over instead of interrupting them: the streams it served end
// with no final event and no error frame, nothing is cancelled upstream,
// and another replica takes the runs over at once (the lease had minutes
// left: only its release lets them go) and resumes them upstream. The Chat
// client resumes on C from its last id and ends with the agent's exact
// answer once; both runs end completed, never interrupted, none left
// running, and the model got one request each.
func TestReplicasGracefulHandover(t *testing.T) {
	for _, dialect := range []string{"a2a", "adk", "hermes"} {
		t.Run(dialect, func(t *testing.T) { gracefulHandover(t, dialect) })
	}
}

func gracefulHandover(t *testing.T, dialect string) {
	answer := words("h", 60)
	up := newHeldOpenAI(t, answer, 5)
	agent := a2aBridge(t, up.baseURL())
	db := pgtest.Schema(t)
	cfg := graceConfig(t, "300ms")
	var procs [3]*exec.Cmd
	var bases [3]string
	for i := range procs {
		procs[i], bases[i] = bridgeProcess(t, "--config", cfg, "--db", db, "--lease", "2m", "--upstream", dialect+"="+agent)
	}
	a, c := bases[0], bases[2]
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	resp, runID := streamDetached(ctx, t, a, "agent", "handover-"+dialect)
	defer resp.Body.Close()
	var got strings.Builder
	var ids []string
	seen := readSSE(t, resp.Body, func(evs []sseEvent) bool { return len(evs) >= 3 })
	if runID == "" || len(seen) < 3 {
		t.Fatalf("run %q: %d events from A", runID, len(seen))
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", a+"/v1/messages",
		strings.NewReader(`{"model":"agent","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("X-Session-Id", "handover-anthropic")
	req.Header.Set("Content-Type", "application/json")
	ra, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Body.Close()
	runA := ra.Header.Get("X-Run-Id")
	if ra.StatusCode != 200 || runA == "" {
		t.Fatalf("the Anthropic stream on A: %d, run %q", ra.StatusCode, runA)
	}
	// Its first words, so the agent has named its task before the stop.
	sa := bufio.NewScanner(ra.Body)
	sa.Buffer(make([]byte, 0, 64<<10), 1<<20)
	linesA := rawLines(sa, func(l string) bool { return strings.Contains(l, "text_delta") })
	if len(linesA) == 0 || !strings.Contains(linesA[len(linesA)-1], "text_delta") {
		t.Fatalf("the Anthropic stream on A ended before its first words: %q", linesA)
	}
	ownerA, _ := runRow(ctx, t, db, runID)

	termBridge(t, procs[0], 30*time.Second)
	// What A's clients got after the SIGTERM: the rest of what it had, then
	// the end of the stream, with no final event and no error.
	seen = append(seen, readSSE(t, resp.Body, nil)...)
	for _, ev := range seen {
		if ev.data == "[DONE]" || strings.Contains(ev.data, `"error"`) || strings.Contains(ev.data, `"finish_reason":"`) {
			t.Errorf("A's Chat stream has a final or error frame: %s", ev.data)
		}
		got.WriteString(chunkText(t, ev.data))
		ids = append(ids, ev.id)
	}
	for _, l := range append(linesA, rawLines(sa, nil)...) {
		if strings.Contains(l, "message_stop") || strings.Contains(l, "event: error") || strings.Contains(l, `"type":"error"`) {
			t.Errorf("A's Anthropic stream has a final or error frame: %s", l)
		}
	}

	// Another replica takes both runs over, long before their leases end
	// (without the release: two minutes after A's last renewal).
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range []string{runID, runA} {
		for {
			if time.Now().After(deadline) {
				t.Fatalf("run %s: still A's 30s after A stopped; no other replica took it over", id)
			}
			owner, status := runRow(ctx, t, db, id)
			if status != string(bridge.StatusRunning) {
				t.Fatalf("run %s is %s before the agent's answer came, want running (handed over)", id, status)
			}
			if owner != ownerA {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	up.release()

	// The Chat client resumes on C from the last id it had.
	text, more := resumeChat(t, ctx, c, runID, ids[len(ids)-1])
	got.WriteString(text)
	ids = append(ids, more...)
	if want := strings.Join(answer, ""); got.String() != want {
		t.Errorf("the client read:\n %q\nwant\n %q", got.String(), want)
	}
	noDuplicates(t, ids)

	for _, id := range []string{runID, runA} {
		var run bridge.Run
		for { // the Anthropic run's end comes in its own time
			if run = getRun(t, bases[1], id); run.Status != bridge.StatusRunning || ctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if run.Status != bridge.StatusCompleted {
			t.Errorf("run %s: %s %q, want completed", id, run.Status, run.Reason)
		}
		for _, ev := range replaySSE(t, bases[1], id) {
			if strings.Contains(ev.data, "interrupted") {
				t.Errorf("run %s has an interrupted event: %s", id, ev.data)
			}
		}
	}
	noneRunning(t, bases[1], runID, runA)
	if n := up.requests.Load(); n != 2 {
		t.Errorf("the model got %d requests, want 2 (each run resumed, not started again)", n)
	}
	if n := up.cancelled.Load(); n != 0 {
		t.Errorf("%d of the agent's model calls were cut (a cancel reached the agent), want none", n)
	}
}

// TestReplicasGracefulStopInterruptsOpenAI: a run on an upstream that
// cannot resume (OpenAI) on a replica stopped gracefully ends interrupted
// there, as on one bridge: no other replica takes it over, and its client
// resuming on the other replica gets what it had not seen, then the end.
func TestReplicasGracefulStopInterruptsOpenAI(t *testing.T) {
	up := newHeldOpenAI(t, words("o", 30), 4)
	db := pgtest.Schema(t)
	cfg := graceConfig(t, "300ms")
	pa, a := bridgeProcess(t, "--config", cfg, "--db", db, "--lease", "2m", "--upstream", "openai="+up.baseURL())
	_, b := bridgeProcess(t, "--config", cfg, "--db", db, "--lease", "2m", "--upstream", "openai="+up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, runID := streamDetached(ctx, t, a, "m", "stop-openai")
	defer resp.Body.Close()
	seen := readSSE(t, resp.Body, func(evs []sseEvent) bool { return len(evs) >= 3 })
	if runID == "" || len(seen) < 3 {
		t.Fatalf("run %q: %d events from A", runID, len(seen))
	}
	ownerA, _ := runRow(ctx, t, db, runID)
	termBridge(t, pa, 30*time.Second)
	seen = append(seen, readSSE(t, resp.Body, nil)...)

	owner, status := runRow(ctx, t, db, runID)
	if status != string(bridge.StatusInterrupted) || owner != ownerA {
		t.Errorf("run after A stopped: %s, owner %s (A: %s); want interrupted by A", status, owner, ownerA)
	}
	if run := getRun(t, b, runID); run.Reason != "bridge shutting down" {
		t.Errorf("run: %s %q, want interrupted: bridge shutting down", run.Status, run.Reason)
	}
	last := ""
	var ids []string
	for _, ev := range seen {
		if ev.id != "" {
			last = ev.id
			ids = append(ids, ev.id)
		}
	}
	rest := resumeUntilEnd(ctx, t, b, runID, last)
	for _, ev := range rest {
		if ev.id != "" {
			ids = append(ids, ev.id)
		}
	}
	noDuplicates(t, ids)
	if n := up.requests.Load(); n != 1 {
		t.Errorf("the model got %d requests, want 1", n)
	}
}
