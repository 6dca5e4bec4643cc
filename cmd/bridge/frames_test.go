package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// This file holds the "resume from every frame" check (hard case 7 of the
// design: every frame is a cursor) and its tests over each dialect. Any
// test with a finished run's stream and a way to resume it can call
// checkResumeEveryFrame.

// framesTimeout bounds one test of this file.
const framesTimeout = 30 * time.Second

// splitSSE splits an SSE body into its frames, each with its closing
// blank line, byte for byte as they came: concatenated they are body
// again. A body that ends inside a frame keeps that part as its last.
func splitSSE(body []byte) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		i := bytes.Index(body, []byte("\n\n"))
		if i < 0 {
			return append(out, body)
		}
		out = append(out, body[:i+2])
		body = body[i+2:]
	}
	return out
}

// sseFrameID is the id: field of a frame, "" when it has none.
func sseFrameID(frame []byte) string {
	for line := range strings.Lines(string(frame)) {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			return strings.TrimRight(id, "\r\n")
		}
	}
	return ""
}

// checkResumeEveryFrame checks that every frame of a stream is a resume
// cursor of its own. whole is the stream exactly as its client read it,
// uncut, of a run that has ended; resume asks the bridge for the stream
// after the frame with the given id, over whatever route the dialect
// resumes on (the run API with Last-Event-ID, A2A tasks/resubscribe, ADK
// run_sse with lastEventId, ...), and returns the whole response body.
//
// It checks that no two frames share an id, and, for every frame k with an
// id, that frames 1..k (the stream cut after frame k) followed by
// resume(id of frame k) equal whole, byte for byte. Frames without an id
// (a [DONE], a ping) are no cursor: a client cut after one resumes from
// the id before it, which the check of that frame covers. It returns the
// number of cursors checked; whole with fewer than two is an error, as a
// check that checked nothing.
func checkResumeEveryFrame(t *testing.T, whole []byte, resume func(t *testing.T, id string) []byte) int {
	t.Helper()
	frames := splitSSE(whole)
	seen := map[string]int{}
	var cursors []int
	for i, f := range frames {
		id := sseFrameID(f)
		if id == "" {
			continue
		}
		if j, dup := seen[id]; dup {
			t.Errorf("frames %d and %d share the id %q:\n%s%s", j, i, id, frames[j], f)
		}
		seen[id] = i
		cursors = append(cursors, i)
	}
	if len(cursors) < 2 {
		t.Fatalf("the stream has %d frames with an id; want a stream to cut:\n%s", len(cursors), whole)
	}
	for _, k := range cursors {
		id := sseFrameID(frames[k])
		got := resume(t, id)
		var cut []byte
		for _, f := range frames[:k+1] {
			cut = append(cut, f...)
		}
		if joined := append(cut, got...); !bytes.Equal(joined, whole) {
			want := whole[len(cut):]
			t.Errorf("cut after frame %d (id %q): resumed\n%s\nwant\n%s", k, id, got, want)
		}
	}
	return len(cursors)
}

// resumeOverRunAPI resumes a run's stream on GET /v1/runs/{run}/events
// with Last-Event-ID, as checkResumeEveryFrame's resume.
func resumeOverRunAPI(ctx context.Context, base, runID string, header ...string) func(t *testing.T, id string) []byte {
	return func(t *testing.T, id string) []byte {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
		req.Header.Set("Last-Event-ID", id)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return readSSEBody(t, req)
	}
}

// readSSEBody does req and returns its body, which must be a 200 event
// stream.
func readSSEBody(t *testing.T, req *http.Request) []byte {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("%s %s: read: %v", req.Method, req.URL, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%s %s (Last-Event-ID %q): status %d %s: %s", req.Method, req.URL, req.Header.Get("Last-Event-ID"),
			resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return body
}

// postSSE POSTs body to base+path and returns the response and its whole
// body, which must be a 200 event stream.
func postSSE(ctx context.Context, t *testing.T, base, path, body string, header ...string) (http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("POST %s: status %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp.Header, b
}

// toolRunUpstream is a fake OpenAI upstream whose first answer is reasoning,
// text, one tool call in fragments and usage (finish tool_calls), and whose
// later answers are text and usage: a run that waits for the client's tool
// result, then a continuation that ends it.
func toolRunUpstream(t *testing.T) *openaitest.Server {
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: fmt.Sprintf("chatcmpl-up%d", n), Model: "m"}
		c.Role()
		if n == 0 {
			c.Reasoning("think", "ing").Text("Let me ", "check.").
				ToolCall(0, "call_1", "get_weather", `{"city"`, `:"Paris"}`).Finish("tool_calls").Usage(11, 7)
		} else {
			c.Text("It is ", "20C.").Finish("stop").Usage(23, 4)
		}
		return openaitest.Reply{Chunks: c.List()}
	})
	t.Cleanup(up.Close)
	return up
}

