package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/bridge-dev/bridge/bridge"
)

// TestA2ACard: the a2a-go resolver reads the card at both well-known paths;
// it names the JSON-RPC endpoint, streaming, the 0.3 protocol, and a 1.0
// interface.
func TestA2ACard(t *testing.T) {
	base := a2aBridge(t, "http://127.0.0.1:1/v1")
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	for _, path := range []string{"", "/.well-known/agent.json"} {
		var opts []agentcard.ResolveOption
		if path != "" {
			opts = append(opts, agentcard.WithPath(path))
		}
		card, err := agentcard.DefaultResolver.Resolve(ctx, base, opts...)
		if err != nil {
			t.Fatalf("resolve %q: %v", path, err)
		}
		if card.URL != base+"/a2a" || card.PreferredTransport != a2asdk.TransportProtocolJSONRPC ||
			!card.Capabilities.Streaming || card.ProtocolVersion != "0.3.0" || len(card.Skills) == 0 || card.Name == "" {
			t.Errorf("card %q = %+v", path, card)
		}
	}
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw struct {
		SupportedInterfaces []struct{ URL, ProtocolBinding, ProtocolVersion string } `json:"supportedInterfaces"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.SupportedInterfaces) != 1 || raw.SupportedInterfaces[0].ProtocolBinding != "JSONRPC" ||
		raw.SupportedInterfaces[0].ProtocolVersion != "1.0" || raw.SupportedInterfaces[0].URL != base+"/a2a" {
		t.Errorf("supportedInterfaces = %+v", raw.SupportedInterfaces)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("the card is not readable cross-origin")
	}
}

// TestA2AOverOpenAI is the headline: an OpenAI-compatible model served as
// an A2A agent, driven by the a2a-go client. A streamed answer (task,
// working, artifact chunks, completed), tasks/get, and a second turn in the
// same context whose upstream request carries the first turn.
func TestA2AOverOpenAI(t *testing.T) {
	up := newSlowOpenAI(t, 0, func(n int) []string {
		if n == 0 {
			return []string{"Paris ", "is ", "sunny."}
		}
		return []string{"Lyon ", "too."}
	})
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	tap := &sseTap{}
	client, _ := a2aClient(t, ctx, base, tap)

	var evs []a2asdk.Event
	for ev, err := range client.SendStreamingMessage(ctx, userMessage("", "Weather in Paris?")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	first, ok := evs[0].(*a2asdk.Task)
	if !ok || first.Status.State != a2asdk.TaskStateSubmitted || len(first.History) != 1 {
		t.Fatalf("first event = %#v, want the submitted task with the user message", evs[0])
	}
	if s, ok := evs[1].(*a2asdk.TaskStatusUpdateEvent); !ok || s.Status.State != a2asdk.TaskStateWorking || s.Final {
		t.Errorf("second event = %#v, want status-update working", evs[1])
	}
	if got := answerText(evs); got != "Paris is sunny." {
		t.Errorf("streamed answer %q", got)
	}
	if st, final := finalState(evs); st != a2asdk.TaskStateCompleted || !final {
		t.Errorf("last status %s final=%v, want completed final", st, final)
	}
	for i, ev := range evs {
		if ev.TaskInfo().TaskID != first.ID || ev.TaskInfo().ContextID != first.ContextID {
			t.Errorf("event %d names task %v", i, ev.TaskInfo())
		}
	}
	// Every frame had an event id of the task, in order.
	frames := tap.snapshot()
	if len(frames) != len(evs) {
		t.Fatalf("%d frames for %d events", len(frames), len(evs))
	}
	var last int64
	for i, f := range frames {
		run, seq, ok := bridge.ParseEventID(f.id)
		if !ok || run != string(first.ID) || seq <= last {
			t.Errorf("frame %d id %q", i, f.id)
		}
		last = seq
	}

	hl := 10
	task, err := client.GetTask(ctx, &a2asdk.TaskQueryParams{ID: first.ID, HistoryLength: &hl})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2asdk.TaskStateCompleted || taskText(task) != "Paris is sunny." || len(task.History) == 0 {
		t.Errorf("tasks/get = state %s text %q history %d", task.Status.State, taskText(task), len(task.History))
	}
	if u, ok := task.History[0].Parts[0].(a2asdk.TextPart); !ok || u.Text != "Weather in Paris?" || task.History[0].Role != a2asdk.MessageRoleUser {
		t.Errorf("history[0] = %+v", task.History[0])
	}

	// The second turn, same context: a new task, and the upstream gets the
	// first turn too.
	res, err := client.SendMessage(ctx, userMessage(first.ContextID, "And Lyon?"))
	if err != nil {
		t.Fatal(err)
	}
	second, ok := res.(*a2asdk.Task)
	if !ok || second.ID == first.ID || second.ContextID != first.ContextID || second.Status.State != a2asdk.TaskStateCompleted ||
		taskText(second) != "Lyon too." {
		t.Fatalf("second turn = %#v", res)
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Messages {
		got = append(got, m.Role+":"+contentText(m.Content))
	}
	if want := "user:Weather in Paris?|assistant:Paris is sunny.|user:And Lyon?"; strings.Join(got, "|") != want {
		t.Errorf("second upstream request messages\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// TestA2ACancelMidStream: tasks/cancel while the answer streams closes the
// upstream request; the stream ends canceled, and so does the task.
func TestA2ACancelMidStream(t *testing.T) {
	up := newSlowOpenAI(t, 20*time.Millisecond, func(int) []string { return words("w", 200) })
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	client, _ := a2aClient(t, ctx, base, &sseTap{})

	var (
		evs    []a2asdk.Event
		taskID a2asdk.TaskID
	)
	for ev, err := range client.SendStreamingMessage(ctx, userMessage("", "go")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		taskID = ev.TaskInfo().TaskID
		if len(evs) == 5 {
			task, err := client.CancelTask(ctx, &a2asdk.TaskIDParams{ID: taskID})
			if err != nil {
				t.Fatalf("cancel: %v", err)
			}
			if task.Status.State != a2asdk.TaskStateCanceled {
				t.Errorf("cancel answered state %s", task.Status.State)
			}
		}
	}
	if st, final := finalState(evs); st != a2asdk.TaskStateCanceled || !final {
		t.Errorf("stream ended in %s (final %v), want canceled", st, final)
	}
	if n := len(answerText(evs)); n == 0 || n >= len(strings.Join(words("w", 200), "")) {
		t.Errorf("streamed %d bytes of the answer before the cancel", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for up.cancelled.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if up.cancelled.Load() != 1 {
		t.Errorf("the upstream request was not closed by the cancel")
	}
	task, err := client.GetTask(ctx, &a2asdk.TaskQueryParams{ID: taskID})
	if err != nil || task.Status.State != a2asdk.TaskStateCanceled {
		t.Errorf("tasks/get after cancel: %v %v", task, err)
	}
	if _, err := client.CancelTask(ctx, &a2asdk.TaskIDParams{ID: taskID}); err == nil || !strings.Contains(err.Error(), "cannot be canceled") {
		t.Errorf("a second cancel: %v, want task not cancelable", err)
	}
}

// TestA2AResubscribe: a client drops the stream after 6 events; the task
// goes on; tasks/resubscribe with Last-Event-ID set to the last event it
// saw gives exactly the rest, no gap and no duplicate; without a cursor it
// replays the whole task.
func TestA2AResubscribe(t *testing.T) {
	all := words("r", 40)
	up := newSlowOpenAI(t, 10*time.Millisecond, func(int) []string { return all })
	base := a2aBridge(t, up.baseURL())
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	tap := &sseTap{}
	client, _ := a2aClient(t, ctx, base, tap)

	var head []a2asdk.Event
	sctx, drop := context.WithCancel(ctx)
	for ev, err := range client.SendStreamingMessage(sctx, userMessage("", "go")) {
		if err != nil {
			t.Fatal(err)
		}
		head = append(head, ev)
		if len(head) == 6 {
			break // disconnect
		}
	}
	drop()
	taskID := head[0].TaskInfo().TaskID
	lastSeen := tap.snapshot()[len(head)-1].id
	if up.cancelled.Load() != 0 {
		t.Fatalf("the disconnect cancelled the upstream call")
	}

	tap.reset()
	var rest []a2asdk.Event
	rctx := context.WithValue(ctx, lastEventIDKey{}, lastSeen)
	for ev, err := range client.ResubscribeToTask(rctx, &a2asdk.TaskIDParams{ID: taskID}) {
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, ev)
	}
	restFrames := tap.snapshot()
	if got := answerText(head) + answerText(rest); got != strings.Join(all, "") {
		t.Errorf("text before the drop + text resumed =\n%q\nwant\n%q", got, strings.Join(all, ""))
	}
	if st, _ := finalState(rest); st != a2asdk.TaskStateCompleted {
		t.Errorf("resumed stream ended in %s", st)
	}
	_, s0, _ := bridge.ParseEventID(lastSeen)
	_, s1, _ := bridge.ParseEventID(restFrames[0].id)
	if s1 != s0+1 {
		t.Errorf("first resumed event has seq %d, the last seen %d", s1, s0)
	}

	// No cursor: the whole task from the start, the same ids.
	tap.reset()
	var full []a2asdk.Event
	for ev, err := range client.ResubscribeToTask(ctx, &a2asdk.TaskIDParams{ID: taskID}) {
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, ev)
	}
	fullFrames := tap.snapshot()
	if len(full) != len(head)+len(rest) || answerText(full) != strings.Join(all, "") {
		t.Errorf("full replay: %d events (%d + %d streamed)", len(full), len(head), len(rest))
	}
	if len(fullFrames) > len(head) && fullFrames[len(head)-1].id != lastSeen {
		t.Errorf("replayed ids differ: %q vs %q", fullFrames[len(head)-1].id, lastSeen)
	}
	if _, ok := full[0].(*a2asdk.Task); !ok {
		t.Errorf("a replay from the start begins with %T, want the task", full[0])
	}
}

// rawA2A posts a JSON-RPC body and returns the response body.
func rawA2A(t *testing.T, base, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, string(b)
}

// TestA2AFramesOneDataLine: every frame is an id: line and one data: line
// holding one JSON-RPC response, even for text with line breaks.
func TestA2AFramesOneDataLine(t *testing.T) {
	up := newSlowOpenAI(t, 0, func(int) []string { return []string{"line one\n", "line two\r\n", "\u2028end"} })
	base := a2aBridge(t, up.baseURL())
	_, h, body := rawA2A(t, base, `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"x"}]}}}`)
	if h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", h.Get("Content-Type"))
	}
	frames := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	for i, f := range frames {
		lines := strings.Split(f, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "id: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("frame %d is not one id: and one data: line:\n%s", i, f)
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      string          `json:"id"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[1][6:]), &resp); err != nil || resp.JSONRPC != "2.0" || resp.ID != "s1" {
			t.Fatalf("frame %d: %v: %s", i, err, lines[1])
		}
		if _, err := a2asdk.UnmarshalEventJSON(resp.Result); err != nil {
			t.Errorf("frame %d: a2a-go cannot read it: %v", i, err)
		}
	}
}
