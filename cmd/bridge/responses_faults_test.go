package main

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// respond posts a create-response request and returns the status, the
// Retry-After header and the body.
func respond(t *testing.T, base, key, body string) (int, string, string) {
	t.Helper()
	resp, b := call(t, http.MethodPost, base+"/v1/responses", key, body, "Content-Type", "application/json")
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// TestResponsesBreaker: over a failing upstream the breaker opens and the
// Responses endpoint answers 503 with Retry-After in OpenAI's shape,
// without touching the upstream, streamed or not.
func TestResponsesBreaker(t *testing.T) {
	base, up, fail := flakyBridge(t, 300*time.Millisecond)
	for i := range 3 {
		if status, _, body := respond(t, base, "", `{"model":"m","input":"hi"}`); status != 500 || errorType(t, body) != "server_error" {
			t.Fatalf("call %d: %d %s", i, status, body)
		}
	}
	for _, stream := range []string{"true", "false"} {
		status, retryAfter, body := respond(t, base, "", `{"model":"m","input":"hi","stream":`+stream+`}`)
		if status != 503 || retryAfter == "" || errorType(t, body) != "service_unavailable_error" {
			t.Fatalf("open breaker (stream %s): %d Retry-After %q %s", stream, status, retryAfter, body)
		}
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("the open breaker let requests through: %d upstream requests", n)
	}
	time.Sleep(350 * time.Millisecond)
	fail.Store(false)
	if status, _, body := respond(t, base, "", `{"model":"m","input":"hi"}`); status != 200 || !strings.Contains(body, "back") {
		t.Fatalf("half-open trial: %d %s", status, body)
	}
}

// TestResponsesFaults: each fault of a Responses upstream ends as
// documented, in the Responses dialect, and the bridge goes on serving.
func TestResponsesFaults(t *testing.T) {
	var script atomic.Value // func(n int) responsestest.Reply
	up := responsestest.New(func(n int, _ []byte) responsestest.Reply {
		return script.Load().(func(int) responsestest.Reply)(n)
	})
	t.Cleanup(up.Close)
	base := "http://" + startMain(t, faultConfig("responses", up.BaseURL())).Addr()
	partial := func() *responsestest.Events {
		e := &responsestest.Events{ID: "resp_up", Model: "m"}
		return e.Created().Raw("response.output_item.added",
			`,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}`).
			Raw("response.output_text.delta", `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"partial","logprobs":[]`)
	}
	tests := []struct {
		name   string
		reply  func(n int) responsestest.Reply
		stream bool
		status int
		want   string // in the body
	}{
		{"stall before first byte", func(int) responsestest.Reply {
			return responsestest.Reply{HeaderDelay: time.Second}
		}, false, 504, "first byte timeout"},
		{"stall mid-stream", func(int) responsestest.Reply {
			return responsestest.Reply{Events: partial().Completed(1, 1).List(), StallAfter: 4}
		}, true, 200, "idle timeout"},
		{"truncated stream", func(int) responsestest.Reply {
			return responsestest.Reply{Events: partial().List()}
		}, true, 200, `"type":"response.failed"`},
		{"garbage in the stream", func(int) responsestest.Reply {
			return responsestest.Reply{Events: append(partial().List(), `not json`)}
		}, true, 200, `"type":"error"`},
		{"response.failed", func(int) responsestest.Reply {
			return responsestest.Reply{Events: partial().Failed("server_error", "the model broke").List()}
		}, true, 200, "the model broke"},
		{"response.failed, not streamed", func(int) responsestest.Reply {
			return responsestest.Reply{Events: partial().Failed("server_error", "the model broke").List()}
		}, false, 502, "the model broke"},
		{"429 retried", func(n int) responsestest.Reply {
			if n%2 == 0 {
				return responsestest.Reply{Status: 429, Body: responsestest.ErrorBody("rate_limit_error", "slow down", "rate_limit_exceeded"),
					Header: http.Header{"Retry-After": {"0"}}}
			}
			e := &responsestest.Events{ID: "resp_up", Model: "m"}
			return responsestest.Reply{Events: e.Created().Text("after retry").Completed(1, 2).List()}
		}, false, 200, "after retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n0 := len(up.Requests())
			script.Store(func(n int) responsestest.Reply { return tt.reply(n - n0) })
			body := `{"model":"m","input":"hi"}`
			if tt.stream {
				body = `{"model":"m","input":"hi","stream":true}`
			}
			status, _, got := respond(t, base, "", body)
			if status != tt.status || !strings.Contains(got, tt.want) {
				t.Errorf("got %d:\n%s\nwant %d with %q", status, got, tt.status, tt.want)
			}
			if tt.stream && status == 200 {
				frames, err := responsestest.ParseFrames([]byte(got))
				if err != nil {
					t.Fatal(err)
				}
				sum, problems := responsestest.CheckStream(frames, responsestest.Check{Complete: true})
				for _, p := range problems {
					t.Errorf("stream: %s", p)
				}
				if sum.Terminal != "response.failed" || sum.Text != "partial" {
					t.Errorf("a broken upstream stream ends %s with text %q", sum.Terminal, sum.Text)
				}
			}
		})
	}
	script.Store(func(int) responsestest.Reply {
		e := &responsestest.Events{ID: "resp_up", Model: "m"}
		return responsestest.Reply{Events: e.Created().Text("fine").Completed(1, 1).List()}
	})
	if status, _, body := respond(t, base, "", `{"model":"m","input":"hi"}`); status != 200 || !strings.Contains(body, "fine") {
		t.Errorf("after the faults: %d %s", status, body)
	}
}

