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

	"github.com/bridge-dev/bridge/outbound/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// fault is what the fake upstream does to a stream half-way through it.
type fault string

const (
	faultNone  fault = "ok"  // the whole answer, then [DONE]
	faultCut   fault = "cut" // the TCP connection is closed after half the chunks
	faultError fault = "err" // an in-stream error object after half the chunks
)

// script is one stream: what the client asks for and what the upstream
// does. It rides in the model name ("soak/<id>/<chunks>/<pace>/<fault>"),
// so it reaches the upstream unchanged and is stored on the run, where the
// database check reads it back.
type script struct {
	id     int64
	chunks int
	pace   time.Duration
	fault  fault
}

func (s script) model() string {
	return fmt.Sprintf("soak/%d/%d/%s/%s", s.id, s.chunks, s.pace, s.fault)
}

// messageText is the text of a message's content: a string, or the first
// text block (part) of an array.
func messageText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &parts)
	for _, p := range parts {
		if p.Text != "" {
			return p.Text
		}
	}
	return ""
}

func parseScript(model string) (script, error) {
	p := strings.Split(model, "/")
	if len(p) != 5 || p[0] != "soak" {
		return script{}, fmt.Errorf("model %q is not soak/<id>/<chunks>/<pace>/<fault>", model)
	}
	var (
		s   script
		err error
	)
	if s.id, err = strconv.ParseInt(p[1], 10, 64); err != nil {
		return script{}, fmt.Errorf("model %q: bad id", model)
	}
	if s.chunks, err = strconv.Atoi(p[2]); err != nil || s.chunks < 2 || s.chunks > 100_000 {
		return script{}, fmt.Errorf("model %q: bad chunk count", model)
	}
	if s.pace, err = time.ParseDuration(p[3]); err != nil || s.pace < 0 || s.pace > time.Minute {
		return script{}, fmt.Errorf("model %q: bad pace", model)
	}
	switch s.fault = fault(p[4]); s.fault {
	case faultNone, faultCut, faultError:
	default:
		return script{}, fmt.Errorf("model %q: bad fault", model)
	}
	return s, nil
}

// sent is how many content chunks the upstream sends: all of them, or
// half before a fault.
func (s script) sent() int {
	if s.fault == faultNone {
		return s.chunks
	}
	return s.chunks / 2
}

// piece is the text of content chunk i of stream id.
func piece(id int64, i int) string { return " s" + strconv.FormatInt(id, 10) + "t" + strconv.Itoa(i) }

// text is the text of the first n content chunks.
func (s script) text(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(piece(s.id, i))
	}
	return b.String()
}

// want is the text a client and the store end up with when the stream
// runs its course: all of it, or what came before the fault.
func (s script) want() string { return s.text(s.sent()) }

// upstream outcomes, as the fake upstream saw them.
const (
	upDone    = "done"    // sent everything and [DONE]
	upFault   = "fault"   // failed the stream as its script says
	upAborted = "aborted" // the bridge went away before the end
)

// fakeUpstream is an OpenAI Chat Completions and Anthropic Messages
// server on 127.0.0.1 that streams each request's script: a role chunk,
// paced content chunks, a finish chunk and [DONE] (the wire chunks of
// openaitest), or the Messages events of anthropictest, or half of them
// and then its fault.
type fakeUpstream struct {
	srv *http.Server
	ln  net.Listener

	requests atomic.Int64
	bad      atomic.Int64 // requests that were not a soak script
	a2a      http.Handler // the A2A agent's routes (a2aupstream.go)

	mu       sync.Mutex
	outcomes map[int64][]string // by script id, one per request
}

func startUpstream() (*fakeUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &fakeUpstream{ln: ln, outcomes: map[int64][]string{}}
	u.a2a = u.a2aHandler()
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

// URL is the server's root, the base URL the Anthropic SDK takes.
func (u *fakeUpstream) URL() string { return "http://" + u.ln.Addr().String() }

// BaseURL is the base URL the OpenAI SDK takes.
func (u *fakeUpstream) BaseURL() string { return "http://" + u.ln.Addr().String() + "/v1" }

// closeIdle closes the idle keep-alive connections (the bridge's pool), so
// that a goroutine count after the load does not count them.
func (u *fakeUpstream) closeIdle() {
	u.srv.SetKeepAlivesEnabled(false)
	u.srv.SetKeepAlivesEnabled(true)
}

func (u *fakeUpstream) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if u.srv.Shutdown(ctx) != nil {
		_ = u.srv.Close()
	}
}

