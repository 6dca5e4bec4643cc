package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// Regenerate and edit (X-Replace-From, and a stateless transcript that
// diverges), over a real listener in every dialect: what the history shows
// afterwards, with and without include_superseded, what the upstream is
// sent, what the store holds, and the refusals.

// replaceKey and otherKey are the two principals of these tests.
const (
	replaceKey = "key-replace-a"
	otherKey   = "key-replace-b"
)

// answeringUpstream is an OpenAI upstream that answers its n-th call
// "answer-<n>", slowly (40 words 30ms apart) when the last user message
// says "slow".
func answeringUpstream(t *testing.T) *openaitest.Server {
	t.Helper()
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-" + strconv.Itoa(n), Model: "m"}
		msgs := upstreamMessages(t, body)
		if len(msgs) > 0 && strings.Contains(msgs[len(msgs)-1], "slow") {
			return openaitest.Reply{Chunks: c.Role().Text(words("w", 40)...).Finish("stop").List(), Delay: 30 * time.Millisecond}
		}
		return openaitest.Reply{Chunks: c.Role().Text("answer-"+strconv.Itoa(n)).Finish("stop").Usage(3, 1).List()}
	})
	t.Cleanup(up.Close)
	return up
}

// upstreamMessages renders a Chat Completions request body's messages as
// "role:text".
func upstreamMessages(t *testing.T, body []byte) []string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("upstream body: %v", err)
		return nil
	}
	var out []string
	for _, m := range req.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			var parts []struct{ Text string }
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				s += p.Text
			}
		}
		out = append(out, m.Role+":"+s)
	}
	return out
}

// lastUpstream is the transcript of the upstream's last request.
func lastUpstream(t *testing.T, up *openaitest.Server) []string {
	t.Helper()
	reqs := up.Requests()
	if len(reqs) == 0 {
		t.Fatal("the upstream got no request")
	}
	return upstreamMessages(t, reqs[len(reqs)-1].Body)
}

// history is a session's history in the run API's OpenAI format.
type history struct {
	msgs       []string // "role:content"
	runs       []string // run ids, oldest first
	superseded []string // the runs marked superseded
	raw        string
}

