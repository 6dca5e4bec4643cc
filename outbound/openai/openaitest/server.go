// Package openaitest is a fake Chat Completions upstream for tests: an
// httptest server on 127.0.0.1 that answers with scripted, real-wire SSE
// chunks (written by hand here, not by the bridge's own encoder, so the
// codecs are tested against the wire rather than against themselves).
package openaitest

import (
	"fmt"
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
	// Chunks are the data payloads of the SSE events, in order.
	Chunks []string
	// Delay is slept before each chunk.
	Delay time.Duration
	// NoDone leaves out the final "data: [DONE]".
	NoDone bool
	// CutAfter, when > 0, drops the connection after that many chunks.
	CutAfter int
	// StallAfter, when > 0, stops sending after that many chunks and holds
	// the connection open until the client goes away (or 10 s).
	StallAfter int
	// HeaderDelay is slept before the response headers (a stall before the
	// first byte).
	HeaderDelay time.Duration
	// Header is added to the response headers.
	Header http.Header
}

// Server is the fake upstream. Its URL is the base URL an SDK takes
// (ending in /v1).
type Server struct {
	*httptest.Server
	// Reply picks the answer to the n-th request (from 0).
	Reply func(n int, body []byte) Reply

	log fakesse.Log
}

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

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":null}}`, http.StatusNotFound)
		return
	}
	rep := s.Reply(s.log.Add(r))
	frames := make([]string, len(rep.Chunks))
	for i, c := range rep.Chunks {
		frames[i] = "data: " + c + "\n\n"
	}
	after := "data: [DONE]\n\n"
	if rep.NoDone {
		after = ""
	}
	s.log.Write(w, r, fakesse.Reply{Status: rep.Status, Body: rep.Body, Header: rep.Header, Frames: frames, After: after,
		Delay: rep.Delay, HeaderDelay: rep.HeaderDelay, CutAfter: rep.CutAfter, StallAfter: rep.StallAfter})
}

// Chunks builds chat.completion.chunk payloads as OpenAI sends them.
type Chunks struct {
	ID, Model string
	out       []string
}

func (c *Chunks) add(choice string, usage string) *Chunks {
	if usage == "" {
		usage = "null"
	}
	c.out = append(c.out, fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":1760000000,"model":%q,"system_fingerprint":"fp_test","choices":[%s],"usage":%s}`,
		c.ID, c.Model, choice, usage))
	return c
}

var q = fakesse.Quote

// Role adds the first chunk: role assistant, empty content.
func (c *Chunks) Role() *Chunks {
	return c.add(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`, "")
}

// Text adds one content chunk per piece.
func (c *Chunks) Text(pieces ...string) *Chunks {
	for _, p := range pieces {
		c.add(`{"index":0,"delta":{"content":`+q(p)+`},"logprobs":null,"finish_reason":null}`, "")
	}
	return c
}

// Reasoning adds DeepSeek-style reasoning_content chunks.
func (c *Chunks) Reasoning(pieces ...string) *Chunks {
	for _, p := range pieces {
		c.add(`{"index":0,"delta":{"reasoning_content":`+q(p)+`},"logprobs":null,"finish_reason":null}`, "")
	}
	return c
}

// ToolCall adds a tool call at index with its arguments in the given
// fragments: the first chunk has id, type and name with empty arguments.
func (c *Chunks) ToolCall(index int, id, name string, fragments ...string) *Chunks {
	c.add(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]},"logprobs":null,"finish_reason":null}`, index, id, name), "")
	for _, f := range fragments {
		c.add(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"logprobs":null,"finish_reason":null}`, index, q(f)), "")
	}
	return c
}

// Finish adds the chunk with the finish reason.
func (c *Chunks) Finish(reason string) *Chunks {
	return c.add(`{"index":0,"delta":{},"logprobs":null,"finish_reason":`+q(reason)+`}`, "")
}

// Usage adds the include_usage chunk (empty choices).
func (c *Chunks) Usage(prompt, completion int) *Chunks {
	return c.add("", fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`,
		prompt, completion, prompt+completion))
}

// Error adds an in-stream error object.
func (c *Chunks) Error(typ, msg string) *Chunks {
	c.out = append(c.out, fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":null}}`, q(msg), typ))
	return c
}

// List returns the payloads.
func (c *Chunks) List() []string { return c.out }

// ErrorBody is an OpenAI error object.
func ErrorBody(typ, msg, code string) string {
	cv := "null"
	if code != "" {
		cv = q(code)
	}
	return fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":%s}}`, q(msg), typ, cv)
}

// Words splits text into word pieces that concatenate back to it.
func Words(text string) []string { return fakesse.Words(text) }
