package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// malformedBodies are request bodies no route may answer with a 5xx, a
// hang, a panic or Go's own error text. The ones marked broken are not a
// JSON document at all: every route that reads a body refuses them with a
// 4xx (or, over A2A's JSON-RPC, a parse or invalid-request error).
var malformedBodies = []struct {
	name   string
	body   string
	broken bool
}{
	{"empty", "", true},
	{"not JSON", "hello, bridge", true},
	{"truncated object", `{"model":"echo","messages":[{"role":"us`, true},
	{"lone brace", "{", true},
	{"trailing garbage", `{"model":"echo"} {"x":1}`, true},
	{"invalid UTF-8", "{\"model\":\"\xff\xfe\"}", false},
	{"NUL bytes", "{\x00\"model\":1}", true},
	{"byte order mark", "\ufeff{\"model\":\"echo\"}", true},
	{"deep nesting", strings.Repeat(`{"a":[`, 20000) + strings.Repeat(`]}`, 20000), true},
	{"array", "[]", false},
	{"null", "null", false},
	{"number", "42", false},
	{"string", `"hi"`, false},
	{"wrong types", `{"model":1,"messages":"x","input":7,"params":"x","newMessage":3,"message":5,"max_tokens":"x","stream":"yes","title":[]}`, false},
	{"huge number", `{"model":"echo","max_tokens":1e999,"messages":[{"role":"user","content":"hi"}]}`, false},
	{"duplicate keys", `{"model":"echo","model":["x"],"messages":[],"messages":{}}`, false},
	{"wrong part types", `{"model":"echo","messages":[{"role":"user","content":[{"type":"image_url","image_url":7}]}],"input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":{}}]}],"newMessage":{"parts":[{"inlineData":"x"}]}}`, false},
	{"unknown role", `{"model":"echo","messages":[{"role":"wizard","content":"hi"}],"input":[{"role":"wizard","content":"hi"}],"newMessage":{"role":"wizard","parts":[{"text":"hi"}]}}`, false},
	{"a2a wrong params", `{"jsonrpc":"2.0","id":{"x":1},"method":"message/send","params":[1,2]}`, false},
	{"a2a unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`, false},
	{"a2a no parts", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"messageId":"m","role":"user","parts":[]}}}`, false},
	{"over the body limit", `{"model":"echo","messages":[{"role":"user","content":"` + strings.Repeat("a", 8<<20) + `"}]}`, true},
}

// Routes that read no body (a stop or cancel acts on the run the path
// names) and routes whose body is optional (an empty one asks for the
// defaults): a broken body is not theirs to refuse.
var (
	ignoresBody  = regexp.MustCompile(`/(stop|cancel)$`)
	optionalBody = regexp.MustCompile(`^/apps/[^/]+/users/[^/]+/sessions$|^/api/sessions(/[^/]+(/fork)?)?$`)
)

// dialectOf names the dialect whose error shape a route answers in, by
// its path: the caller's own dialect.
func dialectOf(path string) string {
	switch {
	case path == "/a2a":
		return "a2a"
	case strings.HasPrefix(path, "/v1/messages"):
		return "anthropic"
	case path == "/run" || path == "/run_sse" || strings.HasPrefix(path, "/apps/"):
		return "adk"
	case strings.HasPrefix(path, "/api/sessions"):
		return "hermes"
	default: // Chat, Responses, the run API and the inspector speak OpenAI's error object
		return "openai"
	}
}

// inDialect says whether body is an error in the dialect's own shape.
func inDialect(dialect string, status int, body []byte) bool {
	var v map[string]any
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	switch dialect {
	case "a2a":
		e, ok := v["error"].(map[string]any)
		return ok && v["jsonrpc"] == "2.0" && e["code"] != nil && e["message"] != ""
	case "anthropic":
		e, ok := v["error"].(map[string]any)
		return ok && v["type"] == "error" && e["type"] != nil && e["message"] != nil
	case "adk": // ADK-JS's api_server answers {"error": "…"}, Python's FastAPI {"detail": "…"}
		e, _ := v["error"].(string)
		d, _ := v["detail"].(string)
		return e != "" || d != ""
	default:
		e, ok := v["error"].(map[string]any)
		return ok && e["message"] != nil && e["type"] != nil
	}
}

// TestAttackMalformedInput: every route of the route table that takes a
// body (its wildcards filled with ids that exist, so the body is what is
// judged) gets each malformed body, with a valid key. Every answer comes
// within the body timeout, is never a 5xx, never holds Go's error text,
// and is an error in the caller's dialect; a body that is not JSON at all
// is always refused. The bridge keeps serving afterwards.
func TestAttackMalformedInput(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "k1")
	t.Setenv("BRIDGE_API_KEY", "")
	count := newTally(t)
	m := startMain(t, defaultConfig())
	base := "http://" + m.Addr()
	client := &http.Client{Timeout: 15 * time.Second}

	// Ids that exist, for the wildcards.
	resp, _ := call(t, "POST", base+"/v1/chat/completions", "k1",
		`{"model":"echo","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "attack-session")
	run := resp.Header.Get("X-Run-Id")
	if run == "" {
		t.Fatal("no run id to attack")
	}
	if status, body := do(t, "POST", base+"/apps/echo/users/u/sessions/adk-s", "k1", "{}"); status != 200 {
		t.Fatalf("adk session: %d %s", status, body)
	}
	_, hs := do(t, "POST", base+"/api/sessions", "k1", `{"title":"attack"}`)
	var hermes struct {
		ID      string `json:"id"`
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	_ = json.Unmarshal([]byte(hs), &hermes)
	hid := hermes.ID
	if hid == "" {
		hid = hermes.Session.ID
	}
	if hid == "" {
		t.Fatalf("no hermes session: %s", hs)
	}
	fill := map[string]string{"app": "echo", "user": "u", "session": "adk-s", "id": hid, "run": run, "model": "echo"}

	routes := 0
	for _, r := range m.Endpoints() {
		method, pattern, ok := strings.Cut(r, " ")
		if !ok || (method != "POST" && method != "PUT" && method != "PATCH") {
			continue
		}
		routes++
		path := wildcardRe.ReplaceAllStringFunc(pattern, func(w string) string {
			if v, ok := fill[strings.Trim(w, "{}")]; ok {
				return v
			}
			t.Fatalf("route %s: no id to fill %s with: add it to fill", r, w)
			return ""
		})
		if strings.HasPrefix(path, "/v1/sessions/") {
			path = strings.Replace(path, "adk-s", "attack-session", 1)
		}
		dialect := dialectOf(path)
		for _, mb := range malformedBodies {
			count.add(dialect)
			what := method + " " + path + " with " + mb.name
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(mb.body))
			req.Header.Set("Authorization", "Bearer k1")
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				cancel()
				t.Errorf("%s: no answer: %v", what, err)
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
			res.Body.Close()
			cancel()
			if res.StatusCode >= 500 {
				t.Errorf("%s: %d: %.300s", what, res.StatusCode, body)
			}
			for _, s := range goErrorText {
				if bytes.Contains(body, []byte(s)) {
					t.Errorf("%s: Go's error text %q reached the client: %.300s", what, s, body)
				}
			}
			refused := res.StatusCode >= 400 && res.StatusCode < 500
			if dialect == "a2a" && res.StatusCode == 200 && bytes.Contains(body, []byte(`"error"`)) {
				refused = true // JSON-RPC answers its errors with 200
			}
			if a2aStream := bytes.HasPrefix(body, []byte("data: ")); dialect == "a2a" && a2aStream {
				// message/stream answers a request it refuses with one
				// SSE event holding the JSON-RPC error response.
				body = bytes.TrimSpace(bytes.TrimPrefix(body, []byte("data: ")))
			}
			broken := mb.broken && !ignoresBody.MatchString(path) && !(mb.name == "empty" && optionalBody.MatchString(path))
			if broken && !refused {
				t.Errorf("%s: %d, want the dialect's refusal: %.300s", what, res.StatusCode, body)
			}
			if refused && !inDialect(dialect, res.StatusCode, body) {
				t.Errorf("%s: %d is not a %s error: %.300s", what, res.StatusCode, dialect, body)
			}
		}
	}
	if routes < 15 {
		t.Errorf("only %d routes take a body: the route table is not being read", routes)
	}
	if status, _ := do(t, "GET", base+"/healthz", "", ""); status != 200 {
		t.Errorf("the bridge no longer serves after the attack: %d", status)
	}
}