func readHistory(t *testing.T, base, session string, superseded bool) history {
	t.Helper()
	url := base + "/v1/sessions/" + session + "/history?format=openai"
	if superseded {
		url += "&include_superseded=true"
	}
	status, body := do(t, "GET", url, replaceKey, "")
	if status != 200 {
		t.Fatalf("history of %s: %d %s", session, status, body)
	}
	var v struct {
		Messages []struct{ Role, Content string } `json:"messages"`
		Runs     []struct {
			ID         string `json:"id"`
			Superseded bool   `json:"superseded"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("history: %v", err)
	}
	h := history{raw: body}
	for _, m := range v.Messages {
		h.msgs = append(h.msgs, m.Role+":"+m.Content)
	}
	for _, r := range v.Runs {
		h.runs = append(h.runs, r.ID)
		if r.Superseded {
			h.superseded = append(h.superseded, r.ID)
		}
	}
	return h
}

func wantStrings(t *testing.T, what string, want, got []string) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// replaceDialect drives one dialect's turns.
type replaceDialect struct {
	name string
	// stateless dialects resend the transcript: a turn gets the kept
	// transcript ("role:text") and may diverge without the header.
	stateless bool
	// setup makes the dialect's session (where a turn needs one first).
	setup func(t *testing.T, base, session string)
	// turn sends text as a turn of session after the transcript kept (for
	// a stateless client) or after run prev (Responses), with
	// X-Replace-From: replace when set, with key; it returns the HTTP
	// status (the JSON-RPC error code for A2A's refusals), the run id and
	// the bridge session.
	turn func(t *testing.T, base, key, session string, kept []string, prev, text, replace string) (status int, run, bridgeSession string)
	// native checks the dialect's own history: marked with the flag.
	native func(t *testing.T, base, session, bridgeSession, discarded string)
}

func header(kv ...string) []string { return kv }

// chatMessages renders a kept transcript and a new user text as Chat
// Completions (and Anthropic) messages.
func chatMessages(kept []string, text string) string {
	var msgs []map[string]string
	for _, k := range kept {
		role, content, _ := strings.Cut(k, ":")
		msgs = append(msgs, map[string]string{"role": role, "content": content})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": text})
	b, _ := json.Marshal(msgs)
	return string(b)
}

func withReplace(hdr []string, replace string) []string {
	if replace != "" {
		hdr = append(hdr, "X-Replace-From", replace)
	}
	return hdr
}

// responseIDs maps a Responses run id to its response id.
var responseIDs = map[string]string{}

func replaceDialects() []replaceDialect {
	return []replaceDialect{
		{
			name: "openai", stateless: true,
			turn: func(t *testing.T, base, key, session string, kept []string, _, text, replace string) (int, string, string) {
				resp, _ := call(t, "POST", base+"/v1/chat/completions", key, `{"model":"m","messages":`+chatMessages(kept, text)+`}`,
					withReplace(header("X-Session-Id", session), replace)...)
				return resp.StatusCode, resp.Header.Get("X-Run-Id"), resp.Header.Get("X-Session-Id")
			},
		},
		{
			name: "anthropic", stateless: true,
			turn: func(t *testing.T, base, key, session string, kept []string, _, text, replace string) (int, string, string) {
				resp, _ := call(t, "POST", base+"/v1/messages", key, `{"model":"m","max_tokens":64,"messages":`+chatMessages(kept, text)+`}`,
					withReplace(header("X-Session-Id", session), replace)...)
				return resp.StatusCode, resp.Header.Get("X-Run-Id"), resp.Header.Get("X-Session-Id")
			},
		},
		{
			// previous_response_id names the response before the one
			// replaced; X-Replace-From names the replaced response.
			name: "responses",
			turn: func(t *testing.T, base, key, _ string, _ []string, prev, text, replace string) (int, string, string) {
				body := map[string]any{"model": "m", "input": text}
				if prev != "" {
					body["previous_response_id"] = responseIDs[prev]
				}
				if r, ok := responseIDs[replace]; ok {
					replace = r
				}
				b, _ := json.Marshal(body)
				resp, out := call(t, "POST", base+"/v1/responses", key, string(b), withReplace(nil, replace)...)
				run := resp.Header.Get("X-Run-Id")
				var v struct{ ID string }
				if json.Unmarshal([]byte(out), &v) == nil && v.ID != "" && run != "" {
					responseIDs[run] = v.ID
				}
				return resp.StatusCode, run, resp.Header.Get("X-Session-Id")
			},
		},
		{
			// message/send for a plain turn, message/stream for a replace.
			name: "a2a",
			turn: func(t *testing.T, base, key, session string, _ []string, _, text, replace string) (int, string, string) {
				method := "message/send"
				if replace != "" {
					method = "message/stream"
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"role":"user","messageId":%q,"contextId":%q,"parts":[{"kind":"text","text":%q}]}}}`,
					method, bridge.NewID("msg_"), session, text)
				resp, out := call(t, "POST", base+"/a2a", key, body, withReplace(nil, replace)...)
				run := ""
				for _, line := range strings.Split(out, "\n") {
					line = strings.TrimPrefix(line, "data: ")
					var v struct {
						Result struct{ ID, TaskID, Kind string }
						Error  *struct{ Code int }
					}
					if json.Unmarshal([]byte(line), &v) != nil {
						continue
					}
					if v.Error != nil {
						return -v.Error.Code, "", ""
					}
					if run == "" {
						run = v.Result.TaskID
						if v.Result.Kind == "task" {
							run = v.Result.ID
						}
					}
				}
				if method == "message/send" {
					waitRun(t, base, key, run)
				}
				return resp.StatusCode, run, session
			},
			native: func(t *testing.T, base, session, bridgeSession, discarded string) {
				for _, flag := range []bool{false, true} {
					url := base + "/v1/sessions/" + bridgeSession + "/history?format=a2a"
					if flag {
						url += "&include_superseded=true"
					}
					_, body := do(t, "GET", url, replaceKey, "")
					var v struct {
						Tasks []struct {
							ID       string         `json:"id"`
							Metadata map[string]any `json:"metadata"`
						} `json:"tasks"`
					}
					_ = json.Unmarshal([]byte(body), &v)
					marked := slices.ContainsFunc(v.Tasks, func(task struct {
						ID       string         `json:"id"`
						Metadata map[string]any `json:"metadata"`
					}) bool {
						return task.Metadata["superseded"] == true
					})
					if marked != flag || strings.Contains(body, discarded) != flag {
						t.Errorf("a2a history (include_superseded=%v): marked %v, holds %q %v: %s", flag, marked, discarded, !flag, body)
					}
				}
			},
		},
		{
			// /run for a plain turn, /run_sse for a replace.
			name:  "adk",
			setup: func(t *testing.T, base, session string) { adkSessionFor(t, base, session) },
			turn: func(t *testing.T, base, key, session string, _ []string, _, text, replace string) (int, string, string) {
				path, streaming := "/run", false
				if replace != "" {
					path, streaming = "/run_sse", true
				}
				body := fmt.Sprintf(`{"appName":"m","userId":"u","sessionId":%q,"newMessage":{"role":"user","parts":[{"text":%q}]},"streaming":%v}`,
					session, text, streaming)
				resp, _ := call(t, "POST", base+path, key, body, withReplace(nil, replace)...)
				return resp.StatusCode, resp.Header.Get("X-Run-Id"), resp.Header.Get("X-Session-Id")
			},
			native: func(t *testing.T, base, session, bridgeSession, discarded string) {
				for _, flag := range []bool{false, true} {
					url := base + "/apps/m/users/u/sessions/" + session
					if flag {
						url += "?include_superseded=true"
					}
					_, body := do(t, "GET", url, replaceKey, "")
					if strings.Contains(body, `"superseded":true`) != flag || strings.Contains(body, discarded) != flag {
						t.Errorf("adk session (include_superseded=%v) holds the discarded %v: %s", flag, !flag, body)
					}
				}
			},
		},
		{
			// chat for a plain turn, chat/stream for a replace.
			name:  "hermes",
			setup: func(t *testing.T, base, session string) { hermesSessionFor(t, base, session) },
			turn: func(t *testing.T, base, key, session string, _ []string, _, text, replace string) (int, string, string) {
				path := "/chat"
				if replace != "" {
					path = "/chat/stream"
				}
				b, _ := json.Marshal(map[string]string{"message": text})
				resp, out := call(t, "POST", base+"/api/sessions/"+session+path, key, string(b), withReplace(nil, replace)...)
				run := resp.Header.Get("X-Run-Id")
				if run == "" {
					if i := strings.Index(out, `"run_id":"`); i >= 0 {
						run, _, _ = strings.Cut(out[i+len(`"run_id":"`):], `"`)
					}
				}
				return resp.StatusCode, run, session
			},
			native: func(t *testing.T, base, session, bridgeSession, discarded string) {
				for _, flag := range []bool{false, true} {
					url := base + "/api/sessions/" + bridgeSession + "/messages?format=chatkit"
					if flag {
						url += "&include_superseded=true"
					}
					_, body := do(t, "GET", url, replaceKey, "")
					if strings.Contains(body, `"superseded":true`) != flag || strings.Contains(body, discarded) != flag {
						t.Errorf("hermes messages (include_superseded=%v) holds the discarded %v: %s", flag, !flag, body)
					}
				}
			},
		},
	}
}

