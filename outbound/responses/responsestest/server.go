package responsestest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	wire "github.com/bridge-dev/bridge/mapping/responses/responsestest"
	"github.com/bridge-dev/bridge/outbound/internal/fakesse"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// Reply is one scripted answer.
type Reply struct {
	// Status and Body make an error reply when Status is not 0 or 200.
	Status int
	Body   string
	// Events are the data payloads of the SSE events, in order; each is a
	// JSON object whose "type" also goes in the event: line.
	Events []string
	// NoEventLines leaves the event: lines out (data only).
	NoEventLines bool
	// Done adds a data: [DONE] after the events.
	Done bool
	// Delay is slept before each event.
	Delay time.Duration
	// CutAfter, when > 0, drops the connection after that many events.
	CutAfter int
	// StallAfter, when > 0, stops sending after that many events and holds
	// the connection open until the client goes away (or 10 s).
	StallAfter int
	// HeaderDelay is slept before the response headers.
	HeaderDelay time.Duration
	// Header is added to the response headers.
	Header http.Header
}

// Server is the fake upstream. Its BaseURL is what an SDK takes (ending in
// /v1).
type Server struct {
	*httptest.Server
	// Reply picks the answer to the n-th request (from 0), over HTTP or
	// WebSocket mode alike.
	Reply func(n int, body []byte) Reply
	// RefuseWebSocket answers an upgrade with 404, as a server without
	// WebSocket mode does. Set it before the first request.
	RefuseWebSocket bool
	// Compact answers POST /v1/responses/compact (logged as a request);
	// nil: 404, as a server without compaction.
	Compact func(body []byte) (status int, answer string)

	log      fakesse.Log
	upgrades atomic.Int64
}

// A reply's typed events are built with Events and checked with
// CheckStream and CheckResponse, which live beside the codec in
// mapping/responses/responsestest (the codec's own tests use them); these
// names keep them at hand for the tests that run the server.
type (
	Events  = wire.Events
	Check   = wire.Check
	Summary = wire.Summary
)

var (
	ParseFrames   = wire.ParseFrames
	CheckStream   = wire.CheckStream
	CheckResponse = wire.CheckResponse
)

// Request is what the server received.
type Request = fakesse.Request

// New starts a server; the caller closes it (t.Cleanup(s.Close)).
func New(reply func(n int, body []byte) Reply) *Server {
	s := &Server{Reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the SDK-style base URL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request { return s.log.Requests() }

// Cancelled counts the requests whose context was done (the client went
// away) before their reply was complete.
func (s *Server) Cancelled() int { return s.log.Cancelled() }

// Upgrades counts the WebSocket connections the server accepted.
func (s *Server) Upgrades() int { return int(s.upgrades.Load()) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/responses" && !s.RefuseWebSocket &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.serveWebSocket(w, r)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/responses/compact" && s.Compact != nil {
		_, body := s.log.Add(r)
		status, answer := s.Compact(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, ErrorBody("invalid_request_error", "not found", ""))
		return
	}
	rep := s.Reply(s.log.Add(r))
	frames := make([]string, len(rep.Events))
	for i, ev := range rep.Events {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(ev), &t)
		frames[i] = "data: " + ev + "\n\n"
		if !rep.NoEventLines && t.Type != "" {
			frames[i] = "event: " + t.Type + "\n" + frames[i]
		}
	}
	var after string
	if rep.Done {
		after = "data: [DONE]\n\n"
	}
	s.log.Write(w, r, fakesse.Reply{Status: rep.Status, Body: rep.Body, Header: rep.Header, Frames: frames, After: after,
		Delay: rep.Delay, HeaderDelay: rep.HeaderDelay, CutAfter: rep.CutAfter, StallAfter: rep.StallAfter})
}

// serveWebSocket is WebSocket mode: each response.create message is a
// request (logged with the upgrade's headers), answered with its reply's
// events, one message each, or an error message ({"type":"error",
// "status":N,"error":{...}}) for an error reply; the connection carries
// any number of them. CutAfter closes the connection after that many
// events (after the whole reply when it has no more); Delay paces them.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	s.upgrades.Add(1)
	c.SetReadLimit(64 << 20)
	ctx := r.Context()
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		req := r.Clone(ctx)
		req.Body = io.NopCloser(bytes.NewReader(msg))
		rep := s.Reply(s.log.Add(req))
		if rep.Status != 0 && rep.Status != http.StatusOK {
			var env struct {
				Error json.RawMessage `json:"error"`
			}
			_ = json.Unmarshal([]byte(rep.Body), &env)
			if len(env.Error) == 0 {
				env.Error = json.RawMessage(`{"type":"server_error","message":"error"}`)
			}
			if c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"type":"error","status":%d,"error":%s}`, rep.Status, env.Error)) != nil {
				return
			}
			continue
		}
		for i, ev := range rep.Events {
			if rep.CutAfter > 0 && i == rep.CutAfter {
				return
			}
			if rep.Delay > 0 {
				time.Sleep(rep.Delay)
			}
			if c.Write(ctx, websocket.MessageText, []byte(ev)) != nil {
				return
			}
		}
		if rep.CutAfter > 0 && rep.CutAfter >= len(rep.Events) {
			return // closed once the response is whole: a connection a client would keep
		}
	}
}

// ErrorBody is an OpenAI error object (the Responses API's is Chat
// Completions').
func ErrorBody(typ, msg, code string) string { return openaitest.ErrorBody(typ, msg, code) }