// TestResponsesBadInput: malformed requests get the right 4xx as OpenAI
// error objects, never a 500 or a Go error string.
func TestResponsesBadInput(t *testing.T) {
	base := "http://" + startMain(t, defaultConfig()).Addr()
	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	tests := []struct {
		name, body string
		status     int
	}{
		{"malformed json", `{"model":"echo","input":"x"`, 400},
		{"wrong type", `{"model":"echo","input":42}`, 400},
		{"missing input", `{"model":"echo"}`, 400},
		{"missing model", `{"input":"x"}`, 400},
		{"deep nesting", `{"model":"echo","input":"x","metadata":` + deep + `}`, 400},
		{"20 MiB body", `{"model":"echo","input":"` + strings.Repeat("a", 20<<20) + `"}`, 413},
		{"not json at all", "\x00\x01\x02", 400},
		{"unknown role", `{"model":"echo","input":[{"role":"wizard","content":"x"}]}`, 400},
		{"background without store", `{"model":"echo","input":"x","background":true,"store":false}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := respond(t, base, "", tt.body)
			expectInvalidRequest(t, status, body, tt.status)
		})
	}
}

// TestResponsesAuth: the Responses endpoints need a key (401 in OpenAI's
// shape), a key limited to other dialects gets 403, and one principal's
// responses are another's 404.
func TestResponsesAuth(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "key-a-secret,key-b-secret")
	t.Setenv("BRIDGE_API_KEY", "")
	cfg := defaultConfig()
	base := "http://" + startMain(t, cfg).Addr()
	for _, key := range []string{"", "nope"} {
		if status, _, body := respond(t, base, key, `{"model":"echo","input":"hi"}`); status != 401 || errorType(t, body) != "authentication_error" {
			t.Errorf("key %q: %d %s", key, status, body)
		}
	}
	status, _, body := respond(t, base, "key-a-secret", `{"model":"echo","input":"a secret plan"}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	id := jsonField([]byte(body), "id")
	for _, path := range []string{"/v1/responses/" + id, "/v1/responses/" + id + "/input_items"} {
		if status, body := do(t, "GET", base+path, "key-b-secret", ""); status != 404 || strings.Contains(body, "secret plan") {
			t.Errorf("GET %s as another principal: %d %s", path, status, body)
		}
	}
	if status, body := do(t, "POST", base+"/v1/responses", "key-b-secret", `{"model":"echo","input":"x","previous_response_id":"`+id+`"}`); status != 404 ||
		!strings.Contains(body, "previous_response_not_found") {
		t.Errorf("continuing another principal's response: %d %s", status, body)
	}
	if status, _ := do(t, "DELETE", base+"/v1/responses/"+id, "key-b-secret", ""); status != 404 {
		t.Errorf("DELETE as another principal: %d", status)
	}
	if status, body := do(t, "GET", base+"/v1/responses/"+id, "key-a-secret", ""); status != 200 || !strings.Contains(body, "a secret plan") {
		t.Errorf("GET as its principal: %d %s", status, body)
	}
}