func adkSessionFor(t *testing.T, base, session string) {
	t.Helper()
	if status, body := do(t, "POST", base+"/apps/m/users/u/sessions/"+session, replaceKey, `{}`); status != 200 {
		t.Fatalf("create ADK session: %d %s", status, body)
	}
}

func hermesSessionFor(t *testing.T, base, session string) {
	t.Helper()
	if status, body := do(t, "POST", base+"/api/sessions", replaceKey, `{"id":"`+session+`"}`); status != 201 {
		t.Fatalf("create Hermes session: %d %s", status, body)
	}
}

// waitRun waits for a run to end.
func waitRun(t *testing.T, base, key, run string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := do(t, "GET", base+"/v1/runs/"+run, key, "")
		var v map[string]any
		_ = json.Unmarshal([]byte(body), &v)
		if status != 200 {
			t.Fatalf("run %s: %d %s", run, status, body)
		}
		if v["status"] != "running" && v["status"] != "queued" {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still running", run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// replaceBridge starts a bridge over an answering upstream with the two
// keys of these tests.
func replaceBridge(t *testing.T) (base string, m *Main, up *openaitest.Server) {
	t.Setenv("BRIDGE_API_KEYS", replaceKey+","+otherKey)
	t.Setenv("BRIDGE_API_KEY", "")
	up = answeringUpstream(t)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL()}}
	m = startMain(t, cfg)
	return "http://" + m.Addr(), m, up
}