func (u *fakeUpstream) record(id int64, outcome string) {
	u.mu.Lock()
	u.outcomes[id] = append(u.outcomes[id], outcome)
	u.mu.Unlock()
}

// outcomesOf returns a copy of what the upstream did, by script id.
func (u *fakeUpstream) outcomesOf() map[int64][]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[int64][]string, len(u.outcomes))
	for id, o := range u.outcomes {
		out[id] = append([]string(nil), o...)
	}
	return out
}

func (u *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == a2aPath || strings.HasPrefix(r.URL.Path, "/.well-known/") {
		u.a2a.ServeHTTP(w, r) // the agent counts its own requests
		return
	}
	u.requests.Add(1)
	anthropic := r.URL.Path == "/v1/messages"
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" && !anthropic {
		u.bad.Add(1)
		http.Error(w, openaitest.ErrorBody("invalid_request_error", "not found", ""), http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || !req.Stream {
		u.bad.Add(1)
		http.Error(w, openaitest.ErrorBody("invalid_request_error", "want a streaming request", ""), http.StatusBadRequest)
		return
	}
	s, err := parseScript(req.Model)
	if err != nil && len(req.Messages) > 0 {
		// A2A clients name no model: their script is the last message's text.
		if s2, err2 := parseScript(messageText(req.Messages[len(req.Messages)-1].Content)); err2 == nil {
			s, err = s2, nil
		}
	}
	if err != nil {
		u.bad.Add(1)
		http.Error(w, openaitest.ErrorBody("invalid_request_error", err.Error(), "model_not_found"), http.StatusNotFound)
		return
	}
	pieces := make([]string, s.sent())
	for i := range pieces {
		pieces[i] = piece(s.id, i)
	}
	var frames []string // whole SSE frames
	first := 1          // the first content frame: those from it on are paced
	if anthropic {
		frames, first = anthropicFrames(s, req.Model, pieces), 2
	} else {
		c := &openaitest.Chunks{ID: "chatcmpl-soak-" + strconv.FormatInt(s.id, 10), Model: req.Model}
		c.Role().Text(pieces...)
		switch s.fault {
		case faultNone:
			c.Finish("stop")
		case faultError:
			c.Error("server_error", "soak: injected mid-stream failure")
		}
		for _, f := range c.List() {
			frames = append(frames, "data: "+f+"\n\n")
		}
		if s.fault == faultNone {
			frames = append(frames, "data: [DONE]\n\n")
		}
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		u.record(s.id, upAborted)
		return
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for i, f := range frames {
		// Pace the content chunks; what comes before them goes at once.
		if s.pace > 0 && i >= first && i < first+len(pieces) {
			t.Reset(s.pace)
			select {
			case <-t.C:
			case <-r.Context().Done():
				u.record(s.id, upAborted)
				return
			}
		}
		if _, err := io.WriteString(w, f); err != nil {
			u.record(s.id, upAborted)
			return
		}
		if rc.Flush() != nil {
			u.record(s.id, upAborted)
			return
		}
	}
	switch s.fault {
	case faultCut:
		// Everything so far is flushed; close the connection under it.
		conn, _, err := rc.Hijack()
		if err != nil {
			u.record(s.id, upAborted)
			return
		}
		_ = conn.Close()
		u.record(s.id, upFault)
	case faultError:
		u.record(s.id, upFault) // the error is the end
	default:
		u.record(s.id, upDone)
	}
}

// anthropicFrames is s as Anthropic Messages frames: message_start, a
// text block whose deltas are pieces, then the end its fault says: the
// block stopped, message_delta and message_stop; an error event; or
// nothing (the connection is cut after them).
func anthropicFrames(s script, model string, pieces []string) []string {
	e := &anthropictest.Events{ID: "msg_soak_" + strconv.FormatInt(s.id, 10), Model: model}
	e.Start(3, 0, 0)
	switch s.fault {
	case faultNone:
		e.Text(pieces...).Delta("end_turn", len(pieces)).Stop()
	default:
		e.Text(pieces...)
	}
	evs := e.List()
	if s.fault != faultNone {
		evs = evs[:len(evs)-1] // the block never stops: the stream fails inside it
	}
	if s.fault == faultError {
		evs = append(evs, (&anthropictest.Events{}).Error("api_error", "soak: injected mid-stream failure").List()...)
	}
	frames := make([]string, len(evs))
	for i, ev := range evs {
		frames[i] = "event: " + ev.Name + "\ndata: " + ev.Data + "\n\n"
	}
	return frames
}
