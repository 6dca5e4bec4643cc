package anthropictest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	wire "github.com/bridge-dev/bridge/mapping/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/outbound/internal/fakesse"
)

// Reply is one scripted answer.
type Reply struct {
	// Status and Body make an error reply when Status is not 0 or 200.
	Status int
	Body   string
	// Header is added to the response (Retry-After, request-id).
	Header http.Header
	// Events are the SSE events, in order.
	Events []Event
	// Delay is slept before each event.
	Delay time.Duration
	// CutAfter, when > 0, drops the connection after that many events.
	CutAfter int
}

// Server is the fake upstream. Its URL is the base URL the official SDK
// takes (requests go to URL + "/v1/messages").
type Server struct {
	*httptest.Server
	// Reply picks the answer to the n-th Messages request (from 0).
	Reply func(n int, body []byte) Reply
	// Count answers count_tokens requests; nil answers {"input_tokens":42}.
	Count func(body []byte) Reply

	log, counts fakesse.Log
}

// The Messages stream of a reply is built with Events and checked with
// CheckStream, which live beside the codec in mapping/anthropic/anthropictest
// (the codec's own tests use them); these names keep them at hand for the
// tests that run the server.
type (
	Event   = wire.Event
	Events  = wire.Events
	Check   = wire.Check
	Summary = wire.Summary
)

var (
	ParseFrames = wire.ParseFrames
	CheckStream = wire.CheckStream
)

// Request is what the server received.
type Request = fakesse.Request

// New starts a server on 127.0.0.1; the caller closes it (t.Cleanup(s.Close)).
func New(reply func(n int, body []byte) Reply) *Server {
	s := &Server{Reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the Messages requests received so far.
func (s *Server) Requests() []Request { return s.log.Requests() }

// CountRequests returns the count_tokens requests received so far.
func (s *Server) CountRequests() []Request { return s.counts.Requests() }

// Cancelled counts the replies cut short because the request's context was
// done (the bridge went away).
func (s *Server) Cancelled() int { return s.log.Cancelled() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		_, body := s.counts.Add(r)
		rep := Reply{Status: http.StatusOK, Body: `{"input_tokens":42}`}
		if s.Count != nil {
			rep = s.Count(body)
		}
		w.Header().Set("Content-Type", "application/json")
		if rep.Status == 0 {
			rep.Status = http.StatusOK
		}
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Body)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, ErrorBody("not_found_error", "Not found"))
		return
	}
	n, body := s.log.Add(r)
	rep := s.Reply(n, body)
	header := rep.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	header.Set("request-id", fmt.Sprintf("req_test_%d", n))
	frames := make([]string, len(rep.Events))
	for i, ev := range rep.Events {
		frames[i] = "event: " + ev.Name + "\ndata: " + ev.Data + "\n\n"
	}
	s.log.Write(w, r, fakesse.Reply{Status: rep.Status, Body: rep.Body, Header: header, Frames: frames,
		Delay: rep.Delay, CutAfter: rep.CutAfter})
}

// ErrorBody is an Anthropic error object.
func ErrorBody(typ, msg string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s},"request_id":"req_test"}`, typ, fakesse.Quote(msg))
}

// Words splits text into word pieces that concatenate back to it.
func Words(text string) []string { return fakesse.Words(text) }
