package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// fakeUpstream is an OpenAI Chat Completions server on 127.0.0.1 that
// answers every streaming request with a role chunk, the content chunks, a
// finish chunk and [DONE], one flush per chunk, as OpenAI does. The chunk
// count and the pause before each chunk ride in the model name
// ("load/<chunks>/<pace>"), so they reach it unchanged through any target.
type fakeUpstream struct {
	srv   *http.Server
	ln    net.Listener
	conns atomic.Int64 // TCP connections accepted

	mu      sync.Mutex
	scripts map[int][][]byte
}

func startUpstream() (*fakeUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &fakeUpstream{ln: ln, scripts: map[int][][]byte{}}
	u.srv = &http.Server{
		Handler:           http.HandlerFunc(u.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.conns.Add(1)
			}
		},
	}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

// URL is the server's root; the SDK-style base URL is URL()+"/v1".
func (u *fakeUpstream) URL() string { return "http://" + u.ln.Addr().String() }

func (u *fakeUpstream) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if u.srv.Shutdown(ctx) != nil {
		_ = u.srv.Close()
	}
}

// modelName encodes a script for the fake upstream.
func modelName(chunks int, pace time.Duration) string {
	return "load/" + strconv.Itoa(chunks) + "/" + pace.String()
}

func parseModel(m string) (chunks int, pace time.Duration, err error) {
	parts := strings.Split(m, "/")
	if len(parts) != 3 || parts[0] != "load" {
		return 0, 0, fmt.Errorf("model %q is not load/<chunks>/<pace>", m)
	}
	if chunks, err = strconv.Atoi(parts[1]); err != nil || chunks < 0 || chunks > 1_000_000 {
		return 0, 0, fmt.Errorf("model %q: bad chunk count", m)
	}
	if pace, err = time.ParseDuration(parts[2]); err != nil || pace < 0 {
		return 0, 0, fmt.Errorf("model %q: bad pace", m)
	}
	return chunks, pace, nil
}

// piece is the text of content chunk i.
func piece(i int) string { return " tok" + strconv.Itoa(i) }

// expectedText is the whole text a stream of n chunks carries.
func expectedText(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(piece(i))
	}
	return b.String()
}

// script returns the SSE frames of an n-chunk answer, built once per n with
// the hand-written wire chunks of openaitest.
func (u *fakeUpstream) script(n int) [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s, ok := u.scripts[n]; ok {
		return s
	}
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = piece(i)
	}
	c := &openaitest.Chunks{ID: "chatcmpl-load", Model: "load"}
	payloads := c.Role().Text(pieces...).Finish("stop").List()
	s := make([][]byte, 0, len(payloads)+1)
	for _, p := range payloads {
		s = append(s, []byte("data: "+p+"\n\n"))
	}
	s = append(s, []byte("data: [DONE]\n\n"))
	u.scripts[n] = s
	return s
}

func (u *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/conns" { // for a parent process (--split)
		fmt.Fprintln(w, u.conns.Load())
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":null}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil || !req.Stream {
		http.Error(w, `{"error":{"message":"want a streaming request","type":"invalid_request_error","param":null,"code":null}}`, http.StatusBadRequest)
		return
	}
	n, pace, err := parseModel(req.Model)
	if err != nil {
		http.Error(w, `{"error":{"message":"unknown model","type":"invalid_request_error","param":"model","code":"model_not_found"}}`, http.StatusNotFound)
		return
	}
	frames := u.script(n)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	var t *time.Timer
	for i, f := range frames {
		// Pace the content chunks; the role chunk and [DONE] go at once.
		if pace > 0 && i > 0 && i <= n {
			if t == nil {
				t = time.NewTimer(pace)
			} else {
				t.Reset(pace)
			}
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		if _, err := w.Write(f); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
