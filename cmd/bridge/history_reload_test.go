package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// reading is what one history read says of the session's newest run.
type reading struct {
	run     string
	running bool
	cursor  string // the run's resume cursor, while it runs
	partial string // the answer text the history holds
}

// reloadCase is one chatkit format: how its client starts a run, reads the
// history, and what a resume from the history's cursor adds.
type reloadCase struct {
	name    string
	start   func(t *testing.T, ctx context.Context, base string) // the run's request, read to its end
	history func(t *testing.T, ctx context.Context, base string) reading
	// native is the dialect's own resume request, nil when it has none
	// but the run API.
	native func(ctx context.Context, base string, r reading) *http.Request
	// text is the answer text of resumed frames.
	text func(frames []sseData) string
}

// sseData is one SSE frame's event name and data.
type sseData struct {
	event string
	data  []byte
}

// getJSON GETs url and decodes its JSON answer, which must be a 200; a 404
// (a session not made yet) leaves v as it is and returns false.
func getJSON(t *testing.T, ctx context.Context, url string, v any) bool {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 404 {
		return false
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
	return true
}

// post sends a JSON POST and reads the whole answer (a stream to its end).
func post(t *testing.T, ctx context.Context, url, body string, hdr ...string) []byte {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// runEvents is the run API's replay of run after cursor.
func runEvents(ctx context.Context, base, run, cursor string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/runs/"+run+"/events", nil)
	req.Header.Set("Last-Event-ID", cursor)
	return req
}

// reloadFrames sends req and reads the SSE frames with data of its answer,
// which must be a 200, in order.
func reloadFrames(t *testing.T, req *http.Request) []sseData {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("%s %s (Last-Event-ID %s): %d %s", req.Method, req.URL, req.Header.Get("Last-Event-ID"), resp.StatusCode, b)
		return nil
	}
	var out []sseData
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		if e, ok := bytes.CutPrefix(sc.Bytes(), []byte("event: ")); ok {
			event = string(e)
		}
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && string(d) != "[DONE]" {
			out = append(out, sseData{event, bytes.Clone(d)})
		}
		if len(sc.Bytes()) == 0 {
			event = ""
		}
	}
	return out
}