// TestReplaceFrom: in each dialect, a regenerate (the same input with
// X-Replace-From naming the last run) and an edit (new input replacing it)
// leave the history without the discarded turns (shown, marked, with
// include_superseded), send the upstream the kept transcript and the new
// input alone, and store no message twice; a stateless client's transcript
// that diverges does the same without the header.
func TestReplaceFrom(t *testing.T) {
	base, m, up := replaceBridge(t)
	for _, d := range replaceDialects() {
		t.Run(d.name, func(t *testing.T) {
			session := "replace-" + d.name
			if d.setup != nil {
				d.setup(t, base, session)
			}
			turn := func(kept []string, prev, text, replace string) (string, string) {
				t.Helper()
				status, run, sess := d.turn(t, base, replaceKey, session, kept, prev, text, replace)
				if status != 200 || run == "" {
					t.Fatalf("turn %q (replacing %q): status %d, run %q", text, replace, status, run)
				}
				return run, sess
			}
			q1, q2 := "first question "+d.name, "second question "+d.name
			r1, bs := turn(nil, "", q1, "")
			h := readHistory(t, base, bs, false)
			if len(h.msgs) != 2 {
				t.Fatalf("history after one turn: %v", h.msgs)
			}
			kept := h.msgs
			r2, _ := turn(kept, r1, q2, "")
			a2 := readHistory(t, base, bs, false).msgs[3]

			// Regenerate the second answer.
			r3, _ := turn(kept, r1, q2, r2)
			wantStrings(t, "upstream request of the regenerate", append(slices.Clone(kept), "user:"+q2), lastUpstream(t, up))
			h = readHistory(t, base, bs, false)
			a3 := h.msgs[len(h.msgs)-1]
			wantStrings(t, "history after the regenerate", append(slices.Clone(kept), "user:"+q2, a3), h.msgs)
			wantStrings(t, "runs after the regenerate", []string{r1, r3}, h.runs)
			if a3 == a2 {
				t.Errorf("the regenerated answer %q is the old one", a3)
			}
			h = readHistory(t, base, bs, true)
			wantStrings(t, "history with include_superseded", append(slices.Clone(kept), "user:"+q2, a2, "user:"+q2, a3), h.msgs)
			wantStrings(t, "runs marked superseded", []string{r2}, h.superseded)
			if d.native != nil {
				_, discarded, _ := strings.Cut(a2, ":")
				d.native(t, base, session, bs, discarded)
			}

			// Edit the second question.
			edited := q2 + " (edited)"
			r4, _ := turn(kept, r1, edited, r3)
			wantStrings(t, "upstream request of the edit", append(slices.Clone(kept), "user:"+edited), lastUpstream(t, up))
			h = readHistory(t, base, bs, false)
			wantStrings(t, "history after the edit", append(slices.Clone(kept), "user:"+edited, h.msgs[len(h.msgs)-1]), h.msgs)
			wantStrings(t, "runs after the edit", []string{r1, r4}, h.runs)
			wantStrings(t, "runs marked superseded", []string{r2, r3}, readHistory(t, base, bs, true).superseded)

			if d.stateless {
				// The same edit again, without the header: the transcript
				// diverges from the stored one at the last question.
				again := q2 + " (edited again)"
				r5, _ := turn(kept, r1, again, "")
				wantStrings(t, "upstream request of a diverging transcript", append(slices.Clone(kept), "user:"+again), lastUpstream(t, up))
				h = readHistory(t, base, bs, false)
				wantStrings(t, "history after a diverging transcript", append(slices.Clone(kept), "user:"+again, h.msgs[len(h.msgs)-1]), h.msgs)
				wantStrings(t, "runs after a diverging transcript", []string{r1, r5}, h.runs)
				// And a regenerate without the header: the transcript
				// stops short of the stored one.
				r6, _ := turn(kept, r1, again, "")
				wantStrings(t, "runs after a short transcript", []string{r1, r6}, readHistory(t, base, bs, false).runs)
			}

			// The store holds each kept message once, and every turn of
			// the discarded runs, marked.
			all, _, err := m.Store().AllMessages(t.Context(), "key-"+inbound.HashKey(replaceKey)[:12], bs, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, msg := range all {
				seen[string(msg.Role)+":"+msg.Text()]++
			}
			for _, k := range kept {
				if seen[k] != 1 {
					t.Errorf("the store holds %q %d times, want once", k, seen[k])
				}
			}
			if seen["user:"+q2] != 2 || seen[a2] != 1 {
				t.Errorf("the store does not keep the discarded turns: %v", seen)
			}
		})
	}
}

// TestReplaceFromRefused: an unknown target, another principal's, and
// another session's are refused as not found, in the dialect, and discard
// nothing.
func TestReplaceFromRefused(t *testing.T) {
	base, _, _ := replaceBridge(t)
	for _, d := range replaceDialects() {
		t.Run(d.name, func(t *testing.T) {
			session, other := "refused-"+d.name, "refused-other-"+d.name
			if d.setup != nil {
				d.setup(t, base, session)
				d.setup(t, base, other)
			}
			_, r1, bs := d.turn(t, base, replaceKey, session, nil, "", "hello "+d.name, "")
			_, r2, _ := d.turn(t, base, replaceKey, other, nil, "", "elsewhere "+d.name, "")
			notFound := http.StatusNotFound
			if d.name == "a2a" {
				notFound = 32001 // TaskNotFoundError, as -code
			}
			for _, tt := range []struct {
				name, key, session, prev, target string
			}{
				{"unknown", replaceKey, session, r1, "run_nope"},
				{"another principal's", otherKey, "refused-b-" + d.name, "", r1},
				{"another session's", replaceKey, session, r1, r2}, // (Responses: previous_response_id in the session)
			} {
				if tt.key == otherKey && d.setup != nil {
					continue // the session is the other principal's own: checked below
				}
				status, _, _ := d.turn(t, base, tt.key, tt.session, nil, tt.prev, "again", tt.target)
				if status != notFound {
					t.Errorf("%s: status %d, want %d", tt.name, status, notFound)
				}
			}
			if d.setup != nil { // another principal's target in the principal's own session
				if d.name == "adk" {
					if status, body := do(t, "POST", base+"/apps/m/users/u/sessions/b-"+session, otherKey, `{}`); status != 200 {
						t.Fatalf("%d %s", status, body)
					}
				} else if status, body := do(t, "POST", base+"/api/sessions", otherKey, `{"id":"b-`+session+`"}`); status != 201 {
					t.Fatalf("%d %s", status, body)
				}
				if status, _, _ := d.turn(t, base, otherKey, "b-"+session, nil, "", "again", r1); status != notFound {
					t.Errorf("another principal's: status %d, want %d", status, notFound)
				}
			}
			h := readHistory(t, base, bs, true)
			if len(h.superseded) != 0 || len(h.runs) != 1 {
				t.Errorf("a refused replace discarded something: %s", h.raw)
			}
		})
	}
}

// TestReplaceFromRunningTarget: a target still running is cancelled, then
// discarded; the Hermes run API (/v1/runs) takes the header too.
func TestReplaceFromRunningTarget(t *testing.T) {
	base, _, up := replaceBridge(t)
	session := "replace-running"
	hermesSessionFor(t, base, session)
	status, body := do(t, "POST", base+"/v1/runs", replaceKey, `{"session_id":"`+session+`","input":"a slow question"}`)
	var acc struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(body), &acc); status != 202 || err != nil || acc.RunID == "" {
		t.Fatalf("POST /v1/runs: %d %s", status, body)
	}
	// Wait for the answer to begin.
	deadline := time.Now().Add(10 * time.Second)
	for len(readHistory(t, base, session, false).runs) == 0 || runLastSeq(t, base, acc.RunID) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the slow run never began its answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, body = do(t, "POST", base+"/v1/runs", replaceKey, `{"session_id":"`+session+`","input":"a quick one"}`,
		"X-Replace-From", acc.RunID)
	var next struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(body), &next); status != 202 || err != nil {
		t.Fatalf("the replacing run: %d %s", status, body)
	}
	waitRun(t, base, replaceKey, next.RunID)
	old := waitRun(t, base, replaceKey, acc.RunID)
	if old["status"] != "cancelled" {
		t.Errorf("the replaced running run ended %v, want cancelled", old["status"])
	}
	wantStrings(t, "upstream request", []string{"user:a quick one"}, lastUpstream(t, up))
	h := readHistory(t, base, session, false)
	wantStrings(t, "runs", []string{next.RunID}, h.runs)
	wantStrings(t, "runs marked superseded", []string{acc.RunID}, readHistory(t, base, session, true).superseded)
}

