package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// The test binary doubles as the bridge: with BRIDGE_TEST_SERVE set it runs
// the command line in os.Args after "--".
func TestMain(m *testing.M) {
	if os.Getenv("BRIDGE_TEST_SERVE") == "1" {
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		if err := run(args, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// bridgeProcess starts `bridge serve args...` as a child process and
// returns it with its base URL.
func bridgeProcess(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "BRIDGE_TEST_SERVE=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "bridge serving on "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, a
	case <-time.After(20 * time.Second):
		t.Fatal("bridge did not start")
	}
	return nil, ""
}

type sseEvent struct{ id, data string }

// streamDetached starts a streamed Chat Completions request for "go" to
// model, with X-Session-Id session so the run outlives its client, and
// returns the response and its run id. The caller closes the body.
func streamDetached(ctx context.Context, t *testing.T, base, model, session string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("X-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, resp.Header.Get("X-Run-Id")
}

// killBridge SIGKILLs a bridge process and waits for it to exit.
func killBridge(t *testing.T, proc *exec.Cmd) {
	t.Helper()
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
}

// termBridge sends a bridge process SIGTERM and waits up to within for it
// to exit; it fails t unless it exits 0.
func termBridge(t *testing.T, proc *exec.Cmd, within time.Duration) {
	t.Helper()
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the bridge exited with %v after SIGTERM", err)
		}
	case <-time.After(within):
		t.Fatalf("the bridge did not exit %v after SIGTERM", within)
	}
}

// getRun reads GET /v1/runs/{run} from the bridge at base.
func getRun(t *testing.T, base, runID string) bridge.Run {
	t.Helper()
	r, err := http.Get(base + "/v1/runs/" + runID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var run bridge.Run
	if err := json.NewDecoder(r.Body).Decode(&run); err != nil {
		t.Fatal(err)
	}
	return run
}

// replaySSE reads GET /v1/runs/{run}/events from the bridge at base, from
// the start to the end, as readSSE does.
func replaySSE(t *testing.T, base, runID string) []sseEvent {
	t.Helper()
	r, err := http.Get(base + "/v1/runs/" + runID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	return readSSE(t, r.Body, nil)
}

// TestKillMidRun SIGKILLs a bridge mid-run: after a restart every event the
// client had received is in the file, byte for byte, and the run is
// interrupted.
func TestKillMidRun(t *testing.T) {
	words := make([]string, 200)
	for i := range words {
		words[i] = fmt.Sprintf("w%d ", i)
	}
	up := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-up", Model: "m"}
		return openaitest.Reply{Chunks: c.Role().Text(words...).Finish("stop").Usage(3, 200).List(), Delay: 20 * time.Millisecond}
	})
	t.Cleanup(up.Close)
	db := filepath.Join(t.TempDir(), "bridge.db")
	proc, base := bridgeProcess(t, "--db", db, "--upstream", "openai="+up.BaseURL())

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, runID := streamDetached(ctx, t, base, "m", "crash-1")
	defer resp.Body.Close()
	var seen []sseEvent
	sc := bufio.NewScanner(resp.Body)
	var cur sseEvent
	for len(seen) < 10 && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		case line == "":
			seen = append(seen, cur)
			cur = sseEvent{}
		}
	}
	if len(seen) < 10 {
		t.Fatalf("read only %d events: %v", len(seen), sc.Err())
	}
	killBridge(t, proc)

	_, base = bridgeProcess(t, "--db", db, "--upstream", "openai="+up.BaseURL())
	if run := getRun(t, base, runID); run.Status != bridge.StatusInterrupted || run.Reason != "bridge restarted" {
		t.Errorf("after restart run is %s (%q), want interrupted (bridge restarted)", run.Status, run.Reason)
	}

	// A replay from the start holds every event the client saw, unchanged.
	r, err := http.Get(base + "/v1/runs/" + runID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	replayed := map[string]string{}
	sc = bufio.NewScanner(r.Body)
	cur = sseEvent{}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		case line == "":
			replayed[cur.id] = cur.data
			cur = sseEvent{}
		}
	}
	for _, ev := range seen {
		got, ok := replayed[ev.id]
		if !ok {
			t.Errorf("event %s the client saw is not in the file after the crash", ev.id)
		} else if got != ev.data {
			t.Errorf("event %s replays as\n%s\nbut the client saw\n%s", ev.id, got, ev.data)
		}
	}
}