// TestResumeEveryFrameChat: a Chat Completions stream (with usage, so its
// final is a finish chunk and a usage chunk) resumed on the run API from
// each of its frames, for the run's first step and for the request that
// continued it with the tool's result.
func TestResumeEveryFrameChat(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	up := toolRunUpstream(t)
	base := serveUpstream(t, "openai="+up.BaseURL())
	const tools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	h, whole := postSSE(ctx, t, base, "/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[{"role":"user","content":"Weather in Paris?"}]}`,
		"X-Session-Id", "frames-chat")
	runID := h.Get("X-Run-Id")
	if !strings.Contains(string(whole), `"finish_reason":"tool_calls"`) || !strings.Contains(string(whole), `"usage":{"prompt_tokens":11`) {
		t.Fatalf("the first step has no tool call or no usage:\n%s", whole)
	}
	checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, runID))

	// The continuation: the same run, a stream of its own.
	h, whole = postSSE(ctx, t, base, "/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[{"role":"user","content":"Weather in Paris?"},`+
			`{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},`+
			`{"role":"tool","tool_call_id":"call_1","content":"20C"}]}`,
		"X-Session-Id", "frames-chat")
	if got := h.Get("X-Run-Id"); got != runID {
		t.Fatalf("the tool result started run %s, want %s continued", got, runID)
	}
	checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, runID))
}

// TestResumeEveryFrameAnthropic: a Messages stream (content_block_start
// with its first delta, message_delta with message_stop: events of several
// frames) resumed on the run API from each of its frames, for the run's
// first step and for the request that continued it with the tool's result.
func TestResumeEveryFrameAnthropic(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	up := toolRunUpstream(t)
	base := serveUpstream(t, "openai="+up.BaseURL())
	h, whole := postSSE(ctx, t, base, "/v1/messages",
		`{"model":"m","max_tokens":100,"stream":true,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],`+
			`"messages":[{"role":"user","content":"Weather in Paris?"}]}`,
		"X-Session-Id", "frames-anthropic", "anthropic-version", "2023-06-01")
	if !strings.Contains(string(whole), `"type":"tool_use"`) || !strings.Contains(string(whole), "event: message_stop") {
		t.Fatalf("the stream has no tool_use or no end:\n%s", whole)
	}
	runID := h.Get("X-Run-Id")
	checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, runID))

	// The continuation with the tool's result: the same run, a message of
	// its own.
	h, whole = postSSE(ctx, t, base, "/v1/messages",
		`{"model":"m","max_tokens":100,"stream":true,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],`+
			`"messages":[{"role":"user","content":"Weather in Paris?"},`+
			`{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"20C"}]}]}`,
		"X-Session-Id", "frames-anthropic", "anthropic-version", "2023-06-01")
	if got := h.Get("X-Run-Id"); got != runID {
		t.Fatalf("the tool result started run %s, want %s continued:\n%s", got, runID, whole)
	}
	checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, runID))
}