func runLastSeq(t *testing.T, base, run string) int64 {
	_, body := do(t, "GET", base+"/v1/runs/"+run, replaceKey, "")
	var v struct {
		LastSeq int64 `json:"last_seq"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.LastSeq
}

// TestReplaceFromStatefulUpstream: over a second bridge serving A2A, ADK or
// Hermes, a regenerate reaches the model behind it without the discarded
// turn. The second bridge discards it itself (the front sends its own
// X-Replace-From, having learnt from X-Bridge-Discards that it can), so
// its model gets the kept turns as they were; an agent that has not said
// so (the same bridge behind a proxy that hides the header) gets a fresh
// context seeded with the kept turns instead.
func TestReplaceFromStatefulUpstream(t *testing.T) {
	for _, dialect := range []string{"a2a", "hermes", "adk"} {
		for _, hide := range []bool{false, true} {
			name := dialect + "/discards"
			if hide {
				name = dialect + "/fresh-context"
			}
			t.Run(name, func(t *testing.T) { statefulReplace(t, dialect, hide) })
		}
	}
}

func statefulReplace(t *testing.T, dialect string, hide bool) {
	model := answeringUpstream(t)
	back := defaultConfig()
	back.Upstreams = []Upstream{{Dialect: "openai", URL: model.BaseURL()}}
	b := "http://" + startMain(t, back).Addr()
	if hide {
		target, _ := url.Parse(b)
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.FlushInterval = -1
		proxy.ModifyResponse = func(r *http.Response) error { r.Header.Del(outbound.HeaderDiscards); return nil }
		srv := httptest.NewServer(proxy)
		t.Cleanup(srv.Close)
		b = srv.URL
	}
	front := defaultConfig()
	front.Upstreams = []Upstream{{Name: dialect, Dialect: dialect, URL: b}}
	f := "http://" + startMain(t, front).Addr()
	session := "stateful-" + dialect
	turn := func(kept []string, text, replace string) string {
		t.Helper()
		resp, body := call(t, "POST", f+"/v1/chat/completions", "", `{"model":"m","messages":`+chatMessages(kept, text)+`}`,
			withReplace(header("X-Session-Id", session), replace)...)
		if resp.StatusCode != 200 {
			t.Fatalf("turn %q: %d %s", text, resp.StatusCode, body)
		}
		return resp.Header.Get("X-Run-Id")
	}
	history := func() []string {
		_, body := do(t, "GET", f+"/v1/sessions/"+session+"/history?format=openai", "", "")
		var v struct {
			Messages []struct{ Role, Content string }
		}
		_ = json.Unmarshal([]byte(body), &v)
		var out []string
		for _, m := range v.Messages {
			out = append(out, m.Role+":"+m.Content)
		}
		return out
	}
	turn(nil, "one", "")
	kept := history()
	r2 := turn(kept, "two", "")
	_, a2, _ := strings.Cut(history()[3], ":")
	calls := len(model.Requests())
	turn(kept, "two", r2)
	if len(model.Requests()) != calls+1 {
		t.Fatalf("the regenerate made %d model calls", len(model.Requests())-calls)
	}
	if hide && dialect != "hermes" {
		// A fresh context: the kept turns as text in its first message.
		if sent := lastUpstream(t, model); len(sent) != 1 {
			t.Errorf("the model's request %q: want one message, in a fresh context", sent)
		}
	} else {
		// The second bridge discarded the turn in its own session (or,
		// Hermes, got the kept turns as a fresh session's
		// conversation_history).
		wantStrings(t, "the model's request", []string{"user:one", kept[1], "user:two"}, lastUpstream(t, model))
	}
	sent := strings.Join(lastUpstream(t, model), "\n")
	_, a1, _ := strings.Cut(kept[1], ":")
	if strings.Contains(sent, a2) || !strings.Contains(sent, a1) || !strings.Contains(sent, "two") {
		t.Errorf("the model behind the %s bridge got %q: want the kept turns (%q) and not the discarded answer %q", dialect, sent, a1, a2)
	}
	h := history()
	if len(h) != 4 || h[2] != "user:two" || strings.Contains(strings.Join(h, "\n"), a2) {
		t.Errorf("history after the regenerate over %s: %v", dialect, h)
	}
	// The next turn goes on in the context the regenerate left.
	kept = h
	turn(kept, "three", "")
	sent = strings.Join(lastUpstream(t, model), "\n")
	if strings.Contains(sent, a2) || !strings.Contains(sent, "three") {
		t.Errorf("the turn after the regenerate sent %q", sent)
	}
}
