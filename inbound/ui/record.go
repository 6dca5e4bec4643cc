package ui

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// RecordHeader is the request header with which a client opts its run in to
// upstream recording ("upstream").
const RecordHeader = "X-Bridge-Record"

// Recorder keeps what upstreams sent, call by call, for the runs that opt
// in (RecordHeader) or for every run (All): the request the bridge sent
// and the response it got, headers and bodies, each body cut at Max bytes,
// with credentials redacted. It keeps the calls of the last Runs runs, in
// memory only (a restart forgets them). It is safe for concurrent use.
type Recorder struct {
	// All records every run's upstream calls.
	All bool
	// Max is the bytes kept of each body (0: 256 KiB).
	Max int
	// Runs is how many runs' calls are kept (0: 500).
	Runs int
	// Secrets are strings redacted wherever they appear (upstream keys).
	Secrets []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// RunID names the run of an upstream call's context (nil:
	// bridge.RunIDFromContext, which the engine sets).
	RunID func(context.Context) string

	mu    sync.Mutex
	calls map[string][]*Call
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
	c := &Call{Started: rec.now(), Method: req.Method, URL: rec.redact(redactURL(req.URL)), RequestHeaders: rec.headers(req.Header)}
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			c.RequestBody, _ = rec.readCapped(b)
			b.Close()
		}
	}
	rec.add(rec.runID(req.Context()), c)
	resp, err := next.RoundTrip(req)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err != nil {
		c.Error = "the call failed before a response"
		c.EndMS = rec.since(c.Started)
		return nil, err
	}
	c.Status = resp.StatusCode
	c.ResponseHeaders = rec.headers(resp.Header)
	c.HeadersMS = rec.since(c.Started)
	resp.Body = &tee{rec: rec, call: c, rc: resp.Body}
	return resp, nil
}

func (rec *Recorder) readCapped(r io.Reader) (string, bool) {
	b, _ := io.ReadAll(io.LimitReader(r, int64(rec.max())+1))
	cut := len(b) > rec.max()
	if cut {
		b = b[:rec.max()]
	}
	return rec.redact(string(b)), cut
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

// Calls returns copies of run's recorded calls, oldest first (none when
// the run was not recorded, or is forgotten).
func (rec *Recorder) Calls(run string) []Call {
	if rec == nil {
		return nil
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []Call
	for _, c := range rec.calls[run] {
		cp := Call{Started: c.Started, Method: c.Method, URL: c.URL, RequestHeaders: c.RequestHeaders, RequestBody: c.RequestBody,
			Status: c.Status, ResponseHeaders: c.ResponseHeaders, Truncated: c.Truncated, HeadersMS: c.HeadersMS,
			FirstByteMS: c.FirstByteMS, EndMS: c.EndMS, Error: c.Error}
		cp.Body = rec.redact(c.body.String())
		out = append(out, cp)
	}
	return out
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
	defer t.rec.mu.Unlock()
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
		t.end()
	}
	return n, err
}

func (t *tee) Close() error {
	t.rec.mu.Lock()
	t.end()
	t.rec.mu.Unlock()
	return t.rc.Close()
}

// end marks the body's end; the caller holds rec.mu.
func (t *tee) end() {
	if !t.done {
		t.done = true
		t.call.EndMS = t.rec.since(t.call.Started)
	}
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
		out[k] = rec.redact(strings.Join(v, ", "))
	}
	return out
}

// redact replaces every configured secret in s.
func (rec *Recorder) redact(s string) string {
	for _, sec := range rec.Secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
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