// TestFrameIDsParse: the ids every frame carries parse back as frame ids,
// and a cursor that is none is a 400 on the run API.
func TestFrameIDsParse(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	up := toolRunUpstream(t)
	base := serveUpstream(t, "openai="+up.BaseURL())
	h, whole := postSSE(ctx, t, base, "/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		"X-Session-Id", "frames-parse")
	runID := h.Get("X-Run-Id")
	for _, f := range splitSSE(whole) {
		if id := sseFrameID(f); id != "" {
			if run, _, _, ok := bridge.ParseFrameID(id); !ok || run != runID {
				t.Errorf("frame id %q is not a frame id of %s", id, runID)
			}
		}
	}
	for _, bad := range []string{runID + ":3.0", runID + ":x", "run_other:3", runID + ":3.1.1"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
		req.Header.Set("Last-Event-ID", bad)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"error"`) {
			t.Errorf("Last-Event-ID %q: status %d: %s, want a 400 error", bad, resp.StatusCode, body)
		}
	}
}

// framePos is where a frame id puts its frame in a run's stream: the event
// seq, then the frame k, the event's last frame (bridge.EventID) after all
// others.
type framePos [2]int64

// parseFramePos reads a bridge.EventID or bridge.FrameID.
func parseFramePos(id string) (run string, pos framePos, ok bool) {
	run, seq, k, ok := bridge.ParseFrameID(id)
	if !ok {
		return "", pos, false
	}
	pos = framePos{seq, int64(k)}
	if k == 0 {
		pos[1] = math.MaxInt64
	}
	return run, pos, true
}

// before reports whether p comes before q in a stream.
func (p framePos) before(q framePos) bool { return p[0] < q[0] || p[0] == q[0] && p[1] < q[1] }

// TestResumeEveryFrameResponses: a Responses stream (several events from
// one hub event: an item's .done events, the terminal event) resumed from
// each of its frames, on the dialect's own route (GET
// /v1/responses/{id}?stream=true&starting_after=<sequence_number>) and on
// the run API by the frame's id; then the same for the response that
// continued the run with the tool's output.
func TestResumeEveryFrameResponses(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	up := toolRunUpstream(t)
	base := serveUpstream(t, "openai="+up.BaseURL())
	h, whole := postSSE(ctx, t, base, "/v1/responses",
		`{"model":"m","stream":true,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"input":"Weather in Paris?"}`)
	if !strings.Contains(string(whole), `"type":"function_call"`) || !strings.Contains(string(whole), `"usage":{"input_tokens":11`) {
		t.Fatalf("the stream has no function call or no usage:\n%s", whole)
	}
	// The response id and each frame's sequence_number, by frame id.
	var respID string
	seqOf := map[string]int64{}
	for _, f := range splitSSE(whole) {
		var v struct {
			Seq      int64 `json:"sequence_number"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		data := bytes.TrimSpace(f[bytes.Index(f, []byte("data: "))+len("data: "):])
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("frame %q: %v", f, err)
		}
		if respID == "" {
			respID = v.Response.ID
		}
		seqOf[sseFrameID(f)] = v.Seq
	}
	t.Run("starting_after", func(t *testing.T) {
		checkResumeEveryFrame(t, whole, func(t *testing.T, id string) []byte {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
				fmt.Sprintf("%s/v1/responses/%s?stream=true&starting_after=%d", base, respID, seqOf[id]), nil)
			return readSSEBody(t, req)
		})
	})
	t.Run("run API", func(t *testing.T) {
		checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, h.Get("X-Run-Id")))
	})

	// The continuation with the tool's result: a response of its own, the
	// same run.
	h2, whole2 := postSSE(ctx, t, base, "/v1/responses",
		`{"model":"m","stream":true,"previous_response_id":"`+respID+`",`+
			`"input":[{"type":"function_call_output","call_id":"call_1","output":"20C"}]}`)
	if h2.Get("X-Run-Id") != h.Get("X-Run-Id") || !strings.Contains(string(whole2), "20C.") {
		t.Fatalf("the continuation ran %s, want %s continued:\n%s", h2.Get("X-Run-Id"), h.Get("X-Run-Id"), whole2)
	}
	var resp2 string
	seq2 := map[string]int64{}
	for _, f := range splitSSE(whole2) {
		var v struct {
			Seq      int64 `json:"sequence_number"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		_ = json.Unmarshal(bytes.TrimSpace(f[bytes.Index(f, []byte("data: "))+len("data: "):]), &v)
		if resp2 == "" {
			resp2 = v.Response.ID
		}
		seq2[sseFrameID(f)] = v.Seq
	}
	t.Run("continued starting_after", func(t *testing.T) {
		checkResumeEveryFrame(t, whole2, func(t *testing.T, id string) []byte {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
				fmt.Sprintf("%s/v1/responses/%s?stream=true&starting_after=%d", base, resp2, seq2[id]), nil)
			return readSSEBody(t, req)
		})
	})
	t.Run("continued run API", func(t *testing.T) {
		checkResumeEveryFrame(t, whole2, resumeOverRunAPI(ctx, base, h.Get("X-Run-Id")))
	})
}

// TestResumeEveryFrameA2A: an A2A message/stream (text, a function call,
// usage, an input-required final) resumed from each of its frames with
// tasks/resubscribe and Last-Event-ID, in 0.3 and in 1.0
// (SendStreamingMessage, SubscribeToTask). The resubscribe names the same
// JSON-RPC id, which every frame of its answer carries.
func TestResumeEveryFrameA2A(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	for _, v := range []struct{ name, version, send, subscribe, message string }{
		{"0.3", "", "message/stream", "tasks/resubscribe",
			`{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"Weather in Paris?"}]}`},
		{"1.0", "1.0", "SendStreamingMessage", "SubscribeToTask",
			`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"Weather in Paris?"}]}`},
	} {
		t.Run(v.name, func(t *testing.T) {
			up := toolRunUpstream(t)
			base := serveUpstream(t, "openai="+up.BaseURL())
			h, whole := postSSE(ctx, t, base, "/a2a",
				`{"jsonrpc":"2.0","id":"r1","method":"`+v.send+`","params":{"message":`+v.message+`}}`, "A2A-Version", v.version)
			taskID := h.Get("X-Run-Id")
			if !strings.Contains(string(whole), `"function_call"`) || !strings.Contains(string(whole), `"inputTokens":11`) {
				t.Fatalf("the stream has no function call or no usage:\n%s", whole)
			}
			checkResumeEveryFrame(t, whole, func(t *testing.T, id string) []byte {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a",
					strings.NewReader(`{"jsonrpc":"2.0","id":"r1","method":"`+v.subscribe+`","params":{"id":"`+taskID+`"}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Last-Event-ID", id)
				req.Header.Set("A2A-Version", v.version)
				return readSSEBody(t, req)
			})
		})
	}
}

