package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// twoReplicas starts two bridges in process on one fresh PostgreSQL
// schema, each with cfg's upstreams.
func twoReplicas(t *testing.T, cfg Config) (a, b string) {
	t.Helper()
	cfg.DB = pgtest.Schema(t)
	return "http://" + startMain(t, cfg).Addr(), "http://" + startMain(t, cfg).Addr()
}

// replicaDo sends one request and returns its status, headers and body.
func replicaDo(ctx context.Context, t *testing.T, method, url, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(out)
}

// TestReplicasIdempotencyKey: a Hermes POST /v1/runs with an
// Idempotency-Key on replica a, retried on replica b, answers a's run
// (replayed), not a second one; the key with another body is a 409 on b.
// The key lives in the shared store (the run's client id), not in a's
// memory.
func TestReplicasIdempotencyKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b := twoReplicas(t, defaultConfig())
	body := `{"input":"once only","session_id":"idem-replicas"}`
	code, _, out := replicaDo(ctx, t, "POST", a+"/v1/runs", body, "Idempotency-Key", "k-replicas")
	var first struct {
		RunID    string `json:"run_id"`
		Replayed bool   `json:"replayed"`
	}
	if err := json.Unmarshal([]byte(out), &first); code != 202 || err != nil || first.RunID == "" || first.Replayed {
		t.Fatalf("create on a: %d %s", code, out)
	}
	code, h, out := replicaDo(ctx, t, "POST", b+"/v1/runs", body, "Idempotency-Key", "k-replicas")
	var again struct {
		RunID    string `json:"run_id"`
		Replayed bool   `json:"replayed"`
	}
	if err := json.Unmarshal([]byte(out), &again); code != 202 || err != nil || again.RunID != first.RunID || !again.Replayed ||
		h.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("retry on b: %d %v %s, want a's run %s replayed", code, h, out, first.RunID)
	}
	code, _, out = replicaDo(ctx, t, "POST", b+"/v1/runs", `{"input":"another body"}`, "Idempotency-Key", "k-replicas")
	if code != 409 || !strings.Contains(out, "idempotency_key_conflict") {
		t.Fatalf("the key with another body on b: %d %s, want 409 idempotency_key_conflict", code, out)
	}
	// One run in the session, whichever replica is asked.
	_, _, hist := replicaDo(ctx, t, "GET", b+"/v1/sessions/idem-replicas/history?format=openai", "")
	if n := strings.Count(hist, `"role":"user","content":"once only"`); n != 1 {
		t.Fatalf("b's history holds the user message %d times, want 1: %s", n, hist)
	}
}

// TestReplicasIdempotencyKeyRace: the same Hermes POST /v1/runs with one
// Idempotency-Key sent to replicas a and b at the same moment, for 12
// keys (half in a session the client names, half in none): both answer
// 202 with one run, one of them as replayed, and the store holds one run
// with the key (the second replica's insert is refused by the key's unique
// index, and it answers with the first's run).
func TestReplicasIdempotencyKeyRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cfg := defaultConfig()
	cfg.DB = pgtest.Schema(t)
	a, b := "http://"+startMain(t, cfg).Addr(), "http://"+startMain(t, cfg).Addr()
	store, err := postgres.Open(ctx, cfg.DB, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	type answer struct {
		code     int
		RunID    string `json:"run_id"`
		Replayed bool   `json:"replayed"`
		body     string
		err      error
	}
	post := func(base, key, body string) (ans answer) {
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/runs", strings.NewReader(body))
		if err != nil {
			return answer{err: err}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		ans.code, ans.body, ans.err = resp.StatusCode, string(out), err
		if err == nil {
			ans.err = json.Unmarshal(out, &ans)
		}
		return ans
	}
	for i := range 12 {
		key := "k-race-" + strconv.Itoa(i)
		body := `{"input":"raced ` + strconv.Itoa(i) + `"}`
		if i%2 == 0 {
			body = `{"input":"raced ` + strconv.Itoa(i) + `","session_id":"idem-race-` + strconv.Itoa(i) + `"}`
		}
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			got   [2]answer
		)
		for j, base := range []string{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[j] = post(base, key, body)
			}()
		}
		close(start)
		wg.Wait()
		for j, g := range got {
			if g.err != nil || g.code != 202 || g.RunID == "" {
				t.Fatalf("%s on replica %d: %d %v %s", key, j, g.code, g.err, g.body)
			}
		}
		if got[0].RunID != got[1].RunID || got[0].Replayed == got[1].Replayed {
			t.Errorf("%s: a answered %+v, b %+v: want one run, made by one and replayed by the other", key, got[0], got[1])
		}
		runs, err := store.ListRuns(ctx, bridge.RunFilter{Inbound: "hermes"})
		if err != nil {
			t.Fatal(err)
		}
		var keyed []string
		for _, r := range runs {
			if r.ClientRunID == key {
				keyed = append(keyed, r.ID)
			}
		}
		if len(keyed) != 1 {
			t.Errorf("%s: the store holds runs %v with the key, want one", key, keyed)
		}
	}
}

