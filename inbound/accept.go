package inbound

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
)

// PreferAsync reports whether r asks for an acceptance only: a Prefer
// header (RFC 7240) with respond-async.
func PreferAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(p), ";")
			if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

// Accepted is the answer to a run request that asked for an acceptance
// only: the run and its session; the output goes to the session's channel
// (GET /v1/sessions/{session}/events).
type Accepted struct {
	Object      string `json:"object"` // "run.accepted"
	RunID       string `json:"run_id"`
	SessionID   string `json:"session_id"`
	ClientRunID string `json:"client_run_id,omitempty"`
	Status      string `json:"status"`
	Events      string `json:"events"`
}

// acceptedBodyLimit bounds what Accept keeps of the answer of a request
// that started no run.
const acceptedBodyLimit = 1 << 20

// Accept serves a dialect's routes so that a run request with Prefer:
// respond-async (in any dialect: a run, a resume of tool results, a
// regenerate or an edit with X-Replace-From) answers 202 with the run and
// its session as soon as the run is recorded, and streams nothing. The
// run is detached from the request, so it goes on; its output goes to the
// session's channel. The client's local run id is the dialect's own field
// where it has one (A2A message.messageId, Hermes' idempotency key), else
// X-Client-Run-Id. A request that starts no run (an error, a read) is
// answered as without the preference.
func Accept(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !PreferAsync(r) {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		started := make(chan *bridge.Run, 1)
		ctx = bridge.WithAccepted(ctx, &bridge.Accepted{ClientRunID: r.Header.Get(HeaderClientRunID),
			Started: func(run *bridge.Run) {
				select {
				case started <- run:
				default: // a request that starts several runs: the first is the answer
				}
			}})
		rec := &recorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, r.WithContext(ctx))
		}()
		var run *bridge.Run
		select {
		case run = <-started:
			cancel() // the handler's stream ends; the run does not
			<-done
		case <-done:
			select {
			case run = <-started:
			default:
			}
		}
		if run == nil {
			rec.replay(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Preference-Applied", "respond-async")
		w.Header().Set(HeaderRunID, run.ID)
		w.Header().Set(HeaderSessionID, run.SessionID)
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(Accepted{Object: "run.accepted", RunID: run.ID, SessionID: run.SessionID,
			ClientRunID: run.ClientRunID, Status: "accepted", Events: "/v1/sessions/" + run.SessionID + "/events"})
	})
}

// recorder keeps the answer of a handler whose request asked for an
// acceptance, for when it started no run.
type recorder struct {
	mu     sync.Mutex
	header http.Header
	status int
	body   []byte
}

func (c *recorder) Header() http.Header { return c.header }

func (c *recorder) WriteHeader(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == 0 {
		c.status = status
	}
}

func (c *recorder) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if room := acceptedBodyLimit - len(c.body); room > 0 {
		c.body = append(c.body, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *recorder) Flush() {}

func (c *recorder) replay(w http.ResponseWriter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.header {
		w.Header()[k] = v
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}
