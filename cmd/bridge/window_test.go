package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// TestStreamsBehindTheLiveWindow runs a bridge over a real listener whose
// live runs keep 32 events in memory, and one run of thousands of events
// whose upstream pauses halfway. Clients that fell far behind the window
// (the run's own stream, reading nothing until the first half is
// committed; the session's channel, likewise; the run API from the start
// and resumed from an early frame, both opened only then) each get every
// frame exactly once and in order, from the database and then live; the
// history of the running run holds the whole first half; and the run
// never holds more than LiveLag windows (and a block) in memory, however
// far its streams trail.
func TestStreamsBehindTheLiveWindow(t *testing.T) {
	const window, first, rest = 32, 3000, 1500
	words := make([]string, first+rest)
	for i := range words {
		words[i] = fmt.Sprintf("w%d:%s ", i, strings.Repeat("x", 64))
	}
	chunks := (&openaitest.Chunks{ID: "chatcmpl-w", Model: "m"}).Role().Text(words...).Finish("stop").List()
	gate := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i, c := range chunks {
			if i == 1+first { // the role chunk, then the first half
				w.(http.Flusher).Flush()
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)

	cfg := defaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
	cfg.LiveEvents = window
	cfg.Upstreams = []Upstream{{Name: "openai", Dialect: "openai", URL: up.URL + "/v1"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	m, err := NewMain(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Run() }()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = m.Close(cctx)
	})
	base := "http://" + m.Addr()
	open := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return resp
	}

	channel := open("GET", "/v1/sessions/win/events?format=openai", "")
	direct := open("POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
		"Content-Type", "application/json", "X-Session-Id", "win")
	runID := direct.Header.Get("X-Run-Id")
	most := 0
	for deadline := time.Now().Add(time.Minute); ; {
		most = max(most, m.Engine().LiveEvents(runID))
		if r := getRun(t, base, runID); r.LastSeq >= first+2 { // run_started, message_started, the words
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first half of the run was never committed")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The first half is committed, and nobody has read any of it.
	var hist struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	h := open("GET", "/v1/sessions/win/history?format=openai", "")
	if err := json.NewDecoder(h.Body).Decode(&hist); err != nil {
		t.Fatal(err)
	}
	if n := len(hist.Messages); n != 2 || hist.Messages[1].Content != strings.Join(words[:first], "") {
		t.Errorf("the running run's history: %d messages, the answer so far not the first %d words", n, first)
	}
	fromStart := open("GET", "/v1/runs/"+runID+"/events", "")
	const cursor = 10
	resumed := open("GET", "/v1/runs/"+runID+"/events", "", "Last-Event-ID", bridge.EventID(runID, cursor))
	most = max(most, m.Engine().LiveEvents(runID))
	close(gate)

	type read struct {
		name   string
		frames []sseEvent
	}
	reads := make(chan read, 4)
	for name, resp := range map[string]*http.Response{"direct": direct, "channel": channel, "run API": fromStart, "resumed": resumed} {
		go func() {
			var frames []sseEvent
			done := name == "channel" // the channel ends at the run's end frame
			for _, f := range readSSE(t, resp.Body, func(fs []sseEvent) bool {
				return done && strings.HasSuffix(fs[len(fs)-1].id, ".end")
			}) {
				frames = append(frames, f)
			}
			reads <- read{name, frames}
		}()
	}
	got := map[string][]sseEvent{}
	for range 4 {
		select {
		case r := <-reads:
			got[r.name] = r.frames
		case <-ctx.Done():
			t.Fatal("a stream never ended")
		}
		most = max(most, m.Engine().LiveEvents(runID))
	}
	if most == 0 || most > bridge.LiveLag*window+window {
		t.Errorf("the live run held up to %d events in memory; its window is %d, kept up to %d times while followers trail it",
			most, window, bridge.LiveLag)
	}
	want := strings.Join(words, "")
	for _, name := range []string{"direct", "channel", "run API"} {
		text, ids := framesOf(t, runID, got[name])
		if text != want {
			t.Errorf("%s: %d bytes of text, want %d: a gap or a duplicate", name, len(text), len(want))
		}
		if err := inOrder(ids); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The resumed stream is the run API's from the start, after the cursor.
	var after []sseEvent
	for _, f := range got["run API"] {
		if _, seq, _, ok := bridge.ParseFrameID(f.id); ok && seq > cursor || f.id == "" && len(after) > 0 {
			after = append(after, f)
		}
	}
	if r := got["resumed"]; len(r) != len(after) {
		t.Errorf("resumed after %d: %d frames, want %d", cursor, len(r), len(after))
	} else {
		for i := range r {
			if r[i] != after[i] {
				t.Fatalf("resumed after %d: frame %d is %+v, want %+v", cursor, i, r[i], after[i])
			}
		}
	}
}

// framesOf returns the text of a run's Chat Completions frames and their
// event ids, leaving out frames that are not the run's events (the
// channel's start and end).
func framesOf(t *testing.T, run string, frames []sseEvent) (string, []string) {
	t.Helper()
	var (
		text strings.Builder
		ids  []string
	)
	for _, f := range frames {
		if strings.HasSuffix(f.id, ".start") || strings.HasSuffix(f.id, ".end") {
			continue
		}
		text.WriteString(chunkText(t, f.data))
		if f.id != "" {
			if r, _, _, ok := bridge.ParseFrameID(f.id); !ok || r != run {
				t.Fatalf("frame id %q is not one of run %s", f.id, run)
			}
			ids = append(ids, f.id)
		}
	}
	return text.String(), ids
}

// inOrder checks that frame ids strictly increase: each frame once, in
// order (an event's earlier frames .1, .2 ... before its last, the bare id).
func inOrder(ids []string) error {
	last := [2]int64{-1, 0}
	for _, id := range ids {
		_, seq, k, _ := bridge.ParseFrameID(id)
		key := [2]int64{seq, int64(k)}
		if k == 0 {
			key[1] = 1 << 62
		}
		if key[0] < last[0] || key[0] == last[0] && key[1] <= last[1] {
			return fmt.Errorf("frame %s after %d.%d: out of order or twice", id, last[0], last[1])
		}
		last = key
	}
	if len(ids) == 0 {
		return fmt.Errorf("no frame with an id")
	}
	return nil
}
