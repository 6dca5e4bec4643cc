package main

// The attack suite's cross-principal cases (issue 15 item 5): every
// client-given id is its principal's own, and another principal's id
// behaves exactly as one that does not exist. docs/security.md, "One id
// namespace per principal", says why the store names a session by its
// principal and its id.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
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
// besides the id asked about: minted ids, hashes (of a body that holds the
// id), times, counters, and whether a run just started has ended yet.
var volatile = regexp.MustCompile(`[0-9a-f]{32,64}|(run|sess|resp|msg|chatcmpl|call|task|s)[-_][A-Za-z0-9]{6,}|[0-9]+(\.[0-9]+)?|"(running|completed)"`)

// timings are a run's timings (Run.FirstCommit, FirstClientByte), there
// once it has ended: like its status, whether a run just started has them
// yet varies.
var timings = regexp.MustCompile(`"first_(commit|client_byte)_at":"[^"]*",?`)

// masked is body with id replaced and the volatile parts blanked, for
// comparing answers about different ids.
func masked(body, id string) string {
	if id != "" {
		body = strings.ReplaceAll(body, id, "<id>")
	}
	return volatile.ReplaceAllString(timings.ReplaceAllString(body, ""), "#")
}

// crossProbe is one request a route is tried with: its body and headers,
// with the placeholders {SESSION} (a session id: chat, A2A, Hermes, the run
// API), {ADK} (an ADK session id), {RUN} (a run or task id), {RESP} (a
// stored Responses id) and {IDEM} (an idempotency key) in them, and in the
// route's wildcards and query.
type crossProbe struct {
	query, body string
	header      []string
}

