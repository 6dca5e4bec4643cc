package inbound

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// DefaultMaxBody is the request body limit when none is configured.
const DefaultMaxBody = 8 << 20

// ReadBody reads the whole request body, at most limit bytes (<= 0: the
// default). The body is read whole before any upstream call, so an upstream
// never sees a half-sent request.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if bb, ok := r.Body.(*bodyBytes); ok { // read already: no second copy
		b := bb.take()
		if int64(len(b)) > limit {
			return nil, bridge.Errorf(bridge.CodeTooLarge, "request body is larger than %d bytes", limit)
		}
		return b, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, bridge.Errorf(bridge.CodeTooLarge, "request body is larger than %d bytes", limit)
		}
		return nil, bridge.Errorf(bridge.CodeInvalid, "could not read the request body")
	}
	return b, nil
}

// Decode reads the request body (ReadBody) and decodes it with decode, a
// dialect's request decoder.
func Decode[T any](w http.ResponseWriter, r *http.Request, limit int64, decode func([]byte) (T, error)) (T, error) {
	body, err := ReadBody(w, r, limit)
	if err != nil {
		var zero T
		return zero, err
	}
	return decode(body)
}

// StartRun starts req's run (or continues it, with a client's tool
// results) and subscribes to what comes after the events the run already
// had: a request that continues a run is answered with its new model call
// only. The subscription's context is the Batch's (NewBatch), so a stream
// that makes the Batch's Writer flushes when the subscription is idle; one
// that does not loses nothing. The run and its session are named in w's
// headers (HeaderRunID, HeaderSessionID).
func StartRun(w http.ResponseWriter, r *http.Request, e *bridge.Engine, req *bridge.Request) (*bridge.Run, bridge.Stream, *Batch, error) {
	batch, sctx := NewBatch(r.Context())
	run, events, err := e.StartFollowing(r.Context(), sctx, req)
	if err != nil {
		return nil, nil, nil, err
	}
	w.Header().Set(HeaderRunID, run.ID)
	w.Header().Set(HeaderSessionID, run.SessionID)
	return run, events, batch, nil
}

// Dialect is one inbound dialect as the common run API needs it: how to
// render a run's events, a history page and an error for its clients.
type Dialect interface {
	Name() string
	// WriteError writes err in the dialect's error shape.
	WriteError(w http.ResponseWriter, err error)
	// ServeEvents streams run's events to the client as the dialect's
	// stream carried them, each frame with its id. events start where
	// such a stream started (the run's first, or the event after a final
	// the run was continued from; see Resume), so an encoder made fresh
	// renders the frames byte for byte; w may drop the leading ones
	// (SkipFrames).
	// A request whose context is AsReceived asks for the frames exactly
	// as the request that started the run got them (a JSON-RPC id, where
	// a replay has none).
	ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream)
	// History renders a history page in the chatkit shape of the dialect.
	History(p *bridge.HistoryPage) ([]byte, error)
}

// SSEWriter writes to a response and flushes after every Write, so an SSE
// event written in one Write leaves in one piece, at once; one made by a
// Batch flushes when the run's subscription waits instead.
type SSEWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	batched bool // flush in Flush only, after the first Write
	flushed bool // the response is committed (headers sent, chunked)
	dirty   bool // written since the last flush
}

// NewSSEWriter sets the SSE response headers (not the status) and returns
// the writer.
func NewSSEWriter(w http.ResponseWriter) *SSEWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	return &SSEWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *SSEWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil || s.batched && s.flushed {
		s.dirty = s.dirty || n > 0
		return n, err
	}
	// Unbatched, or the first event: it leaves at once, and the response
	// is a stream (chunked, so trailers can follow) however short it is.
	s.flushed, s.dirty = true, false
	return n, s.rc.Flush()
}

// Flush sends what was written since the last flush.
func (s *SSEWriter) Flush() error {
	if !s.dirty {
		return nil
	}
	s.flushed, s.dirty = true, false
	return s.rc.Flush()
}

// Batch writes a run's events in as few flushes as keep each of them
// prompt: its context, given to Engine.Subscribe, flushes the Batch's
// writer each time the subscription has yielded every committed event and
// is about to wait. The events one commit made available (a busy run's
// deltas) leave in one write, never held for an event still to come.
//
// The writer is made later (a handler writes nothing until it knows the
// run's first event). Only the goroutine that iterates the subscription
// may use it: a dialect whose pings write from another goroutine
// (Anthropic, Hermes) flushes every event instead.
type Batch struct {
	sw *SSEWriter
}

// NewBatch returns a Batch and the context to subscribe with. Until its
// Writer is made, the idle hook does nothing: a handler may subscribe with
// it whether it then streams or not.
func NewBatch(ctx context.Context) (*Batch, context.Context) {
	b := &Batch{}
	return b, bridge.WithIdle(ctx, b.flush)
}

func (b *Batch) flush() {
	if b == nil || b.sw == nil {
		return
	}
	_ = b.sw.Flush() // a failed write shows at the next Write
}

// Writer is NewSSEWriter whose flushes wait for the subscription to be
// idle. On a nil Batch it is NewSSEWriter.
func (b *Batch) Writer(w http.ResponseWriter) *SSEWriter {
	sw := NewSSEWriter(w)
	if b != nil {
		sw.batched = true
		b.sw = sw
	}
	return sw
}

