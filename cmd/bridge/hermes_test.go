package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// hermesFrame is one frame of a Hermes session stream as a client reads it.
type hermesFrame struct {
	ID   string
	Name string
	Data map[string]any
}

func (f hermesFrame) seq() int64 {
	n, _ := f.Data["seq"].(float64)
	return int64(n)
}

func (f hermesFrame) str(k string) string { s, _ := f.Data[k].(string); return s }

// hermesStream reads frames from an SSE body until done, EOF or stop
// returns true (then the connection is closed).
func hermesStream(t *testing.T, body io.ReadCloser, stop func(hermesFrame) bool) []hermesFrame {
	t.Helper()
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	var (
		frames []hermesFrame
		cur    hermesFrame
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name == "" {
				continue
			}
			frames = append(frames, cur)
			if (cur.Name == "done" && !isEOF(stop)) || (stop != nil && stop(cur)) {
				return frames
			}
			cur = hermesFrame{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.Data); err != nil {
				t.Fatalf("frame %s: data %q: %v", cur.Name, line, err)
			}
		}
	}
	return frames
}

// readToEOF, as hermesStream's stop, reads past done frames until the
// server ends the stream.
func readToEOF(hermesFrame) bool { return false }

func isEOF(stop func(hermesFrame) bool) bool {
	return stop != nil && reflect.ValueOf(stop).Pointer() == reflect.ValueOf(readToEOF).Pointer()
}

func names(frames []hermesFrame) string {
	var out []string
	for _, f := range frames {
		out = append(out, f.Name)
	}
	return strings.Join(out, " ")
}

// checkFrames: ids are run:seq, seq counts on from first, every payload has
// the session, the run, seq and ts.
func checkFrames(t *testing.T, frames []hermesFrame, session, run string, first int64) {
	t.Helper()
	var last framePos
	for i, f := range frames {
		want := first + int64(i)
		if f.seq() != want {
			t.Errorf("frame %d %s: seq %d, want seq %d", i, f.Name, f.seq(), want)
		}
		// The SSE id: a frame id of the run (its hub event's), each
		// frame's its own, in order.
		if r, pos, ok := parseFramePos(f.ID); !ok || r != run || i > 0 && !last.before(pos) {
			t.Errorf("frame %d %s: id %q is not a frame id of %s after the frame before's", i, f.Name, f.ID, run)
		} else {
			last = pos
		}
		if f.str("session_id") != session || f.str("run_id") != run {
			t.Errorf("frame %d %s: session %q run %q", i, f.Name, f.str("session_id"), f.str("run_id"))
		}
		if _, ok := f.Data["ts"].(float64); !ok {
			t.Errorf("frame %d %s: no ts", i, f.Name)
		}
	}
}

func hermesDo(t *testing.T, ctx context.Context, method, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func hermesJSON(t *testing.T, resp *http.Response, status int) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// hermesErrorCode is the code of a Hermes error envelope.
func hermesErrorCode(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// hermesUpstream is an OpenAI upstream scripted by the request's last
// user text: "weather?" asks for the weather tool; a tool result gets the
// answer; "slow" streams 40 words slowly; a steer ("also ...") is noted.
func hermesUpstream(t *testing.T) *openaitest.Server {
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-" + strconv.Itoa(n), Model: "m"}
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		var role, s string
		if n := len(req.Messages); n > 0 {
			role, s = req.Messages[n-1].Role, string(req.Messages[n-1].Content)
		}
		switch {
		case strings.Contains(s, "also mention Rome"):
			return openaitest.Reply{Chunks: c.Role().Text("Rome ", "too.").Finish("stop").Usage(9, 2).List()}
		case role == "tool":
			return openaitest.Reply{Chunks: c.Role().Text("It is ", "20C.").Finish("stop").Usage(20, 4).List()}
		case strings.Contains(s, "weather?"):
			return openaitest.Reply{Chunks: c.Role().Reasoning("need the weather").ToolCall(0, "call_w", "weather", `{"city":`, `"Paris"}`).Finish("tool_calls").Usage(10, 5).List()}
		case strings.Contains(s, "slow"):
			return openaitest.Reply{Chunks: c.Role().Text(words("w", 40)...).Finish("stop").List(), Delay: 25 * time.Millisecond}
		}
		return openaitest.Reply{Chunks: c.Role().Text("ok").Finish("stop").List()}
	})
	t.Cleanup(up.Close)
	return up
}