// crossBodies are the requests of the routes that carry ids in their
// body, their headers or their query; every other route of the route table
// either has a wildcard (filled from its name) or is listed in crossIDFree.
// A route in neither fails TestAttackCrossPrincipal: a new route needs a
// decision, not a memory.
var crossBodies = map[string][]crossProbe{
	"POST /v1/chat/completions": {{body: `{"model":"echo","messages":[{"role":"user","content":"probe"}]}`, header: []string{"X-Session-Id", "{SESSION}"}}},
	"POST /v1/messages":         {{body: `{"model":"echo","max_tokens":16,"messages":[{"role":"user","content":"probe"}]}`, header: []string{"X-Session-Id", "{SESSION}"}}},
	"POST /a2a": {
		{body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"probe-{SESSION}","role":"user","contextId":"{SESSION}","parts":[{"kind":"text","text":"probe"}]}}}`},
		{body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"probe-{RUN}","role":"user","taskId":"{RUN}","parts":[{"kind":"text","text":"probe"}]}}}`},
		{body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"{RUN}"}}`},
		{body: `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"{RUN}"}}`},
		{body: `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"{RUN}"}}`},
	},
	"POST /run":                              {{body: `{"appName":"echo","userId":"u","sessionId":"{ADK}","newMessage":{"role":"user","parts":[{"text":"probe"}]}}`}},
	"POST /run_sse":                          {{body: `{"appName":"echo","userId":"u","sessionId":"{ADK}","newMessage":{"role":"user","parts":[{"text":"probe"}]}}`}},
	"POST /api/sessions":                     {{body: `{"id":"{SESSION}"}`}},
	"POST /v1/responses":                     {{body: `{"model":"echo","input":"probe","previous_response_id":"{RESP}"}`}, {body: `{"model":"echo","input":"probe"}`, header: []string{"X-Session-Id", "{SESSION}"}}},
	"POST /v1/responses/compact":             {{body: `{"model":"echo","previous_response_id":"{RESP}"}`}},
	"POST /v1/runs":                          {{body: `{"session_id":"{SESSION}","input":"probe"}`, header: []string{"Idempotency-Key", "{IDEM}"}}},
	"GET /ui/api/runs":                       {{query: "session={SESSION}"}},
	"POST /apps/{app}/users/{user}/sessions": {{body: `{"sessionId":"{ADK}"}`}},
}

// crossIDFree are the routes that take no id of a principal's, and why.
var crossIDFree = map[string]string{
	"GET /v1/models": "a list of models", "GET /v1/models/{model}": "a model name", "GET /list-apps": "a list of apps",
	"GET /.well-known/agent-card.json": "the public card", "GET /.well-known/agent.json": "the public card",
	"OPTIONS /.well-known/agent-card.json": "CORS", "OPTIONS /.well-known/agent.json": "CORS",
	"POST /v1/messages/count_tokens": "counts a body's tokens", "POST /v1/responses/input_tokens": "counts a body's tokens",
	"GET /api/sessions": "the caller's list (the leak check covers it)", "GET /apps/{app}/users/{user}/sessions": "the caller's list (the leak check covers it)",
	"GET /v1/capabilities": "static", "GET /health": "static", "GET /v1/health": "static", "GET /healthz": "static",
	"GET /v1/responses": "WebSocket mode: its frames carry previous_response_id, tried over a WebSocket below",
	"GET /ui/{$}":       "the page", "GET /ui/assets/": "static files", "/ui/": "a redirect", "GET /ui/api/me": "the caller",
}

// TestAttackCrossPrincipal: on every route and method of the route table,
// key two acting on key one's ids (its sessions, a finished and a running
// run, a stored response, an ADK session, an idempotency key) gets exactly
// the answer it gets for ids no one made: the same status and the same
// body but for the id itself and what the bridge mints (ids, times,
// counts). Nothing key two receives holds key one's words, and key one's
// session, runs and response are as they were, its running run still
// running.
func TestAttackCrossPrincipal(t *testing.T) {
	count := newTally(t)
	cfg := defaultConfig()
	cfg.EchoDelay = 20 * time.Millisecond // key one's live run below lasts a minute
	base, m := tenantBridge(t, cfg)
	const secret = "zanzibar-quokka"

	// Key one's data.
	one := map[string]string{}
	resp, body := call(t, "POST", base+"/v1/chat/completions", tenantOne,
		`{"model":"echo","messages":[{"role":"user","content":"`+secret+` one"}]}`, "X-Session-Id", "one-session")
	if resp.StatusCode != 200 {
		t.Fatalf("key one's chat: %d %s", resp.StatusCode, body)
	}
	one["{SESSION}"], one["{RUN}"] = "one-session", resp.Header.Get("X-Run-Id")
	status, body := do(t, "POST", base+"/v1/responses", tenantOne, `{"model":"echo","input":"`+secret+` two"}`)
	var r struct{ ID string }
	if err := json.Unmarshal([]byte(body), &r); status != 200 || err != nil || r.ID == "" {
		t.Fatalf("key one's response: %d %s", status, body)
	}
	one["{RESP}"] = r.ID
	if status, body := do(t, "POST", base+"/apps/echo/users/u/sessions", tenantOne, `{"sessionId":"one-adk"}`); status != 200 {
		t.Fatalf("key one's ADK session: %d %s", status, body)
	}
	if status, body := do(t, "POST", base+"/run", tenantOne, runBody("echo", "u", "one-adk", secret+" three", false)); status != 200 {
		t.Fatalf("key one's ADK run: %d %s", status, body)
	}
	one["{ADK}"] = "one-adk"
	if status, body := do(t, "POST", base+"/v1/runs", tenantOne, `{"session_id":"one-hermes","input":"`+secret+` four"}`,
		"Idempotency-Key", "one-idem"); status != 202 {
		t.Fatalf("key one's Hermes run: %d %s", status, body)
	}
	one["{IDEM}"] = "one-idem"
	// A run that goes on while key two tries it (a detached session run).
	live, body := call(t, "POST", base+"/v1/chat/completions", tenantOne,
		`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+strings.Repeat(secret+" ", 3000)+`"}]}`,
		"X-Session-Id", "one-live", "Prefer", "respond-async")
	liveRun := live.Header.Get("X-Run-Id")
	if live.StatusCode != http.StatusAccepted || liveRun == "" {
		t.Fatalf("key one's live run: %d %s", live.StatusCode, body)
	}
	// What key one sees of it all, to compare after.
	views := []string{"/v1/sessions/one-session/history", "/v1/runs/" + one["{RUN}"], "/v1/responses/" + one["{RESP}"],
		"/apps/echo/users/u/sessions/one-adk", "/api/sessions/one-hermes/messages"}
	before := map[string]string{}
	waitFinished(t, base, tenantOne, "one-hermes")
	for _, v := range views {
		status, body := do(t, "GET", base+v, tenantOne, "")
		if status != 200 {
			t.Fatalf("key one's view %s: %d %s", v, status, body)
		}
		before[v] = body
	}

	never := map[string]string{"{SESSION}": "nobody-session", "{RUN}": "run_nobodyevermadethis1", "{RESP}": "resp_nobodyevermadethis1",
		"{ADK}": "nobody-adk", "{IDEM}": "nobody-idem"}
	kinds := map[string]string{"run": "{RUN}", "session": "{SESSION}", "id": "{SESSION}"}
	var tried, routes int
	statuses := map[int]int{} // of key two's answers about key one's ids
	for _, route := range m.Endpoints() {
		method, pattern, ok := strings.Cut(route, " ")
		if !ok {
			method, pattern = "GET", route
		}
		probes := crossBodies[route]
		wild := wildcardRe.FindAllString(strings.TrimSuffix(pattern, "{$}"), -1)
		if why, free := crossIDFree[route]; free {
			count.add("id-free")
			t.Logf("%s: no principal's id (%s)", route, why)
			continue
		}
		if len(probes) == 0 && len(wild) == 0 {
			t.Errorf("route %s: neither a wildcard nor a cross-principal probe; add it to crossBodies or crossIDFree", route)
			continue
		}
		if len(probes) == 0 {
			probes = []crossProbe{{body: "{}"}}
		}
		// Every route also gets the id headers that name a run: a request
		// that starts a run may name one to replace, a stream one to resume.
		for _, p := range slices.Clone(probes) {
			h, v := "X-Replace-From", "{RUN}"
			if method == "GET" {
				h, v = "Last-Event-ID", "{RUN}:1"
			}
			p.header = append(slices.Clone(p.header), h, v)
			probes = append(probes, p)
		}
		routes++
		// The wildcards, by name; /v1/responses/{id} is a response id, an
		// ADK {session} an ADK session.
		path := pattern
		for _, w := range wild {
			name := strings.Trim(w, "{}")
			kind := kinds[name]
			switch {
			case name == "app":
				kind = "echo"
			case name == "user":
				kind = "u"
			case strings.HasPrefix(pattern, "/v1/responses/"):
				kind = "{RESP}"
			case strings.HasPrefix(pattern, "/apps/") && name == "session":
				kind = "{ADK}"
			case kind == "":
				t.Errorf("route %s: wildcard %s of no known kind", route, w)
				kind = "x"
			}
			path = strings.Replace(path, w, kind, 1)
		}
		// A run wildcard is tried with the finished run and the live one.
		owned := []map[string]string{one}
		if strings.Contains(path, "{RUN}") || strings.Contains(fmt.Sprint(probes), "{RUN}") {
			l := maps.Clone(one)
			l["{RUN}"] = liveRun
			owned = append(owned, l)
		}
		for _, p := range probes {
			for _, ids := range owned {
				count.add(method + " " + pattern)
				tried++
				fs, fb := crossSend(t, base, method, path, p, ids)
				ns, nb := crossSend(t, base, method, path, p, never)
				settle(t, base) // the runs the two started end before the next pair compares them
				if fs != ns || crossMask(fb, ids) != crossMask(nb, never) {
					t.Errorf("%s %s %s %v: key one's ids answer %d, ids no one made answer %d: %s", method, path, p.body, p.header, fs, ns, cmp.Diff(crossMask(fb, ids), crossMask(nb, never)))
				}
				statuses[fs]++
				if strings.Contains(fb, secret) {
					t.Errorf("%s %s: key two received key one's words: %.300s", method, path, fb)
				}
			}
		}
	}
	// The Responses WebSocket mode: a response.create continuing key one's
	// stored response, and one continuing a response no one made.
	ws := wsDial(t, m, tenantTwo)
	var wsAnswers [2]string
	count.add("GET /v1/responses (WebSocket)")
	tried++
	for i, id := range []string{one["{RESP}"], never["{RESP}"]} {
		wsSend(t, ws, create("probe", "model", "echo", "previous_response_id", id))
		msgs := wsTurn(t, ws)
		for _, msg := range msgs {
			wsAnswers[i] += strings.ReplaceAll(msg.raw, id, "<id>")
		}
		if i == 0 {
			statuses[msgs[len(msgs)-1].Status]++
		}
	}
	if strings.Contains(wsAnswers[0], secret) || masked(wsAnswers[0], "") != masked(wsAnswers[1], "") {
		t.Errorf("WebSocket response.create: key one's response answers %.300s\n\tone no one made answers %.300s", wsAnswers[0], wsAnswers[1])
	}
	t.Logf("cross-principal: %d routes with ids, %d requests tried twice (key one's ids, ids no one made); statuses %v", routes, tried, statuses)
	if routes < 25 {
		t.Errorf("only %d routes tried", routes)
	}

	// Key one's data is as it was; its live run still runs.
	for _, v := range views {
		if status, body := do(t, "GET", base+v, tenantOne, ""); status != 200 || body != before[v] {
			t.Errorf("key one's %s changed:\nbefore %.400s\nafter  %d %.400s", v, before[v], status, body)
		}
	}
	run, err := m.Store().Run(t.Context(), liveRun)
	if err != nil || run.Status != bridge.StatusRunning {
		t.Errorf("key one's live run after key two's attempts: %+v, %v; want still running", run, err)
	}
	if status, body := do(t, "POST", base+"/v1/runs/"+liveRun+"/cancel", tenantOne, ""); status != 200 {
		t.Errorf("key one cancels its live run: %d %s", status, body)
	}
}