// TestReplicasPreviousResponse: a Responses turn stored by replica a is
// read, continued (previous_response_id) and deleted through replica b;
// the continuation is the same session, its transcript holds both turns,
// and a reads b's response back.
func TestReplicasPreviousResponse(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b := twoReplicas(t, defaultConfig())
	type response struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	post := func(base, body string) (response, string) {
		t.Helper()
		code, h, out := replicaDo(ctx, t, "POST", base+"/v1/responses", body)
		var r response
		if err := json.Unmarshal([]byte(out), &r); code != 200 || err != nil || r.ID == "" {
			t.Fatalf("POST %s/v1/responses: %d %s", base, code, out)
		}
		return r, h.Get("X-Run-Id")
	}
	first, run1 := post(a, `{"model":"echo","input":"the first turn, on a"}`)
	code, _, out := replicaDo(ctx, t, "GET", b+"/v1/responses/"+first.ID, "")
	if code != 200 || !strings.Contains(out, "the first turn, on a") {
		t.Fatalf("b reads a's response: %d %s", code, out)
	}
	second, run2 := post(b, `{"model":"echo","previous_response_id":"`+first.ID+`","input":"the second, on b"}`)
	if second.Status != "completed" || len(second.Output) == 0 || len(second.Output[0].Content) == 0 ||
		second.Output[0].Content[0].Text != "the second, on b" {
		t.Fatalf("b's continuation: %+v", second)
	}
	r1, r2 := getRun(t, a, run1), getRun(t, a, run2)
	if r1.SessionID == "" || r1.SessionID != r2.SessionID {
		t.Fatalf("the continuation on b is session %q, a's first turn %q: previous_response_id did not reach a's turn", r2.SessionID, r1.SessionID)
	}
	_, _, hist := replicaDo(ctx, t, "GET", a+"/v1/sessions/"+r1.SessionID+"/history?format=openai", "")
	if !strings.Contains(hist, "the first turn, on a") || !strings.Contains(hist, "the second, on b") {
		t.Fatalf("a's history of the session lacks a turn: %s", hist)
	}
	if code, _, out := replicaDo(ctx, t, "GET", a+"/v1/responses/"+second.ID, ""); code != 200 || !strings.Contains(out, second.ID) {
		t.Fatalf("a reads b's response: %d %s", code, out)
	}
	if code, _, out := replicaDo(ctx, t, "DELETE", b+"/v1/responses/"+first.ID, ""); code != 200 {
		t.Fatalf("delete a's response on b: %d %s", code, out)
	}
	if code, _, out := replicaDo(ctx, t, "GET", a+"/v1/responses/"+first.ID, ""); code != 404 {
		t.Fatalf("a reads the response b deleted: %d %s, want 404", code, out)
	}
}

// TestReplicasIDMap: over an A2A upstream, a session's first turn on
// replica a and its second on replica b go to the agent in one A2A
// context: b finds the contextId a's turn got in the shared id map, so the
// agent's model sees the first turn in the second's history.
func TestReplicasIDMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	up := newSlowOpenAI(t, 0, func(n int) []string { return []string{"answer ", "number ", "one"} })
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Name: "agent", Dialect: "a2a", URL: a2aBridge(t, up.baseURL())}}
	a, b := twoReplicas(t, cfg)
	turn := func(base, body string) string {
		t.Helper()
		code, h, out := replicaDo(ctx, t, "POST", base+"/v1/chat/completions", body, "X-Session-Id", "idmap")
		if code != 200 || !strings.Contains(out, "answer number") {
			t.Fatalf("turn on %s: %d %s", base, code, out)
		}
		return h.Get("X-Run-Id")
	}
	turn(a, `{"model":"agent","messages":[{"role":"user","content":"the first turn went to a"}]}`)
	run2 := turn(b, `{"model":"agent","messages":[{"role":"user","content":"the first turn went to a"},`+
		`{"role":"assistant","content":"answer number one"},{"role":"user","content":"the second to b"}]}`)
	if r := getRun(t, a, run2); slices.Contains(r.Dropped, "a2a:history_inlined_in_new_context") {
		t.Fatalf("b sent the session's history inline in a new A2A context (it did not find a's contextId): %+v", r)
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the agent's model got %d requests, want 2", len(reqs))
	}
	second := string(reqs[1].Body)
	if !strings.Contains(second, "the first turn went to a") || !strings.Contains(second, "the second to b") {
		t.Fatalf("the agent's second model request lacks the first turn (b opened a new A2A context):\n%s", second)
	}
	if strings.Count(second, "the first turn went to a") != 1 {
		t.Fatalf("the agent's second model request holds the first turn twice:\n%s", second)
	}
}

// TestReplicasRunLimit: max_runs_per_principal counts a principal's runs
// on every replica. With a limit of 2 and two streams going on replica a,
// a third request on replica b is a 429 (b counts the store's running
// runs at its first admission); once a's runs end, b admits again (its
// count is made again when a quarter second old).
func TestReplicasRunLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cfg := defaultConfig()
	cfg.EchoDelay = 50 * time.Millisecond
	cfg.MaxRunsPerPrincipal = 2
	a, b := twoReplicas(t, cfg)
	long := strings.TrimSpace(strings.Repeat("word ", 400)) // 20 s of echo
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var bodies []io.ReadCloser
	for range 2 {
		req, _ := http.NewRequestWithContext(streamCtx, "POST", a+"/v1/chat/completions",
			strings.NewReader(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+long+`"}]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := resp.Body.Read(make([]byte, 1)); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a stream on a: %d %v", resp.StatusCode, err)
		}
		bodies = append(bodies, resp.Body)
	}
	short := `{"model":"echo","messages":[{"role":"user","content":"x"}]}`
	if code, _, out := replicaDo(ctx, t, "POST", b+"/v1/chat/completions", short); code != 429 || !strings.Contains(out, "rate_limit_error") {
		t.Fatalf("a third run, on b, while a has two going: %d %s, want 429 rate_limit_error", code, out)
	}
	stopStreams() // a's runs end with their clients
	for _, body := range bodies {
		body.Close()
	}
	for {
		code, _, out := replicaDo(ctx, t, "POST", b+"/v1/chat/completions", short)
		if code == 200 {
			break
		}
		if code != 429 || ctx.Err() != nil {
			t.Fatalf("b after a's runs ended: %d %s, want 200 (or 429 until its count is made again)", code, out)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("b still refuses a run a minute after a's ended")
		}
	}
}