func hermesBridge(t *testing.T) (string, *openaitest.Server) {
	t.Helper()
	up := hermesUpstream(t)
	return serveUpstream(t, "openai="+up.BaseURL()), up
}

const hermesWeatherTool = `[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]`

// TestHermesFlow is a Hermes client's session flow over an OpenAI
// upstream: create a session, stream a turn whose model calls a tool, send
// the tool's result (the same run goes on), read the history in both
// shapes.
func TestHermesFlow(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	base, up := hermesBridge(t)

	s := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions", `{"id":"hs-flow","title":"Weather"}`), 201)
	if sess := s["session"].(map[string]any); sess["id"] != "hs-flow" || sess["title"] != "Weather" || s["object"] != "hermes.session" {
		t.Fatalf("session %v", s)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions", `{"id":"hs-flow"}`), 409); hermesErrorCode(v) != "session_exists" {
		t.Errorf("duplicate: %v", v)
	}

	// Turn 1: the model asks for the client's weather tool.
	resp := hermesDo(t, ctx, "POST", base+"/api/sessions/hs-flow/chat/stream", `{"message":"weather?","tools":`+hermesWeatherTool+`}`)
	if resp.StatusCode != 200 || resp.Header.Get("X-Hermes-Session-Id") != "hs-flow" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	f1 := hermesStream(t, resp.Body, nil)
	if got, want := names(f1), "run.started message.started tool.progress tool.started assistant.completed run.interrupted done"; got != want {
		t.Fatalf("frames %q, want %q", got, want)
	}
	run := f1[0].str("run_id")
	checkFrames(t, f1, "hs-flow", run, 1)
	if um := f1[0].Data["user_message"].(map[string]any); um["content"] != "weather?" {
		t.Errorf("run.started %v", f1[0].Data)
	}
	if f1[2].str("tool_name") != "_thinking" || f1[2].str("delta") != "need the weather" {
		t.Errorf("reasoning %v", f1[2].Data)
	}
	if args := f1[3].Data["args"].(map[string]any); f1[3].str("tool_name") != "weather" || args["city"] != "Paris" || f1[3].str("tool_call_id") != "call_w" {
		t.Errorf("tool.started %v", f1[3].Data)
	}
	if f1[5].str("status") != "input_required" || f1[3].Data["client_tool"] != true {
		t.Errorf("waiting: %v %v", f1[3].Data, f1[5].Data)
	}

	// Turn 1, continued: the tool's result; the same run, seq counting on.
	resp = hermesDo(t, ctx, "POST", base+"/api/sessions/hs-flow/chat/stream", `{"input":[{"role":"tool","tool_call_id":"call_w","content":"20C"}]}`)
	f2 := hermesStream(t, resp.Body, nil)
	if got, want := names(f2), "run.started message.started assistant.delta assistant.delta assistant.completed run.completed done"; got != want {
		t.Fatalf("frames %q, want %q", got, want)
	}
	checkFrames(t, f2, "hs-flow", run, int64(len(f1))+1)
	if f2[4].str("content") != "It is 20C." || f2[5].Data["completed"] != true {
		t.Errorf("completed %v %v", f2[4].Data, f2[5].Data)
	}
	if u := f2[5].Data["usage"].(map[string]any); u["total_tokens"].(float64) == 0 {
		t.Errorf("usage %v", u)
	}
	if reqs := up.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `"tool_call_id":"call_w"`) {
		t.Fatalf("upstream requests %d", len(reqs))
	}

	// The whole run again from the run API: one stream, the same frames.
	resp = hermesDo(t, ctx, "GET", base+"/v1/runs/"+run+"/events", "")
	all := hermesStream(t, resp.Body, readToEOF)
	if names(all) != names(f1)+" "+names(f2) {
		t.Errorf("replay %q", names(all))
	}

	// History: Hermes' own shape, then the chatkit one (both places).
	h := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions/hs-flow/messages", ""), 200)
	data := h["data"].([]any)
	if h["object"] != "list" || h["session_id"] != "hs-flow" || len(data) != 4 || h["runs"] != nil {
		t.Fatalf("history %v", h)
	}
	first := data[0].(map[string]any)
	if first["role"] != "user" || first["content"] != "weather?" || first["run_id"] != nil || first["id"].(float64) != 1 {
		t.Errorf("message 1 %v", first)
	}
	asst := data[1].(map[string]any)
	if asst["reasoning"] != "need the weather" || asst["tool_calls"] == nil {
		t.Errorf("message 2 %v", asst)
	}
	for _, url := range []string{"/api/sessions/hs-flow/messages?format=chatkit", "/v1/sessions/hs-flow/history?format=hermes"} {
		h := hermesJSON(t, hermesDo(t, ctx, "GET", base+url, ""), 200)
		data := h["data"].([]any)
		runs := h["runs"].([]any)
		if len(data) != 4 || len(runs) != 1 {
			t.Fatalf("%s: %v", url, h)
		}
		for _, m := range data {
			if m.(map[string]any)["run_id"] != run {
				t.Errorf("%s: message %v", url, m)
			}
		}
		r := runs[0].(map[string]any)
		if r["id"] != run || r["status"] != "completed" || r["finished_at"] == nil || r["created_at"] == nil {
			t.Errorf("%s: run %v", url, r)
		}
		if tm := data[2].(map[string]any); tm["role"] != "tool" || tm["tool_call_id"] != "call_w" || tm["content"] != "20C" {
			t.Errorf("%s: tool message %v", url, tm)
		}
	}

	// The session object counts what happened; list, patch, fork, delete.
	sess := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions/hs-flow", ""), 200)["session"].(map[string]any)
	if sess["message_count"].(float64) != 4 || sess["preview"] != "weather?" || sess["tool_call_count"].(float64) != 1 {
		t.Errorf("session %v", sess)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "PATCH", base+"/api/sessions/hs-flow", `{"title":"Paris"}`), 200); v["session"].(map[string]any)["title"] != "Paris" {
		t.Errorf("patch %v", v)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "PATCH", base+"/api/sessions/hs-flow", `{"model":"x"}`), 400); hermesErrorCode(v) != "invalid_request" {
		t.Errorf("patch model %v", v)
	}
	fork := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hs-flow/fork", `{"id":"hs-fork"}`), 201)["session"].(map[string]any)
	if fork["parent_session_id"] != "hs-flow" || fork["message_count"].(float64) != 4 {
		t.Errorf("fork %v", fork)
	}
	hermesStream(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hs-fork/chat/stream", `{"message":"thanks"}`).Body, nil)
	if h := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions/hs-fork/messages", ""), 200); len(h["data"].([]any)) != 6 {
		t.Errorf("fork history %v", h)
	}
	if reqs := up.Requests(); !strings.Contains(string(reqs[len(reqs)-1].Body), "It is 20C.") {
		t.Errorf("the fork's turn did not carry the parent's transcript: %s", reqs[len(reqs)-1].Body)
	}
	list := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions", ""), 200)
	if len(list["data"].([]any)) != 2 {
		t.Errorf("list %v", list)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "DELETE", base+"/api/sessions/hs-fork", ""), 200); v["deleted"] != true {
		t.Errorf("delete %v", v)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions/hs-fork", ""), 404); hermesErrorCode(v) != "session_not_found" {
		t.Errorf("deleted %v", v)
	}

	// A synchronous turn.
	v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hs-flow/chat", `{"message":"hello"}`), 200)
	if v["object"] != "hermes.session.chat.completion" || v["message"].(map[string]any)["content"] != "ok" {
		t.Errorf("chat %v", v)
	}
}