// cutTextUpstream is a fake OpenAI upstream that streams some text and
// then drops the connection: a run that fails after its text began.
func cutTextUpstream(t *testing.T) *openaitest.Server {
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-cut", Model: "m"}
		c.Role().Text("Hel", "lo ", "there")
		return openaitest.Reply{Chunks: c.List(), CutAfter: 4}
	})
	t.Cleanup(up.Close)
	return up
}

// TestResumeEveryFrameADK: an ADK run_sse stream with partial events
// resumed from each of its frames with run_sse's lastEventId, and on the
// run API: a tool run (partials, then the complete event with the
// function call), and a run whose upstream fails mid-text (the complete
// event and the error event come from one hub event).
func TestResumeEveryFrameADK(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	for _, tt := range []struct {
		name string
		up   func(*testing.T) *openaitest.Server
		want string
	}{
		{"tool run", toolRunUpstream, `"functionCall"`},
		{"failed mid-text", cutTextUpstream, `"errorCode"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := serveUpstream(t, "openai="+tt.up(t).BaseURL())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/apps/weather/users/u1/sessions/s-1", strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("create session: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			h, whole := postSSE(ctx, t, base, "/run_sse", runBody("weather", "u1", "s-1", "Weather in Paris?", true))
			if !strings.Contains(string(whole), tt.want) || !strings.Contains(string(whole), `"partial":true`) {
				t.Fatalf("the stream has no %s or no partial event:\n%s", tt.want, whole)
			}
			if tt.name == "failed mid-text" && !strings.Contains(string(whole), `.1"`) {
				t.Errorf("the failure's hub event made one ADK event, want the complete one and the error:\n%s", whole)
			}
			// The ADK event's own id is its frame's SSE id.
			for _, f := range splitSSE(whole) {
				if id := sseFrameID(f); id != "" && !bytes.Contains(f, []byte(`{"id":"`+id+`"`)) {
					t.Errorf("frame with SSE id %q holds an event with another id:\n%s", id, f)
				}
			}
			t.Run("run_sse", func(t *testing.T) {
				checkResumeEveryFrame(t, whole, func(t *testing.T, id string) []byte {
					b, _ := json.Marshal(map[string]any{"appName": "weather", "userId": "u1", "sessionId": "s-1", "streaming": true, "lastEventId": id})
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/run_sse", bytes.NewReader(b))
					req.Header.Set("Content-Type", "application/json")
					return readSSEBody(t, req)
				})
			})
			t.Run("run API", func(t *testing.T) {
				checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, h.Get("X-Run-Id")))
			})
		})
	}
}