// DroppedHeader is the header (or trailer, for streams) that names what a
// translation could not carry.
const DroppedHeader = "X-Bridge-Dropped"

// SetDropped sets the dropped header when anything was dropped.
func SetDropped(h http.Header, dropped []string) {
	if len(dropped) > 0 {
		h.Set(DroppedHeader, strings.Join(dropped, ", "))
	}
}

// LastEventID returns the client's resume cursor: the Last-Event-ID header,
// else the query parameter named param.
func LastEventID(r *http.Request, param string) string {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		return v
	}
	return r.URL.Query().Get(param)
}

// SetDroppedTrailer sends the dropped list as a trailer, for streams whose
// headers are gone by the time the list is complete.
func SetDroppedTrailer(h http.Header, dropped []string) {
	if len(dropped) > 0 {
		h.Set(http.TrailerPrefix+DroppedHeader, strings.Join(dropped, ", "))
	}
}

// RetryAfter renders a Retry-After value in whole seconds, at least 1.
func RetryAfter(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// Dropped returns the whole list of what a run's translations dropped: the
// engine's (on the final event) and the inbound encoder's, recording the
// encoder's on the run when it adds anything (a failure to is logged).
func Dropped(ctx context.Context, e *bridge.Engine, log *slog.Logger, runID string, final *bridge.Final, enc []string) []string {
	var all []string
	if final != nil {
		all = append(all, final.Dropped...)
	}
	n := len(all)
	for _, d := range enc {
		if !slices.Contains(all, d) {
			all = append(all, d)
		}
	}
	if len(all) == n {
		return all
	}
	if err := e.RecordDropped(context.WithoutCancel(ctx), runID, all[n:]); err != nil {
		log.Warn("record dropped", "run", runID, "err", err)
	}
	return all
}

// WriteError writes err as a dialect's JSON error object: encode gives
// the status and the body (the mapping package's EncodeError).
func WriteError(w http.ResponseWriter, err error, encode func(*bridge.Error) (int, []byte)) {
	be := bridge.AsError(err)
	status, body := encode(be)
	WriteErrorBody(w, be, status, body, "")
}

// WriteErrorBody writes a dialect's error: Content-Type (contentType, or
// application/json when ""), Retry-After when be says how long to wait, the
// status and the body.
func WriteErrorBody(w http.ResponseWriter, be *bridge.Error, status int, body []byte, contentType string) {
	if contentType == "" {
		contentType = "application/json"
	}
	w.Header().Set("Content-Type", contentType)
	if be != nil && be.RetryAfter > 0 {
		w.Header().Set("Retry-After", RetryAfter(be.RetryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// The headers the stateless dialects share: the session a request joins,
// the run it made, and the run id its client proposed.
const (
	HeaderSessionID   = "X-Session-Id"
	HeaderRunID       = "X-Run-Id"
	HeaderClientRunID = "X-Client-Run-Id"
)

// HeaderReplaceFrom, on a request that starts a run in any dialect, names a
// run of the session that the request discards with every later one (a
// regenerate, an edit): bridge.Request.ReplaceFrom.
const HeaderReplaceFrom = "X-Replace-From"

// QuerySuperseded is the query flag of a history request that includes
// the runs a regenerate or an edit discarded, marked superseded.
const QuerySuperseded = "include_superseded"

// IncludeSuperseded reports whether r's query sets include_superseded
// (true or 1).
func IncludeSuperseded(r *http.Request) bool {
	v, _ := strconv.ParseBool(r.URL.Query().Get(QuerySuperseded))
	return v
}

// Stateless marks req as a stateless dialect's (its messages are the whole
// transcript) and attaches it to the session its X-Session-Id names, or to
// the session of the run its X-Replace-From discards; a request in a
// session is detached, so it keeps running, resumable, when its client
// goes away.
func Stateless(r *http.Request, req *bridge.Request) {
	req.Full = true
	req.SessionID = r.Header.Get(HeaderSessionID)
	req.ReplaceFrom = r.Header.Get(HeaderReplaceFrom)
	req.Detached = req.SessionID != "" || req.ReplaceFrom != ""
	req.ClientRunID = r.Header.Get(HeaderClientRunID)
}

// FinalError is the error a failed run ends with: its own, or one made of
// its reason.
func FinalError(f *bridge.Final) *bridge.Error {
	if f.Error != nil {
		return f.Error
	}
	return bridge.Errorf(bridge.CodeUpstream, "%s", f.Reason)
}

type asReceivedKey struct{}

// WithAsReceived marks ctx for Dialect.ServeEvents: render the run as the
// request that started it received it, not as a replay of it (the
// inspector's client wire). A dialect whose replay differs from its first
// stream only where the replay has no request to answer (A2A's JSON-RPC
// id) reads the mark; the others render the same either way.
func WithAsReceived(ctx context.Context) context.Context {
	return context.WithValue(ctx, asReceivedKey{}, true)
}

// AsReceived reports whether ctx carries WithAsReceived's mark.
func AsReceived(ctx context.Context) bool {
	v, _ := ctx.Value(asReceivedKey{}).(bool)
	return v
}