// TestHermesResume: a client that drops the stream mid-turn reconnects
// with Last-Event-ID and gets only the rest; a foreign or unparseable
// cursor replays from the start.
func TestHermesResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	base, _ := hermesBridge(t)
	hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions", `{"id":"hs-r"}`), 201)

	resp := hermesDo(t, ctx, "POST", base+"/api/sessions/hs-r/chat/stream", `{"message":"slow please"}`)
	deltas := 0
	head := hermesStream(t, resp.Body, func(f hermesFrame) bool {
		if f.Name == "assistant.delta" {
			deltas++
		}
		return deltas == 3
	})
	last := head[len(head)-1]
	run := last.str("run_id")

	// A second turn while this one runs is refused.
	if v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hs-r/chat/stream", `{"message":"hi"}`), 409); hermesErrorCode(v) != "run_already_active" ||
		!strings.Contains(v["error"].(map[string]any)["message"].(string), run) {
		t.Errorf("second turn %v", v)
	}

	for _, tc := range []struct {
		name string
		do   func() *http.Response
	}{
		{"Last-Event-ID on the run API", func() *http.Response {
			return hermesDo(t, ctx, "GET", base+"/v1/runs/"+run+"/events", "", "Last-Event-ID", last.ID)
		}},
		{"Last-Event-ID on chat/stream", func() *http.Response {
			return hermesDo(t, ctx, "POST", base+"/api/sessions/hs-r/chat/stream", "", "Last-Event-ID", last.ID)
		}},
		{"after_event_id on GET chat/stream", func() *http.Response {
			return hermesDo(t, ctx, "GET", base+"/api/sessions/hs-r/chat/stream?after_event_id="+last.ID, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := hermesStream(t, tc.do().Body, nil)
			if len(rest) == 0 || rest[len(rest)-1].Name != "done" {
				t.Fatalf("rest %q", names(rest))
			}
			checkFrames(t, rest, "hs-r", run, last.seq()+1)
			var text string
			for _, f := range append(head, rest...) {
				if f.Name == "assistant.delta" {
					text += f.str("delta")
				}
			}
			if done := rest[len(rest)-3]; done.Name != "assistant.completed" || done.str("content") != text {
				t.Errorf("the deltas %q do not make the answer %v", text, done.Data)
			}
		})
	}
	for _, c := range []string{"run_other:4", "garbage", run + ":999"} {
		all := hermesStream(t, hermesDo(t, ctx, "GET", base+"/v1/runs/"+run+"/events", "", "Last-Event-ID", c).Body, nil)
		if len(all) == 0 || all[0].Name != "run.started" || all[0].seq() != 1 {
			t.Errorf("cursor %q: %q", c, names(all))
		}
	}
}

