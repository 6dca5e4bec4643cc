package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/internal/scrub"
)

// RecordHeader is the request header with which a client opts its run in to
// upstream recording ("upstream").
const RecordHeader = "X-Bridge-Record"

// Recorder keeps what upstreams sent, call by call, for the runs that opt
// in (RecordHeader) or for every run (All): the request the bridge sent
// and the response it got, headers and bodies, each body cut at Max bytes,
// with credentials redacted. A call in progress is held in memory; once it
// has ended it goes to Store, where every replica's inspector finds it,
// after a restart too. Without a Store (or when storing fails) the calls
// of the last Runs runs stay in memory. It is safe for concurrent use.
type Recorder struct {
	// All records every run's upstream calls.
	All bool
	// Max is the bytes kept of each body (0: 256 KiB).
	Max int
	// Runs is how many runs' calls are kept in memory (0: 500).
	Runs int
	// Keys are the upstream keys redacted wherever they appear, besides
	// whatever is shaped like a credential (scrub.Keys.Scrub; nil: only
	// those).
	Keys *scrub.Keys
	// Store keeps the calls that have ended (nil: memory only). Storing a
	// call costs the upstream call's reader one write, at its end.
	Store bridge.RecordingStore
	// Log reports a call that could not be stored (nil: discarded).
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// RunID names the run of an upstream call's context (nil:
	// bridge.RunIDFromContext, which the engine sets).
	RunID func(context.Context) string

	mu    sync.Mutex
	calls map[string][]*Call // by run: in progress, or not stored
	order []string
}

// Call is one upstream HTTP call as recorded. Offsets are in ms from
// Started.
type Call struct {
	Started         time.Time         `json:"started"`
	Method          string            `json:"method"`
	URL             string            `json:"url"`
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
	RequestBody     string            `json:"request_body,omitempty"`
	Status          int               `json:"status,omitempty"`
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	Body            string            `json:"body"`
	// Truncated says a body was longer than the recorder keeps.
	Truncated bool `json:"truncated,omitempty"`
	// HeadersMS is when the response's headers came, FirstByteMS its
	// body's first byte, EndMS its end (nil: not yet).
	HeadersMS   *float64 `json:"headers_ms,omitempty"`
	FirstByteMS *float64 `json:"first_byte_ms,omitempty"`
	EndMS       *float64 `json:"end_ms,omitempty"`
	Error       string   `json:"error,omitempty"`

	run  string
	body bytes.Buffer
}

type recordKey struct{}

// Middleware marks the requests that carry RecordHeader: "upstream": the
// runs they start record their upstream calls. The mark rides the request
// context, which the engine hands (without its cancellation) to the
// upstream call.
func (rec *Recorder) Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get(RecordHeader), "upstream") {
			r = r.WithContext(context.WithValue(r.Context(), recordKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

func (rec *Recorder) runID(ctx context.Context) string {
	if rec.RunID != nil {
		return rec.RunID(ctx)
	}
	return bridge.RunIDFromContext(ctx)
}

func (rec *Recorder) recording(ctx context.Context) bool {
	if rec == nil || rec.runID(ctx) == "" {
		return false
	}
	on, _ := ctx.Value(recordKey{}).(bool)
	return on || rec.All
}

// Transport wraps an upstream client's transport: the calls of a run that
// records are recorded.
func (rec *Recorder) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if !rec.recording(req.Context()) {
			return next.RoundTrip(req)
		}
		return rec.roundTrip(next, req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (rec *Recorder) now() time.Time {
	if rec.Now != nil {
		return rec.Now()
	}
	return time.Now()
}

func (rec *Recorder) max() int {
	if rec.Max > 0 {
		return rec.Max
	}
	return 256 << 10
}

func (rec *Recorder) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	run := rec.runID(req.Context())
	c := &Call{Started: rec.now(), Method: req.Method, URL: rec.Keys.Scrub(redactURL(req.URL)), RequestHeaders: rec.headers(req.Header), run: run}
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			c.RequestBody, _ = rec.readCapped(b)
			b.Close()
		}
	}
	rec.add(run, c)
	resp, err := next.RoundTrip(req)
	if err != nil {
		rec.mu.Lock()
		c.Error = "the call failed before a response"
		c.EndMS = rec.since(c.Started)
		rec.mu.Unlock()
		rec.store(c)
		return nil, err
	}
	rec.mu.Lock()
	c.Status = resp.StatusCode
	c.ResponseHeaders = rec.headers(resp.Header)
	c.HeadersMS = rec.since(c.Started)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// A WebSocket upgrade: the body is the connection, which must stay
		// writable; the call is its handshake (the messages are not
		// recorded).
		c.EndMS = c.HeadersMS
		rec.mu.Unlock()
		rec.store(c)
		return resp, nil
	}
	resp.Body = &tee{rec: rec, call: c, rc: resp.Body}
	rec.mu.Unlock()
	return resp, nil
}

func (rec *Recorder) readCapped(r io.Reader) (string, bool) {
	b, _ := io.ReadAll(io.LimitReader(r, int64(rec.max())+1))
	cut := len(b) > rec.max()
	if cut {
		b = b[:rec.max()]
	}
	return rec.Keys.Scrub(string(b)), cut
}

func (rec *Recorder) since(t time.Time) *float64 {
	v := float64(rec.now().Sub(t).Microseconds()) / 1000
	return &v
}

