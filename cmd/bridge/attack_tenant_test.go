package main

// The attack suite's cross-principal cases (issue 15 item 5): every
// client-given id is its principal's own, and another principal's id
// behaves exactly as one that does not exist. docs/security.md, "One id
// namespace per principal", says why the store names a session by its
// principal and its id.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// tenantKeys are the two principals of these tests.
const (
	tenantOne = "tenant-key-one"
	tenantTwo = "tenant-key-two"
)

// tenantBridge starts a bridge with the two keys.
func tenantBridge(t *testing.T, cfg Config) (string, *Main) {
	t.Helper()
	t.Setenv("BRIDGE_API_KEYS", tenantOne+","+tenantTwo)
	t.Setenv("BRIDGE_API_KEY", "")
	m := startMain(t, cfg)
	return "http://" + m.Addr(), m
}

// sessionTurn is one turn of a dialect in a session the client names;
// history is what the dialect shows of that session, the caller's.
type sessionTurn struct {
	name    string
	turn    func(t *testing.T, base, key, session, text string) (int, string)
	history func(t *testing.T, base, key, session string) (int, string)
}

// runAPIHistory reads a session's transcript from the run API.
func runAPIHistory(t *testing.T, base, key, session string) (int, string) {
	return do(t, "GET", base+"/v1/sessions/"+session+"/history", key, "")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sessionTurns covers every dialect whose client names its session.
var sessionTurns = []sessionTurn{
	{"chat X-Session-Id", func(t *testing.T, base, key, session, text string) (int, string) {
		return do(t, "POST", base+"/v1/chat/completions", key,
			`{"model":"echo","messages":[{"role":"user","content":`+jsonString(text)+`}]}`, "X-Session-Id", session)
	}, runAPIHistory},
	{"messages X-Session-Id", func(t *testing.T, base, key, session, text string) (int, string) {
		return do(t, "POST", base+"/v1/messages", key,
			`{"model":"echo","max_tokens":64,"messages":[{"role":"user","content":`+jsonString(text)+`}]}`, "X-Session-Id", session)
	}, runAPIHistory},
	{"responses X-Session-Id", func(t *testing.T, base, key, session, text string) (int, string) {
		return do(t, "POST", base+"/v1/responses", key, `{"model":"echo","input":`+jsonString(text)+`}`, "X-Session-Id", session)
	}, runAPIHistory},
	{"a2a contextId", func(t *testing.T, base, key, session, text string) (int, string) {
		status, body := do(t, "POST", base+"/a2a", key, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":`+
			`{"messageId":`+jsonString("m-"+key+"-"+session+"-"+text)+`,"role":"user","contextId":`+jsonString(session)+`,"parts":[{"kind":"text","text":`+jsonString(text)+`}]}}}`)
		if strings.Contains(body, `"error"`) {
			return 400, body
		}
		return status, body
	}, runAPIHistory},
	{"hermes session", func(t *testing.T, base, key, session, text string) (int, string) {
		if status, body := do(t, "POST", base+"/api/sessions", key, `{"id":`+jsonString(session)+`}`); status != 201 {
			return status, body
		}
		return do(t, "POST", base+"/api/sessions/"+session+"/chat", key, `{"message":`+jsonString(text)+`}`)
	}, func(t *testing.T, base, key, session string) (int, string) {
		return do(t, "GET", base+"/api/sessions/"+session+"/messages", key, "")
	}},
	{"hermes /v1/runs session_id", func(t *testing.T, base, key, session, text string) (int, string) {
		status, body := do(t, "POST", base+"/v1/runs", key, `{"session_id":`+jsonString(session)+`,"input":`+jsonString(text)+`}`)
		if status != 202 {
			return status, body
		}
		var v struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal([]byte(body), &v)
		return do(t, "GET", base+"/v1/runs/"+v.RunID+"/events", key, "") // to its end
	}, runAPIHistory},
	{"adk sessionId", func(t *testing.T, base, key, session, text string) (int, string) {
		if status, body := do(t, "POST", base+"/apps/echo/users/u/sessions", key, `{"sessionId":`+jsonString(session)+`}`); status != 200 {
			return status, body
		}
		return do(t, "POST", base+"/run", key, runBody("echo", "u", session, text, false))
	}, func(t *testing.T, base, key, session string) (int, string) {
		return do(t, "GET", base+"/apps/echo/users/u/sessions/"+session, key, "")
	}},
}

// TestAttackSessionNamespace: a session id is its principal's own, in
// every dialect that lets a client name one. When key two uses "demo"
// first, key one may use "demo" too (no 404 that tells it the name is
// taken), and each sees its own turns alone; the same holds when both use
// one name at once.
func TestAttackSessionNamespace(t *testing.T) {
	count := newTally(t)
	base, _ := tenantBridge(t, defaultConfig())
	for _, d := range sessionTurns {
		session := "demo-" + strings.Fields(d.name)[0] + fmt.Sprint(len(d.name))
		count.add("name-used-first-by-another")
		for _, p := range []struct{ key, text string }{{tenantTwo, "words of two"}, {tenantOne, "words of one"}} {
			if status, body := d.turn(t, base, p.key, session, p.text); status != 200 {
				t.Errorf("%s: %s's turn in %s: %d %.300s", d.name, p.key, session, status, body)
			}
		}
		for key, want := range map[string][2]string{tenantOne: {"words of one", "words of two"}, tenantTwo: {"words of two", "words of one"}} {
			status, body := d.history(t, base, key, session)
			if status != 200 || !strings.Contains(body, want[0]) || strings.Contains(body, want[1]) {
				t.Errorf("%s: %s's history of %s: %d, want its own turn alone: %.400s", d.name, key, session, status, body)
			}
		}
	}

	// Both at once in the same name (run API history): one turn each where
	// a request carries the whole conversation, three in A2A.
	for _, d := range sessionTurns[:4] { // the dialects whose turns need no set-up
		count.add("same-name-at-once")
		session := "together-" + strings.Fields(d.name)[0]
		turns := 1
		if strings.HasPrefix(d.name, "a2a") {
			turns = 3
		}
		var wg sync.WaitGroup
		for _, key := range []string{tenantOne, tenantTwo} {
			wg.Go(func() {
				for i := range turns {
					if status, body := d.turn(t, base, key, session, fmt.Sprintf("%s turn %d", key, i)); status != 200 {
						t.Errorf("%s: %s turn %d: %d %.300s", d.name, key, i, status, body)
					}
				}
			})
		}
		wg.Wait()
		for _, key := range []string{tenantOne, tenantTwo} {
			other := tenantTwo
			if key == tenantTwo {
				other = tenantOne
			}
			status, body := runAPIHistory(t, base, key, session)
			if status != 200 || !strings.Contains(body, key+" turn 0") || strings.Contains(body, other) {
				t.Errorf("%s: %s's history of %s shared at once: %d %.500s", d.name, key, session, status, body)
			}
		}
	}
}

// TestAttackHermesForeignSession: Hermes' session routes answer another
// principal's session as one that does not exist (DELETE too, which said
// 200 {"deleted": true}), and leave it as it was; a /v1/runs the bridge
// refuses leaves no session behind to patch, fork or delete.
func TestAttackHermesForeignSession(t *testing.T) {
	count := newTally(t)
	cfg := defaultConfig()
	// Two upstreams, so that a model neither lists is refused (404).
	cfg.Model = "echo"
	cfg.Upstreams = []Upstream{{Name: "one", Dialect: "echo", Models: []string{"echo"}}, {Name: "two", Dialect: "echo", Models: []string{"echo-two"}}}
	base, _ := tenantBridge(t, cfg)
	if status, body := do(t, "POST", base+"/api/sessions", tenantOne, `{"id":"hermes-owned","title":"one's"}`); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := do(t, "POST", base+"/api/sessions/hermes-owned/chat", tenantOne, `{"message":"one's secret"}`); status != 200 {
		t.Fatalf("chat: %d %s", status, body)
	}
	probes := []struct{ method, suffix, body string }{
		{"GET", "", ""},
		{"PATCH", "", `{"title":"taken"}`},
		{"GET", "/messages", ""},
		{"POST", "/fork", `{}`},
		{"GET", "/chat/stream", ""},
		{"DELETE", "", ""},
	}
	for _, p := range probes {
		count.add("hermes-" + p.method + p.suffix)
		fs, fb := do(t, p.method, base+"/api/sessions/hermes-owned"+p.suffix, tenantTwo, p.body)
		ns, nb := do(t, p.method, base+"/api/sessions/hermes-never"+p.suffix, tenantTwo, p.body)
		if fs != ns || masked(fb, "hermes-owned") != masked(nb, "hermes-never") {
			t.Errorf("%s %s: another principal's session %d %.200s; one that does not exist %d %.200s", p.method, p.suffix, fs, fb, ns, nb)
		}
		if fs != http.StatusNotFound {
			t.Errorf("%s %s of another principal's session: %d, want 404", p.method, p.suffix, fs)
		}
	}
	status, body := do(t, "GET", base+"/api/sessions/hermes-owned", tenantOne, "")
	if status != 200 || !strings.Contains(body, `"title":"one's"`) || !strings.Contains(body, `"message_count":2`) {
		t.Errorf("the owner's session after the other's attempts: %d %s", status, body)
	}

	// A refused run leaves nothing.
	count.add("refused-run")
	status, body = do(t, "POST", base+"/v1/runs", tenantOne, `{"session_id":"hermes-refused","model":"no-such-model","input":"hi"}`)
	if status != http.StatusNotFound {
		t.Fatalf("a run of an unknown model: %d %s, want 404", status, body)
	}
	for _, p := range probes {
		count.add("after-refused-" + p.method + p.suffix)
		if status, body := do(t, p.method, base+"/api/sessions/hermes-refused"+p.suffix, tenantOne, p.body); status != http.StatusNotFound {
			t.Errorf("%s %s of the session a refused run named: %d %.200s, want 404", p.method, p.suffix, status, body)
		}
	}
	if _, body := do(t, "GET", base+"/api/sessions", tenantOne, ""); strings.Contains(body, "hermes-refused") {
		t.Errorf("the session list holds the session a refused run named: %.300s", body)
	}
}

// volatile matches what differs between two answers to the same request
// besides the id asked about: minted ids, times, counters.
var volatile = regexp.MustCompile(`(run|sess|resp|msg|chatcmpl|call|task|s)[-_][A-Za-z0-9]{6,}|[0-9]+(\.[0-9]+)?`)

// masked is body with id replaced and the volatile parts blanked, for
// comparing answers about different ids.
func masked(body, id string) string {
	if id != "" {
		body = strings.ReplaceAll(body, id, "<id>")
	}
	return volatile.ReplaceAllString(body, "#")
}