// crossSend sends probe p of route method path as key two, with ids in
// place of the placeholders, and reads at most a short while of a stream.
func crossSend(t *testing.T, base, method, path string, p crossProbe, ids map[string]string) (int, string) {
	t.Helper()
	fill := func(s string) string {
		for k, v := range ids {
			s = strings.ReplaceAll(s, k, v)
		}
		return s
	}
	url := base + fill(path)
	if p.query != "" {
		url += "?" + fill(p.query)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	var body io.Reader
	if method != "GET" && method != "DELETE" {
		body = strings.NewReader(fill(p.body))
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, body)
	req.Header.Set("Authorization", "Bearer "+tenantTwo)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(p.header); i += 2 {
		req.Header.Set(p.header[i], fill(p.header[i+1]))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16)) // a stream that waits ends at the deadline
	return resp.StatusCode, string(b)
}

// crossMask is masked with each of ids replaced.
func crossMask(body string, ids map[string]string) string {
	for _, id := range ids {
		body = strings.ReplaceAll(body, id, "<id>")
	}
	return masked(body, "")
}

// settle waits (bounded) until key two has no run going.
func settle(t *testing.T, base string) {
	t.Helper()
	for range 500 {
		if _, body := do(t, "GET", base+"/ui/api/runs?status=running", tenantTwo, ""); strings.Contains(body, `"runs":[]`) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("key two's runs never ended")
}

// waitFinished waits (bounded) until the caller's Hermes session's
// messages hold an answer.
func waitFinished(t *testing.T, base, key, session string) {
	t.Helper()
	for range 200 {
		if _, body := do(t, "GET", base+"/v1/sessions/"+session+"/history", key, ""); strings.Contains(body, `"status":"completed"`) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("session %s never finished a run", session)
}
