package anthropictest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

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

// Event is one named SSE event: "event: Name" and "data: Data".
type Event struct {
	Name string
	Data string
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
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s},"request_id":"req_test"}`, typ, q(msg))
}

var q = fakesse.Quote

// Events builds a Messages stream as the real API sends it: message_start,
// blocks with their deltas, message_delta, message_stop. Block indices are
// counted for the caller.
type Events struct {
	ID, Model string
	out       []Event
	next      int
}

func (e *Events) add(name, data string) *Events {
	e.out = append(e.out, Event{Name: name, Data: data})
	return e
}

// Start adds message_start with the input counts (cache counts when > 0).
func (e *Events) Start(input, cacheRead, cacheCreation int) *Events {
	usage := fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1,"service_tier":"standard"}`,
		input, cacheCreation, cacheRead)
	return e.add("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`,
		e.ID, e.Model, usage))
}

// Ping adds a ping event.
func (e *Events) Ping() *Events { return e.add("ping", `{"type": "ping"}`) }

func (e *Events) blockStart(block string) int {
	i := e.next
	e.next++
	e.add("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block))
	return i
}

func (e *Events) delta(i int, delta string) {
	e.add("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta))
}

func (e *Events) stop(i int) {
	e.add("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

// Text adds a text block with one text_delta per piece.
func (e *Events) Text(pieces ...string) *Events {
	i := e.blockStart(`{"type":"text","text":""}`)
	for _, p := range pieces {
		e.delta(i, `{"type":"text_delta","text":`+q(p)+`}`)
	}
	e.stop(i)
	return e
}

// Thinking adds a thinking block: thinking_delta per piece, then the
// signature_delta.
func (e *Events) Thinking(signature string, pieces ...string) *Events {
	i := e.blockStart(`{"type":"thinking","thinking":"","signature":""}`)
	for _, p := range pieces {
		e.delta(i, `{"type":"thinking_delta","thinking":`+q(p)+`}`)
	}
	if signature != "" {
		e.delta(i, `{"type":"signature_delta","signature":`+q(signature)+`}`)
	}
	e.stop(i)
	return e
}

// Redacted adds a redacted_thinking block.
func (e *Events) Redacted(data string) *Events {
	i := e.blockStart(`{"type":"redacted_thinking","data":` + q(data) + `}`)
	e.stop(i)
	return e
}

// ToolUse adds a tool_use block whose input arrives in the fragments (the
// first input_json_delta is empty, as the real API sends it).
func (e *Events) ToolUse(id, name string, fragments ...string) *Events {
	i := e.blockStart(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":{}}`, id, name))
	e.delta(i, `{"type":"input_json_delta","partial_json":""}`)
	for _, f := range fragments {
		e.delta(i, `{"type":"input_json_delta","partial_json":`+q(f)+`}`)
	}
	e.stop(i)
	return e
}

// Delta adds message_delta with the stop reason and the output count.
func (e *Events) Delta(stopReason string, output int) *Events {
	return e.add("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`,
		stopReason, output))
}

// Stop adds message_stop.
func (e *Events) Stop() *Events { return e.add("message_stop", `{"type":"message_stop"}`) }

// Error adds an in-stream error event.
func (e *Events) Error(typ, msg string) *Events {
	return e.add("error", fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s}}`, typ, q(msg)))
}

// Raw adds an event as given.
func (e *Events) Raw(name, data string) *Events { return e.add(name, data) }

// List returns the events.
func (e *Events) List() []Event { return e.out }

// Words splits text into word pieces that concatenate back to it.
func Words(text string) []string { return fakesse.Words(text) }