// TestHermesRuns: POST /v1/runs with Idempotency-Key, stop of a slow run
// (run.cancelled then done), steer of a running one, and the errors.
func TestHermesRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	base, up := hermesBridge(t)

	// Idempotent creation.
	body := `{"input":"hello","session_id":"hs-idem"}`
	a := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs", body, "Idempotency-Key", "key-1"), 202)
	if a["replayed"] != false || a["status"] != "started" || !strings.HasPrefix(a["run_id"].(string), "run_") {
		t.Fatalf("created %v", a)
	}
	resp := hermesDo(t, ctx, "POST", base+"/v1/runs", body, "Idempotency-Key", "key-1")
	if resp.Header.Get("Idempotency-Replayed") != "true" {
		t.Errorf("no Idempotency-Replayed header: %v", resp.Header)
	}
	if b := hermesJSON(t, resp, 202); b["run_id"] != a["run_id"] || b["replayed"] != true {
		t.Errorf("replay %v", b)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs", `{"input":"other"}`, "Idempotency-Key", "key-1"), 409); hermesErrorCode(v) != "idempotency_key_conflict" {
		t.Errorf("conflict %v", v)
	}
	if n := len(up.Requests()); n > 1 {
		t.Errorf("%d upstream calls for one idempotent run", n)
	}
	id := a["run_id"].(string)
	hermesStream(t, hermesDo(t, ctx, "GET", base+"/v1/runs/"+id+"/events", "").Body, nil)
	r := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/v1/runs/"+id, ""), 200)
	if r["object"] != "hermes.run" || r["status"] != "completed" || r["output"] != "ok" || r["session_id"] != "hs-idem" || r["last_event"] != "run.completed" {
		t.Errorf("run %v", r)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/"+id+"/steer", `{"input":"late"}`), 409); hermesErrorCode(v) != "run_not_accepting_steer" {
		t.Errorf("late steer %v", v)
	}

	// Stop a slow run.
	slow := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs", `{"input":"slow"}`), 202)["run_id"].(string)
	events := hermesDo(t, ctx, "GET", base+"/v1/runs/"+slow+"/events", "")
	deltas := 0
	frames := hermesStream(t, events.Body, func(f hermesFrame) bool {
		if f.Name == "assistant.delta" {
			if deltas++; deltas == 2 {
				st := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/"+slow+"/stop", ""), 200)
				if st["status"] != "cancelled" || st["last_event"] != "run.cancelled" {
					t.Errorf("stop %v", st)
				}
			}
		}
		return false
	})
	if n := len(frames); n < 2 || frames[n-2].Name != "run.cancelled" || frames[n-1].Name != "done" {
		t.Fatalf("stopped stream %q", names(frames))
	}

	// Steer a running one: the input joins the same run.
	steered := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs", `{"input":"slow again"}`), 202)["run_id"].(string)
	events = hermesDo(t, ctx, "GET", base+"/v1/runs/"+steered+"/events", "")
	deltas = 0
	frames = hermesStream(t, events.Body, func(f hermesFrame) bool {
		if f.Name == "assistant.delta" {
			if deltas++; deltas == 2 {
				v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/"+steered+"/steer", `{"input":"also mention Rome"}`), 200)
				if v["object"] != "hermes.run.steer" || v["accepted"] != true {
					t.Errorf("steer %v", v)
				}
			}
		}
		return false
	})
	got := names(frames)
	if !strings.Contains(got, "run.steered") || !strings.HasSuffix(got, "assistant.completed run.completed done") {
		t.Fatalf("steered stream %q", got)
	}
	if c := frames[len(frames)-3].str("content"); !strings.HasSuffix(c, "Rome too.") {
		t.Errorf("the steer's answer is missing: %q", c)
	}
	for _, f := range frames {
		if f.str("run_id") != steered {
			t.Fatalf("frame of another run %v", f.Data)
		}
	}

	// Errors in Hermes' shape.
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/api/sessions/nope", "", 404, "session_not_found"},
		{"POST", "/api/sessions/nope/chat/stream", `{"message":"x"}`, 404, "session_not_found"},
		{"POST", "/api/sessions/hs-idem/chat/stream", `{"message":`, 400, "invalid_request"},
		{"POST", "/api/sessions/hs-idem/chat", `{"model":"m"}`, 400, "invalid_request"},
		{"POST", "/api/sessions/hs-idem/chat", `{"message":[{"type":"file"}]}`, 400, "unsupported_content_type"},
		{"POST", "/v1/runs", `{"input":"x"}`, 400, "invalid_request"}, // a bad Idempotency-Key below
		{"GET", "/api/sessions?limit=zero", "", 400, "invalid_request"},
	} {
		hdr := []string{}
		if tc.path == "/v1/runs" {
			hdr = []string{"Idempotency-Key", "bad key"}
		}
		v := hermesJSON(t, hermesDo(t, ctx, tc.method, base+tc.path, tc.body, hdr...), tc.status)
		if hermesErrorCode(v) != tc.code {
			t.Errorf("%s %s: %v", tc.method, tc.path, v)
		}
	}
	// An unknown run names no dialect, so the run API answers in its own
	// (OpenAI's) envelope: no Hermes code, the type says not found.
	v := hermesJSON(t, hermesDo(t, ctx, "POST", base+"/v1/runs/run_nope/steer", `{"input":"x"}`), 404)
	e, _ := v["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["type"] != "not_found_error" || !strings.Contains(msg, "run_nope") {
		t.Errorf("steer of an unknown run: %v", v)
	}
	caps := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/v1/capabilities", ""), 200)
	if caps["object"] != "hermes.api_server.capabilities" || caps["features"].(map[string]any)["run_stop"] != true {
		t.Errorf("capabilities %v", caps)
	}
}