// add records c as a call of run, forgetting the oldest run beyond Runs.
func (rec *Recorder) add(run string, c *Call) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.calls == nil {
		rec.calls = map[string][]*Call{}
	}
	if _, ok := rec.calls[run]; !ok {
		rec.order = append(rec.order, run)
		keep := rec.Runs
		if keep <= 0 {
			keep = 500
		}
		for len(rec.order) > keep {
			delete(rec.calls, rec.order[0])
			rec.order = rec.order[1:]
		}
	}
	rec.calls[run] = append(rec.calls[run], c)
}

// Calls returns run's recorded calls, oldest first: those stored, then
// those still in this process's memory (in progress, or not stored). None
// when the run was not recorded, or is forgotten.
func (rec *Recorder) Calls(ctx context.Context, run string) ([]Call, error) {
	if rec == nil {
		return nil, nil
	}
	var out []Call
	if rec.Store != nil {
		recs, err := rec.Store.Recordings(ctx, run)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			var c Call
			if json.Unmarshal(r.Data, &c) == nil {
				out = append(out, c)
			}
		}
	}
	rec.mu.Lock()
	for _, c := range rec.calls[run] {
		out = append(out, rec.copyOf(c))
	}
	rec.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Call) int { return a.Started.Compare(b.Started) })
	return out, nil
}

// copyOf copies c, its body redacted. The caller holds rec.mu.
func (rec *Recorder) copyOf(c *Call) Call {
	cp := Call{Started: c.Started, Method: c.Method, URL: c.URL, RequestHeaders: c.RequestHeaders, RequestBody: c.RequestBody,
		Status: c.Status, ResponseHeaders: c.ResponseHeaders, Truncated: c.Truncated, HeadersMS: c.HeadersMS,
		FirstByteMS: c.FirstByteMS, EndMS: c.EndMS, Error: c.Error}
	cp.Body = rec.Keys.Scrub(c.body.String())
	return cp
}

// store writes a call that has ended to Store and forgets it here; one that
// cannot be stored stays in memory.
func (rec *Recorder) store(c *Call) {
	if rec.Store == nil {
		return
	}
	rec.mu.Lock()
	cp := rec.copyOf(c)
	rec.mu.Unlock()
	data, err := encodeCapped(&cp)
	if err == nil {
		// Not the run's context: a stopped run's calls are kept too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = rec.Store.AddRecording(ctx, &bridge.Recording{RunID: c.run, Created: c.Started, Data: data})
		cancel()
	}
	if err != nil {
		if rec.Log != nil {
			rec.Log.Warn("store a recorded upstream call", "run", c.run, "err", err)
		}
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The run's entry stays (empty) until it leaves order, so order holds
	// each run once.
	if calls, ok := rec.calls[c.run]; ok {
		rec.calls[c.run] = slices.DeleteFunc(calls, func(x *Call) bool { return x == c })
	}
}

// encodeCapped is c as JSON, at most bridge.MaxRecording bytes: the longer
// of its bodies is halved until it fits (escaping can make a body's JSON
// several times its size).
func encodeCapped(c *Call) ([]byte, error) {
	for {
		data, err := json.Marshal(c)
		if err != nil || len(data) <= bridge.MaxRecording || c.Body == "" && c.RequestBody == "" {
			return data, err
		}
		c.Truncated = true
		if len(c.Body) >= len(c.RequestBody) {
			c.Body = strings.ToValidUTF8(c.Body[:len(c.Body)/2], "")
		} else {
			c.RequestBody = strings.ToValidUTF8(c.RequestBody[:len(c.RequestBody)/2], "")
		}
	}
}

// tee is a response body that keeps what it reads, up to the cap.
type tee struct {
	rec  *Recorder
	call *Call
	rc   io.ReadCloser
	done bool
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.rec.mu.Lock()
	ended := false
	if n > 0 {
		if t.call.FirstByteMS == nil {
			t.call.FirstByteMS = t.rec.since(t.call.Started)
		}
		keep := min(n, t.rec.max()-t.call.body.Len())
		if keep < n {
			t.call.Truncated = true
		}
		if keep > 0 {
			t.call.body.Write(p[:keep])
		}
	}
	if err != nil {
		ended = t.end()
	}
	t.rec.mu.Unlock()
	if ended {
		t.rec.store(t.call)
	}
	return n, err
}

func (t *tee) Close() error {
	t.rec.mu.Lock()
	ended := t.end()
	t.rec.mu.Unlock()
	if ended {
		t.rec.store(t.call)
	}
	return t.rc.Close()
}

// end marks the body's end, and reports whether this was its end (not a
// second call). The caller holds rec.mu.
func (t *tee) end() bool {
	if t.done {
		return false
	}
	t.done = true
	t.call.EndMS = t.rec.since(t.call.Started)
	return true
}

// secretHeaders are redacted whatever their value.
var secretHeaders = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "X-Api-Key": true, "Api-Key": true,
	"X-Goog-Api-Key": true, "Cookie": true, "Set-Cookie": true}

func (rec *Recorder) headers(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if secretHeaders[http.CanonicalHeaderKey(k)] {
			out[k] = "[redacted]"
			continue
		}
		out[k] = rec.Keys.Scrub(strings.Join(v, ", "))
	}
	return out
}

// redactURL drops a URL's user info and the values of key-like query
// parameters.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	q := c.Query()
	for k := range q {
		switch strings.ToLower(k) {
		case "key", "api_key", "apikey", "token", "access_token":
			q.Set(k, "[redacted]")
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}