// postJSON is a POST of a JSON body with the SSE Accept header.
func postJSON(ctx context.Context, url, body string, hdr ...string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

var reloadCases = []reloadCase{
	{
		name: "openai",
		start: func(t *testing.T, ctx context.Context, base string) {
			post(t, ctx, base+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
				"X-Session-Id", "rl-openai")
		},
		history: func(t *testing.T, ctx context.Context, base string) reading {
			var h struct {
				Messages []struct {
					RunID   string  `json:"run_id"`
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"messages"`
				Runs []struct {
					ID, Status  string
					LastEventID string `json:"last_event_id"`
				} `json:"runs"`
			}
			getJSON(t, ctx, base+"/v1/sessions/rl-openai/history?format=openai", &h)
			if len(h.Runs) == 0 {
				return reading{}
			}
			r := h.Runs[len(h.Runs)-1]
			rd := reading{run: r.ID, running: r.Status == "running", cursor: r.LastEventID}
			for _, m := range h.Messages {
				if m.RunID == r.ID && m.Role == "assistant" && m.Content != nil {
					rd.partial += *m.Content
				}
			}
			return rd
		},
		text: func(frames []sseData) string {
			var text strings.Builder
			for _, d := range frames {
				s, _ := chatStreamText(append([]byte("data: "), d.data...))
				text.WriteString(s)
			}
			return text.String()
		},
	},
	{
		name: "a2a",
		start: func(t *testing.T, ctx context.Context, base string) {
			post(t, ctx, base+"/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"u1","role":"user","contextId":"rl-a2a","parts":[{"kind":"text","text":"go"}]}}}`)
		},
		history: func(t *testing.T, ctx context.Context, base string) reading {
			var h struct {
				Tasks []a2aTaskJSON `json:"tasks"`
			}
			getJSON(t, ctx, base+"/v1/sessions/rl-a2a/history?format=a2a", &h)
			if len(h.Tasks) == 0 {
				return reading{}
			}
			tk := h.Tasks[len(h.Tasks)-1]
			cur, _ := tk.Metadata["lastEventId"].(string)
			return reading{run: tk.ID, running: tk.Status.State == "working", cursor: cur, partial: tk.text()}
		},
		native: func(ctx context.Context, base string, r reading) *http.Request {
			return postJSON(ctx, base+"/a2a", `{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":"`+r.run+`"}}`,
				"Last-Event-ID", r.cursor)
		},
		text: func(frames []sseData) string {
			var text strings.Builder
			for _, d := range frames {
				var f struct {
					Result struct {
						Kind     string `json:"kind"`
						Artifact struct {
							Parts []struct{ Text string } `json:"parts"`
						} `json:"artifact"`
					} `json:"result"`
				}
				if json.Unmarshal(d.data, &f) == nil && f.Result.Kind == "artifact-update" {
					for _, p := range f.Result.Artifact.Parts {
						text.WriteString(p.Text)
					}
				}
			}
			return text.String()
		},
	},
	{
		name: "adk",
		start: func(t *testing.T, ctx context.Context, base string) {
			post(t, ctx, base+"/run_sse", runBody("app", "u", "rl-adk", "go", true))
		},
		history: func(t *testing.T, ctx context.Context, base string) reading {
			var s adkSession
			getJSON(t, ctx, base+"/apps/app/users/u/sessions/rl-adk", &s)
			var active struct {
				RunID   string `json:"run_id"`
				EventID string `json:"event_id"`
			}
			_ = json.Unmarshal(s.ActiveRun, &active)
			rd := reading{run: active.RunID, running: s.Session != nil && s.Session.Status == "running", cursor: active.EventID}
			if rd.run == "" && len(s.Events) > 0 {
				rd.run = s.Events[len(s.Events)-1].InvocationID
			}
			for _, ev := range s.Events {
				if ev.InvocationID == rd.run && ev.Author != "user" {
					rd.partial += ev.text()
				}
			}
			return rd
		},
		native: func(ctx context.Context, base string, r reading) *http.Request {
			return postJSON(ctx, base+"/run_sse", `{"appName":"app","userId":"u","sessionId":"rl-adk","streaming":true,"lastEventId":"`+r.cursor+`"}`)
		},
		text: func(frames []sseData) string {
			var text strings.Builder
			for _, d := range frames {
				var ev adkEvent
				if json.Unmarshal(d.data, &ev) == nil && ev.Partial { // the deltas; the complete event repeats them
					text.WriteString(ev.text())
				}
			}
			return text.String()
		},
	},
	{
		name: "hermes",
		start: func(t *testing.T, ctx context.Context, base string) {
			post(t, ctx, base+"/api/sessions/rl-hermes/chat/stream", `{"message":"go"}`)
		},
		history: func(t *testing.T, ctx context.Context, base string) reading {
			var h struct {
				Data []struct {
					RunID   string `json:"run_id"`
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"data"`
				Runs []struct {
					ID, Status  string
					LastEventID string `json:"last_event_id"`
				} `json:"runs"`
			}
			getJSON(t, ctx, base+"/api/sessions/rl-hermes/messages?format=chatkit", &h)
			if len(h.Runs) == 0 {
				return reading{}
			}
			// Hermes' own shape lists stored rows only: integer ids.
			var own struct {
				Data []struct {
					ID json.RawMessage `json:"id"`
				} `json:"data"`
			}
			getJSON(t, ctx, base+"/api/sessions/rl-hermes/messages", &own)
			for _, m := range own.Data {
				var n int64
				if json.Unmarshal(m.ID, &n) != nil {
					t.Errorf("Hermes' own history has a message id %s", m.ID)
				}
			}
			r := h.Runs[len(h.Runs)-1]
			rd := reading{run: r.ID, running: r.Status == "running", cursor: r.LastEventID}
			for _, m := range h.Data {
				if m.RunID == r.ID && m.Role == "assistant" {
					rd.partial += m.Content
				}
			}
			return rd
		},
		native: func(ctx context.Context, base string, r reading) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/sessions/rl-hermes/chat/stream", nil)
			req.Header.Set("Last-Event-ID", r.cursor)
			return req
		},
		text: func(frames []sseData) string {
			var text strings.Builder
			for _, d := range frames {
				var f struct {
					Delta string `json:"delta"`
				}
				if json.Unmarshal(d.data, &f) == nil && d.event == "assistant.delta" {
					text.WriteString(f.Delta)
				}
			}
			return text.String()
		},
	},
}

// a2aTaskJSON is the part of an A2A task the tests read.
type a2aTaskJSON struct {
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	History []struct {
		Role  string `json:"role"`
		Parts []struct {
			Kind string          `json:"kind"`
			Text string          `json:"text"`
			Data json.RawMessage `json:"data"`
		} `json:"parts"`
	} `json:"history"`
	Artifacts []struct {
		Parts []struct{ Text string } `json:"parts"`
	} `json:"artifacts"`
	Metadata map[string]any `json:"metadata"`
}

func (tk a2aTaskJSON) text() string {
	var b strings.Builder
	for _, a := range tk.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestHistoryReload is the chatkit reload, in each history format: the
// history of a running run, read at several moments, holds the partial
// answer up to the cursor it gives; resuming from that cursor (by the run
// API, rendered in the run's dialect, and by the dialect's own resume:
// A2A tasks/resubscribe, ADK run_sse with lastEventId, Hermes chat/stream)
// gives the rest: the two together are the whole answer, no word twice.
func TestHistoryReload(t *testing.T) {
	all := words("w", 40)
	whole := strings.Join(all, "")
	for _, c := range reloadCases {
		t.Run(c.name, func(t *testing.T) {
			up := newSlowOpenAI(t, 8*time.Millisecond, func(int) []string { return all })
			base := a2aBridge(t, up.baseURL())
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if c.name == "adk" {
				post(t, ctx, base+"/apps/app/users/u/sessions/rl-adk", `{}`)
			}
			if c.name == "hermes" {
				post(t, ctx, base+"/api/sessions", `{"id":"rl-hermes"}`)
			}
			var wg sync.WaitGroup
			wg.Go(func() { c.start(t, ctx, base) })
			type result struct {
				r    reading
				how  string
				rest string
			}
			results := make(chan result, 64)
			mid := 0
			for i := 0; i < 400; i++ {
				r := c.history(t, ctx, base)
				if r.run != "" && !r.running {
					break
				}
				if r.running && r.partial != "" && r.partial != whole && mid < 12 {
					mid++
					if _, _, ok := bridge.ParseEventID(r.cursor); !ok {
						t.Fatalf("reading %d: cursor %q", i, r.cursor)
					}
					wg.Go(func() {
						results <- result{r, "the run API", c.text(reloadFrames(t, runEvents(ctx, base, r.run, r.cursor)))}
					})
					if c.native != nil {
						wg.Go(func() { results <- result{r, "the dialect's resume", c.text(reloadFrames(t, c.native(ctx, base, r)))} })
					}
				}
				time.Sleep(15 * time.Millisecond)
			}
			wg.Wait()
			close(results)
			if mid == 0 {
				t.Fatal("no history read saw the run mid-answer")
			}
			for res := range results {
				if got := res.r.partial + res.rest; got != whole {
					t.Errorf("history %q (cursor %s) + resumed by %s %q: not the whole answer", res.r.partial, res.r.cursor, res.how, res.rest)
				}
			}
			if r := c.history(t, ctx, base); r.running || r.partial != whole {
				t.Errorf("ended: running %v, answer %q", r.running, r.partial)
			}
		})
	}
}