// TestResumeEveryFrameHermes: a Hermes session stream (message.started
// with the first delta, the final's assistant.completed, run.completed
// and done: events of several frames) resumed from each of its frames on
// GET .../chat/stream with Last-Event-ID and with ?after_event_id=, and on
// the run API. After done nothing more comes.
func TestResumeEveryFrameHermes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), framesTimeout)
	defer cancel()
	up := toolRunUpstream(t)
	base := serveUpstream(t, "openai="+up.BaseURL())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/sessions", strings.NewReader(`{"id":"hs-1"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("create session: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	h, whole := postSSE(ctx, t, base, "/api/sessions/hs-1/chat/stream",
		`{"message":"Weather in Paris?","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`)
	if !strings.Contains(string(whole), "event: tool.started") || !strings.Contains(string(whole), `"input_tokens":11`) ||
		!strings.Contains(sseFrameIDs(whole)+" ", ".1 ") {
		t.Fatalf("the stream has no tool call, no usage or no event of several frames:\n%s", whole)
	}
	get := func(t *testing.T, url, id string) []byte {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if id != "" {
			req.Header.Set("Last-Event-ID", id)
		}
		return readSSEBody(t, req)
	}
	t.Run("Last-Event-ID", func(t *testing.T) {
		checkResumeEveryFrame(t, whole, func(t *testing.T, id string) []byte {
			return get(t, base+"/api/sessions/hs-1/chat/stream", id)
		})
	})
	t.Run("after_event_id", func(t *testing.T) {
		checkResumeEveryFrame(t, whole, func(t *testing.T, id string) []byte {
			return get(t, base+"/api/sessions/hs-1/chat/stream?after_event_id="+id, "")
		})
	})
	t.Run("run API", func(t *testing.T) {
		checkResumeEveryFrame(t, whole, resumeOverRunAPI(ctx, base, h.Get("X-Run-Id")))
	})

	// The tool's result continues the run in a stream of its own, which
	// resumes from each of its frames the same way.
	h2, whole2 := postSSE(ctx, t, base, "/api/sessions/hs-1/chat/stream",
		`{"input":[{"role":"tool","tool_call_id":"call_1","content":"20C"}]}`)
	if h2.Get("X-Run-Id") != h.Get("X-Run-Id") || !strings.Contains(string(whole2), "20C.") {
		t.Fatalf("the continuation ran %s, want %s continued:\n%s", h2.Get("X-Run-Id"), h.Get("X-Run-Id"), whole2)
	}
	ids1, ids2 := strings.Fields(sseFrameIDs(whole)), strings.Fields(sseFrameIDs(whole2))
	if len(ids1) == 0 || len(ids2) == 0 {
		t.Fatalf("a stream without frame ids:\n%s\n%s", whole, whole2)
	}
	_, p1, _ := parseFramePos(ids1[len(ids1)-1])
	_, p2, _ := parseFramePos(ids2[0])
	if !p1.before(p2) {
		t.Errorf("the continuation's first frame %s does not follow the first stream's last, %s", ids2[0], ids1[len(ids1)-1])
	}
	t.Run("continued Last-Event-ID", func(t *testing.T) {
		checkResumeEveryFrame(t, whole2, func(t *testing.T, id string) []byte {
			return get(t, base+"/api/sessions/hs-1/chat/stream", id)
		})
	})
}

// sseFrameIDs lists the ids of a stream's frames, space-separated.
func sseFrameIDs(body []byte) string {
	var ids []string
	for _, f := range splitSSE(body) {
		if id := sseFrameID(f); id != "" {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, " ")
}
