// Package openaitest is a fake Chat Completions upstream for tests: an
// httptest server on 127.0.0.1 that answers with scripted, real-wire SSE
// chunks (written by hand here, not by the bridge's own encoder, so the
// codecs are tested against the wire rather than against themselves).
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
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

	mu       sync.Mutex
	requests []Request
}

// Request is what the server received.
type Request struct {
	Header http.Header
	Body   []byte
}

// New starts a server; the caller closes it (t.Cleanup(s.Close)).
func New(reply func(n int, body []byte) Reply) *Server {
	s := &Server{Reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the SDK-style base URL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":null}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	rep := s.Reply(n, body)
	if rep.HeaderDelay > 0 {
		select {
		case <-time.After(rep.HeaderDelay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.Header {
		w.Header()[k] = v
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for i, c := range rep.Chunks {
		if rep.CutAfter > 0 && i == rep.CutAfter {
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
		if rep.StallAfter > 0 && i == rep.StallAfter {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		if rep.Delay > 0 {
			select {
			case <-time.After(rep.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", c); err != nil {
			return
		}
		fl.Flush()
	}
	if !rep.NoDone {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
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

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

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
func Words(text string) []string {
	var out []string
	for i, w := range strings.SplitAfter(text, " ") {
		if w != "" || i == 0 {
			out = append(out, w)
		}
	}
	return out
}
