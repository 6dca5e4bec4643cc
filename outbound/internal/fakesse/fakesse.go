// Package fakesse is what the fake SSE upstreams of the outbound tests
// (openaitest, anthropictest, responsestest) share: the log of the
// requests they received, and the writing of one scripted reply, an error
// object or a stream of frames, paced and cut as the script says. Each
// fake keeps its own wire: the frames come to Write already in it.
package fakesse

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is what a fake upstream received.
type Request struct {
	Header http.Header
	Body   []byte
}

// Log records the requests a fake upstream received and counts the
// replies its client cut short. Its zero value is ready; it is safe for
// concurrent use.
type Log struct {
	mu        sync.Mutex
	requests  []Request
	cancelled int
}

// Add reads r's body and records the request; n is its number (from 0).
func (l *Log) Add(r *http.Request) (n int, body []byte) {
	body, _ = io.ReadAll(r.Body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, Request{Header: r.Header.Clone(), Body: body})
	return len(l.requests) - 1, body
}

// Requests returns the requests received so far.
func (l *Log) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.requests...)
}

// Cancelled counts the replies cut short because the client went away.
func (l *Log) Cancelled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancelled
}

func (l *Log) sawCancel() {
	l.mu.Lock()
	l.cancelled++
	l.mu.Unlock()
}

// Reply is one scripted answer.
type Reply struct {
	// Status and Body make a JSON error reply when Status is not 0 or 200.
	Status int
	Body   string
	// Header is added to the response headers.
	Header http.Header
	// Frames are written in order, each whole SSE frame ("data: …\n\n")
	// flushed on its own; After is written once they all are ("data:
	// [DONE]\n\n").
	Frames []string
	After  string
	// Delay is slept before each frame; HeaderDelay before the response
	// headers (a stall before the first byte).
	Delay, HeaderDelay time.Duration
	// CutAfter, when > 0, drops the connection after that many frames.
	CutAfter int
	// StallAfter, when > 0, stops sending after that many frames and holds
	// the connection open until the client goes away (or 10 s).
	StallAfter int
}

// Write answers r with rep; a reply its client cut short is counted in l.
func (l *Log) Write(w http.ResponseWriter, r *http.Request, rep Reply) {
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-r.Context().Done():
			l.sawCancel()
			return false
		}
	}
	if rep.HeaderDelay > 0 && !wait(rep.HeaderDelay) {
		return
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for i, f := range rep.Frames {
		if rep.CutAfter > 0 && i == rep.CutAfter {
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
		if rep.StallAfter > 0 && i == rep.StallAfter {
			wait(10 * time.Second)
			return
		}
		if rep.Delay > 0 && !wait(rep.Delay) {
			return
		}
		if _, err := io.WriteString(w, f); err != nil {
			l.sawCancel()
			return
		}
		fl.Flush()
	}
	_, _ = io.WriteString(w, rep.After)
}

// Quote is s as a JSON string.
func Quote(s string) string { b, _ := json.Marshal(s); return string(b) }

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