// TestHermesAuth: with keys configured, a request without one gets 401
// in Hermes' shape; another principal cannot see the session.
func TestHermesAuth(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "hk-a,hk-b")
	t.Setenv("BRIDGE_API_KEY", "")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	base, _ := hermesBridge(t)
	if v := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions", ""), 401); hermesErrorCode(v) != "invalid_api_key" {
		t.Errorf("no key %v", v)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/v1/health", ""), 200); v["status"] != "ok" {
		t.Errorf("health needs no key: %v", v)
	}
	hermesJSON(t, hermesDo(t, ctx, "POST", base+"/api/sessions", `{"id":"hs-a"}`, "Authorization", "Bearer hk-a"), 201)
	hermesStream(t, hermesDo(t, ctx, "POST", base+"/api/sessions/hs-a/chat/stream", `{"message":"hi"}`, "Authorization", "Bearer hk-a").Body, nil)
	if v := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions/hs-a/messages", "", "Authorization", "Bearer hk-b"), 404); hermesErrorCode(v) != "session_not_found" {
		t.Errorf("other principal %v", v)
	}
	if v := hermesJSON(t, hermesDo(t, ctx, "GET", base+"/api/sessions", "", "Authorization", "Bearer hk-b"), 200); len(v["data"].([]any)) != 0 {
		t.Errorf("other principal lists %v", v)
	}
}

var _ = bridge.EventID
