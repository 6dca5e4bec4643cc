package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/mapping/openai"
	wire "github.com/bridge-dev/bridge/mapping/responses"
)

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// Store is the engine's store, for the transcripts of sessions.
	Store Store
	// Responses keeps the stored responses (the engine's store, when it
	// implements bridge.ResponseStore). Without it a request with store:
	// true is refused.
	Responses bridge.ResponseStore
	// MaxBody bounds request bodies (default inbound.DefaultMaxBody).
	MaxBody int64
	// Compact asks a request's upstream for a compaction of its
	// conversation when that upstream has its own (a Responses upstream's
	// /responses/compact); ok false, or nil: the routed model is asked for
	// a summary instead.
	Compact func(ctx context.Context, req *bridge.Request) (object []byte, ok bool, err error)
	// WriteTimeout bounds each WebSocket message's write (0:
	// inbound.DefaultWriteTimeout), as the server's write deadline bounds
	// each write over HTTP: a client that stops reading is cut off.
	WriteTimeout time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// Handler serves the dialect. It is safe for concurrent use; Close stops
// its background work.
type Handler struct {
	cfg   Config
	mux   *http.ServeMux
	rec   records
	locks sessionLocks

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Headers the handler reads and sets (the same as every dialect's).
const (
	HeaderSessionID   = "X-Session-Id"
	HeaderRunID       = "X-Run-Id"
	HeaderClientRunID = "X-Client-Run-Id"
)

var routes = []string{
	"POST /v1/responses",
	"GET /v1/responses",
	"GET /v1/responses/{id}",
	"GET /v1/responses/{id}/input_items",
	"DELETE /v1/responses/{id}",
	"POST /v1/responses/{id}/cancel",
	"POST /v1/responses/compact",
	"POST /v1/responses/input_tokens",
}

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), rec: records{s: cfg.Store, resp: cfg.Responses}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.mux.HandleFunc(routes[0], h.create)
	h.mux.HandleFunc(routes[1], h.websocket)
	h.mux.HandleFunc(routes[2], h.get)
	h.mux.HandleFunc(routes[3], h.inputItems)
	h.mux.HandleFunc(routes[4], h.delete)
	h.mux.HandleFunc(routes[5], h.cancelResponse)
	h.mux.HandleFunc(routes[6], h.compact)
	h.mux.HandleFunc(routes[7], h.unsupported)
	return h
}

// Routes lists the patterns the handler serves, for a parent mux.
func (h *Handler) Routes() []string { return slices.Clone(routes) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close stops the goroutines that store finished responses and waits for
// them. Responses whose runs end later are stored when first read.
func (h *Handler) Close() error {
	h.cancel()
	h.wg.Wait()
	return nil
}

// Name implements inbound.Dialect.
func (h *Handler) Name() string { return wire.Dialect }

// WriteError implements inbound.Dialect: an OpenAI error object.
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	inbound.WriteError(w, err, wire.EncodeError)
}

// History implements inbound.Dialect: the chatkit OpenAI-compatible shape
// (Responses has no history API of its own; input_items is per response).
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) { return openai.EncodeHistory(p) }

// ---- create -----------------------------------------------------------------

// render is the Run.Render of a Responses run: the response its first
// request created.
type render struct {
	Response string `json:"response"`
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if body, err = h.expandCompactions(r.Context(), body); err != nil {
		h.WriteError(w, err)
		return
	}
	cr, err := wire.DecodeRequest(body)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if cr.Background && !cr.Store {
		h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "background",
			Message: "background: a background response must be stored (store: true)"})
		return
	}
	if cr.Store && h.cfg.Responses == nil {
		h.WriteError(w, &bridge.Error{Code: bridge.CodeUnsupported, Param: "store",
			Message: "store: this bridge's store keeps no responses; send store: false"})
		return
	}
	ctx := r.Context()
	principal := bridge.PrincipalFromContext(ctx)
	now := h.cfg.Now()
	rec := &record{ID: bridge.NewID("resp_"), Principal: principal, Previous: cr.PreviousResponseID,
		Created: time.Unix(now.Unix(), 0).UTC(), Model: cr.Hub.Model, Background: cr.Background, Echo: cr.Echo}
	req := cr.Hub
	req.Render, _ = json.Marshal(render{Response: rec.ID})
	req.ClientRunID = r.Header.Get(HeaderClientRunID)
	header := r.Header.Get(HeaderSessionID)
	req.ReplaceFrom = h.replaceTarget(ctx, principal, r.Header.Get(inbound.HeaderReplaceFrom))
	req.Detached = cr.Background || header != "" || req.ReplaceFrom != ""

	run, err := h.start(ctx, principal, cr, rec, header, nil)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set(HeaderRunID, run.ID)
	w.Header().Set(HeaderSessionID, run.SessionID)
	opt := h.begun(principal, cr, rec, run)
	if cr.Background && !cr.Hub.Stream {
		acc := wire.NewAccumulator(opt)
		h.writeJSON(w, http.StatusOK, acc.Response("queued"))
		return
	}
	batch, sctx := inbound.NewBatch(ctx) // a no-op for a response that makes no SSE writer
	_, events, err := h.cfg.Engine.Subscribe(sctx, run.ID, run.LastSeq)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if cr.Hub.Stream {
		h.stream(w, r, run, events, opt, !cr.Background, batch)
		return
	}
	h.complete(w, r, run, events, opt)
}

// replaceTarget is the run X-Replace-From names: a stored response's
// run, or the run id itself (the engine answers not found for a run that
// is not the caller's).
func (h *Handler) replaceTarget(ctx context.Context, principal, id string) string {
	if id == "" {
		return ""
	}
	if rec, err := h.rec.get(ctx, principal, id); err == nil {
		return rec.RunID
	}
	return id
}

// start resolves the request's session and transcript, starts its run and
// records the response (when it is stored). A WebSocket connection passes
// its cache of responses, which previous_response_id names first.
func (h *Handler) start(ctx context.Context, principal string, cr *wire.Request, rec *record, header string, cache *wsCache) (*bridge.Run, error) {
	req := cr.Hub
	// end is the position of the session's last message before this
	// response adds to it (-1: it starts a session): where the responses
	// it follows ended.
	end := int64(-1)
	switch {
	case cr.PreviousResponseID != "":
		prev, err := h.previous(ctx, principal, cr.PreviousResponseID, cache)
		if err != nil {
			return nil, err
		}
		defer h.locks.lock(prev.SessionID)()
		if end, err = h.chain(ctx, prev, req); err != nil {
			return nil, err
		}
		if err := h.checkResults(ctx, req); err != nil {
			return nil, err
		}
	case header != "":
		defer h.locks.lock(header)()
		req.Full, req.SessionID = true, header
		pos, err := h.rec.lastPosition(ctx, header)
		if err != nil {
			return nil, err
		}
		end = pos
	default:
		req.Full = true // a session of its own
	}
	run, err := h.startRun(ctx, req)
	if err != nil {
		return nil, err
	}
	if end > 0 {
		// The session's chain has moved on (whether or not this one is
		// kept): a later response continuing an earlier one branches
		// from where it ended.
		if err := h.rec.end(ctx, principal, run.SessionID, end); err != nil {
			h.cfg.Logger.Warn("record where the session's responses ended", "session", run.SessionID, "err", err)
		}
		cache.end(run.SessionID, end)
	}
	if !cr.Store {
		return run, nil
	}
	rec.RunID, rec.SessionID, rec.After = run.ID, run.SessionID, run.LastSeq
	if err := h.save(ctx, rec, cr.Input); err != nil {
		h.cfg.Logger.Error("store response", "response", rec.ID, "run", run.ID, "err", err)
		_, _ = h.cfg.Engine.Abort(context.WithoutCancel(ctx), run.ID)
		return nil, &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: 5 * time.Second,
			Message: "the bridge cannot store responses right now"}
	}
	return run, nil
}

// checkResults fails a continuation whose function_call_output items
// answer no function_call of its conversation, as the API does (the
// upstream would otherwise get a tool result without its call).
func (h *Handler) checkResults(ctx context.Context, req *bridge.Request) error {
	var missing []string
	for _, m := range req.Messages {
		if m.ToolCallID != "" {
			missing = append(missing, m.ToolCallID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	msgs := req.Messages
	if !req.Full {
		prior, _, err := h.rec.s.Messages(ctx, bridge.PrincipalFromContext(ctx), req.SessionID, 0, 0)
		if err != nil {
			return err
		}
		msgs = append(prior, msgs...)
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			missing = slices.DeleteFunc(missing, func(id string) bool { return id == c.ID })
		}
	}
	if len(missing) > 0 {
		return &bridge.Error{Code: bridge.CodeInvalid, Param: "input",
			Message: fmt.Sprintf("No tool call found for function call output with call_id %s.", missing[0])}
	}
	return nil
}

// previous is the response previous_response_id names: the connection's
// (cache, when it has it), else a stored one.
func (h *Handler) previous(ctx context.Context, principal, id string, cache *wsCache) (*record, error) {
	if err := checkPrevious(id); err != nil {
		return nil, err
	}
	if e := cache.get(id); e != nil && e.rec.RunID != "" {
		rec := e.rec
		return &rec, nil
	}
	prev, err := h.rec.get(ctx, principal, id)
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeNotFound {
			return nil, previousNotFound(id)
		}
		return nil, err
	}
	return prev, nil
}

// checkPrevious refuses a previous_response_id that is no client-given
// id (inbound.ValidID) before it is looked up or quoted back.
func checkPrevious(id string) error {
	if inbound.ValidID(id) {
		return nil
	}
	return &bridge.Error{Code: bridge.CodeInvalid, Param: "previous_response_id",
		Message: fmt.Sprintf("previous_response_id: at most %d bytes of printable characters, no control characters", inbound.MaxIDLen)}
}

// startRun starts the run, retrying a continuation that races the engine
// letting go of the run it continues (a conflict that lasts a moment).
func (h *Handler) startRun(ctx context.Context, req *bridge.Request) (*bridge.Run, error) {
	for i := 0; ; i++ {
		run, err := h.cfg.Engine.Start(ctx, req)
		if err == nil || bridge.ErrorCode(err) != bridge.CodeConflict || req.SessionID == "" || i >= 100 {
			return run, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// chain sets req up to continue prev: in prev's session when prev is its
// latest response (it has not ended), else (a branch) in a new session
// holding the transcript up to where prev ended. It returns the position
// of the session's last message before the new response adds to it (-1
// for a branch). The caller holds prev's session lock.
func (h *Handler) chain(ctx context.Context, prev *record, req *bridge.Request) (int64, error) {
	if prev.End == 0 {
		run, err := h.cfg.Engine.Run(ctx, prev.RunID)
		if err != nil {
			return 0, previousNotFound(prev.ID)
		}
		if run.Status == bridge.StatusRunning {
			return 0, &bridge.Error{Code: bridge.CodeInvalid, Param: "previous_response_id",
				Message: fmt.Sprintf("Previous response with id '%s' is still in progress.", prev.ID)}
		}
		pos, err := h.rec.lastPosition(ctx, prev.SessionID)
		if err != nil {
			return 0, err
		}
		req.SessionID, req.Full = prev.SessionID, false
		return pos, nil
	}
	msgs, err := h.transcript(ctx, prev)
	if err != nil {
		return 0, err
	}
	req.Messages = append(msgs, req.Messages...)
	req.SessionID, req.Full = "", true
	return -1, nil
}

// transcript is the conversation up to where prev ended (its session's
// messages, all of them when prev is the session's latest response), as
// messages a new session can start with.
func (h *Handler) transcript(ctx context.Context, prev *record) ([]bridge.Message, error) {
	before := int64(0)
	if prev.End != 0 {
		before = prev.End + 1
	}
	msgs, _, err := h.rec.s.Messages(ctx, prev.Principal, prev.SessionID, before, 0)
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		msgs[i].ID, msgs[i].RunID = "", ""
	}
	return msgs, nil
}

// save records a new response with its input items.
func (h *Handler) save(ctx context.Context, rec *record, input []json.RawMessage) error {
	rec.Input = inputItems(rec.ID, input)
	return h.cfg.Responses.PutResponse(ctx, rec)
}

// inputItems gives each input item an id (its own, derived from the
// response id) and renders them as one array.
func inputItems(respID string, items []json.RawMessage) []byte {
	core := strings.TrimPrefix(respID, "resp_")
	b := []byte{'['}
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(it, &t)
		prefix := "item"
		switch t.Type {
		case "message":
			prefix = "msg"
		case "function_call":
			prefix = "fc"
		case "function_call_output":
			prefix = "fco"
		case "reasoning":
			prefix = "rs"
		}
		b = append(b, `{"id":"`...)
		b = append(b, prefix...)
		b = append(b, '_')
		b = append(b, core...)
		b = append(b, "_in"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '"')
		if len(it) > 2 {
			b = append(b, ',')
			b = append(b, it[1:]...)
		} else {
			b = append(b, '}')
		}
	}
	return append(b, ']')
}

func streamOptions(rec *record) wire.StreamOptions {
	return wire.StreamOptions{ID: rec.ID, Model: rec.Model, Created: rec.Created.Unix(), Echo: rec.Echo, Background: rec.Background}
}

// begun records run on rec and returns the stream options of its
// response; a stored response is stored once the run ends its segment
// (finish, in the background).
func (h *Handler) begun(principal string, cr *wire.Request, rec *record, run *bridge.Run) wire.StreamOptions {
	rec.RunID, rec.SessionID, rec.After = run.ID, run.SessionID, run.LastSeq
	opt := streamOptions(rec)
	if cr.Store {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.finish(principal, rec, opt)
		}()
	}
	return opt
}

// finish stores the Response object once the response's run ends its
// segment, so it outlives the run's events.
func (h *Handler) finish(principal string, rec *record, opt wire.StreamOptions) {
	ctx := bridge.WithPrincipal(h.ctx, principal)
	acc, err := h.accumulate(ctx, rec, opt, false)
	if err != nil || !acc.Finished() {
		return
	}
	if err := h.cfg.Responses.FinishResponse(ctx, principal, rec.ID, acc.Response("")); err != nil {
		h.cfg.Logger.Warn("store response output", "response", rec.ID, "err", err)
	}
	h.dropped(ctx, rec.RunID, acc.Dropped())
}

// accumulate folds the response's events in: up to its final, or, with
// snapshot, only those committed now.
func (h *Handler) accumulate(ctx context.Context, rec *record, opt wire.StreamOptions, snapshot bool) (*wire.Accumulator, error) {
	acc := wire.NewAccumulator(opt)
	run, err := h.cfg.Engine.Run(ctx, rec.RunID)
	if err != nil {
		return nil, err
	}
	running := run.Status == bridge.StatusRunning
	if snapshot && running && run.LastSeq <= rec.After {
		return acc, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, events, err := h.cfg.Engine.Subscribe(ctx, rec.RunID, rec.After)
	if err != nil {
		return nil, err
	}
	for ev, err := range events {
		if err != nil {
			return nil, err
		}
		acc.Add(&ev)
		if acc.Finished() || snapshot && running && ev.Seq >= run.LastSeq {
			break
		}
	}
	if !acc.Finished() && !running {
		// The run ended but its events are gone (retention): its outcome
		// is all there is to say.
		u := run.Usage
		acc.Add(&bridge.Event{Kind: bridge.KindFinal, Time: run.Finished,
			Final: &bridge.Final{Status: run.Status, StopReason: run.StopReason, Reason: run.Reason, Usage: &u}})
	}
	return acc, nil
}

// ---- answering --------------------------------------------------------------

func (h *Handler) writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// complete answers a non-streaming request with the Response object; a
// run that failed is an error response.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	acc := wire.NewAccumulator(opt)
	for ev, err := range events {
		if err != nil {
			inbound.EndedEarly(h.cfg.Logger, r, run, err)
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		}
		acc.Add(&ev)
		if acc.Finished() {
			break
		}
	}
	inbound.SetDropped(w.Header(), h.dropped(r.Context(), run.ID, acc.Dropped()))
	if err := acc.Err(); err != nil && acc.Status() == "failed" {
		h.WriteError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, acc.Response("in_progress"))
}

// stream answers with the typed event stream. With hold, nothing is
// written until the upstream has answered: a failure before its first
// byte becomes an ordinary error response.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions, hold bool, batch *inbound.Batch) {
	p := inbound.Pull(events)
	defer p.Stop()
	var held []bridge.Event
	if hold {
		var failed *bridge.Final
		held, failed = p.Head(func(k bridge.Kind) bool { return k == bridge.KindRunStarted })
		if failed != nil {
			inbound.SetDropped(w.Header(), h.dropped(r.Context(), run.ID, nil))
			h.WriteError(w, failure(failed))
			return
		}
		if p.Failed(h.cfg.Logger, r, run) {
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		}
	}
	dropped := run.Dropped
	if cur, err := h.cfg.Engine.Run(context.WithoutCancel(r.Context()), run.ID); err == nil {
		dropped = cur.Dropped
	}
	h.serveEvents(w, r, run, opt, dropped, held, p, nil, batch)
}

// gate passes writes through once opened; before, it discards them (the
// frames a resumed stream's client already has). serveEvents opens it at
// the first event after seq at.
type gate struct {
	w    io.Writer
	open bool
	at   int64
}

func (g *gate) Write(p []byte) (int, error) {
	if !g.open {
		return len(p), nil
	}
	return g.w.Write(p)
}

// serveEvents writes the held events, then the rest, to the segment's
// final. With g, writes go through it (a resume opens it at the cursor).
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, opt wire.StreamOptions,
	dropped []string, held []bridge.Event, events *inbound.Pulled, g *gate, batch *inbound.Batch) {
	inbound.SetDropped(w.Header(), dropped)
	sw := batch.Writer(w)
	w.WriteHeader(http.StatusOK)
	var out io.Writer = sw
	if g != nil {
		g.w = sw
		out = g
	}
	enc := wire.NewStreamEncoder(out, opt)
	for i := range held {
		if err := enc.Encode(&held[i]); err != nil {
			return
		}
	}
	if err := sw.Flush(); err != nil { // the first events, at once
		return
	}
	for !enc.Finished() {
		ev, ok := events.Next()
		if !ok {
			break
		}
		if g != nil && !g.open && ev.Seq > g.at {
			g.open = true
		}
		if err := enc.Encode(&ev); err != nil {
			return // the client went away
		}
	}
	if events.Failed(h.cfg.Logger, r, run) {
		return
	}
	_ = enc.Close()
	inbound.SetDroppedTrailer(w.Header(), h.dropped(r.Context(), run.ID, enc.Dropped()))
}

// ServeEvents implements inbound.Dialect: a replay (and follow) of a run's
// events as the Responses stream of the response they belong to, each
// frame with its event id. A replay after a cursor continues that stream:
// the frames up to the cursor are rendered but not sent, so sequence
// numbers, item ids and output indices carry on.
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	next, stop := iter.Pull2(events)
	first, err, ok := next()
	stop()
	if ok && err != nil {
		inbound.EndedEarly(h.cfg.Logger, r, run, err)
		h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
		return
	}
	cursor := run.LastSeq
	if ok {
		cursor = first.Seq - 1
	}
	ctx := r.Context()
	rec, err := h.segmentAt(ctx, run, cursor)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	_, evs, err := h.cfg.Engine.Subscribe(ctx, run.ID, rec.After)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	p := inbound.Pull(evs)
	defer p.Stop()
	g := &gate{at: cursor, open: cursor <= rec.After}
	h.serveEvents(w, r, run, streamOptions(rec), run.Dropped, nil, p, g, nil)
}

// segmentAt is the response of run whose events hold seq cursor+1: the
// latest that started at or before cursor. A run of an unstored response
// has its first response's id in Render.
func (h *Handler) segmentAt(ctx context.Context, run *bridge.Run, cursor int64) (*record, error) {
	principal := bridge.PrincipalFromContext(ctx)
	segs, err := h.rec.segments(ctx, principal, run.ID)
	if err != nil {
		return nil, err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].After <= cursor {
			return segs[i], nil // a deleted one too: its stream is still the run's
		}
	}
	var rd render
	_ = json.Unmarshal(run.Render, &rd)
	if rd.Response == "" {
		rd.Response = "resp_" + run.ID
	}
	return &record{ID: rd.Response, RunID: run.ID, SessionID: run.SessionID, Created: run.Created.Truncate(time.Second), Model: run.Model}, nil
}

// ---- the stored-response endpoints -----------------------------------------

// stored is the caller's stored response the path names, with the
// caller; nil when there is none (answered).
func (h *Handler) stored(w http.ResponseWriter, r *http.Request) (string, *record) {
	principal := bridge.PrincipalFromContext(r.Context())
	rec, err := h.rec.get(r.Context(), principal, r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return principal, nil
	}
	return principal, rec
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	principal, rec := h.stored(w, r)
	if rec == nil {
		return
	}
	q := r.URL.Query()
	if wantsStream(w, r) {
		after := int64(-1)
		if s := q.Get("starting_after"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < -1 {
				h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "starting_after",
					Message: "starting_after: must be a sequence number"})
				return
			}
			after = n
		}
		h.restream(w, r, rec, after)
		return
	}
	h.writeObject(ctx, w, principal, rec)
}

// writeObject answers with rec's Response object.
func (h *Handler) writeObject(ctx context.Context, w http.ResponseWriter, principal string, rec *record) {
	body, err := h.object(ctx, principal, rec)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, body)
}

// wantsStream reports whether a GET asks for the stream: ?stream=true, as
// the API documents it, or {"stream":true} in the body, as the official
// SDKs send it (a GET with a JSON body).
func wantsStream(w http.ResponseWriter, r *http.Request) bool {
	if v := r.URL.Query().Get("stream"); v != "" {
		return v == "true" || v == "1"
	}
	if r.Body == nil || r.ContentLength == 0 {
		return false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		return false
	}
	var v struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(b, &v) == nil && v.Stream
}

// object is the Response as stored once finished, else rendered from the
// run's events so far (and stored, when it turns out finished).
func (h *Handler) object(ctx context.Context, principal string, rec *record) ([]byte, error) {
	if rec.Output != nil {
		return rec.Output, nil
	}
	acc, err := h.accumulate(ctx, rec, streamOptions(rec), true)
	if err != nil {
		return nil, err
	}
	if !acc.Finished() {
		status := "in_progress"
		if rec.Background && !h.started(ctx, rec) {
			status = "queued"
		}
		return acc.Response(status), nil
	}
	body := acc.Response("")
	if err := h.cfg.Responses.FinishResponse(context.WithoutCancel(ctx), principal, rec.ID, body); err != nil {
		h.cfg.Logger.Warn("store response output", "response", rec.ID, "err", err)
	}
	return body, nil
}

// started reports whether the response's run has an event past its start.
func (h *Handler) started(ctx context.Context, rec *record) bool {
	run, err := h.cfg.Engine.Run(ctx, rec.RunID)
	return err == nil && run.LastSeq > rec.After+1
}

// restream renders the response's stream from its start and writes the
// events after sequence number after (-1: all), following a running one.
func (h *Handler) restream(w http.ResponseWriter, r *http.Request, rec *record, after int64) {
	ctx := r.Context()
	run, events, err := h.cfg.Engine.Subscribe(ctx, rec.RunID, rec.After)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	p := inbound.Pull(events)
	defer p.Stop()
	w.Header().Set(HeaderRunID, run.ID)
	w.Header().Set(HeaderSessionID, run.SessionID)
	opt := streamOptions(rec)
	opt.Skip = after + 1
	h.serveEvents(w, r, run, opt, run.Dropped, nil, p, nil, nil)
}

func (h *Handler) inputItems(w http.ResponseWriter, r *http.Request) {
	_, rec := h.stored(w, r)
	if rec == nil {
		return
	}
	q := r.URL.Query()
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "limit", Message: "limit: must be between 1 and 100"})
			return
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "":
		order = "desc"
	case "asc", "desc":
	default:
		h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "order", Message: "order: must be asc or desc"})
		return
	}
	var items []json.RawMessage
	if len(rec.Input) > 0 {
		if err := json.Unmarshal(rec.Input, &items); err != nil {
			h.WriteError(w, err)
			return
		}
	}
	if order == "desc" {
		slices.Reverse(items)
	}
	if a := q.Get("after"); a != "" {
		i := slices.IndexFunc(items, func(it json.RawMessage) bool { return itemID(it) == a })
		if i < 0 {
			h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "after", Message: fmt.Sprintf("after: no input item %q in this response", a)})
			return
		}
		items = items[i+1:]
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	b := []byte(`{"object":"list","data":[`)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"first_id":`...)
	b = appendIDOrNull(b, items, 0)
	b = append(b, `,"last_id":`...)
	b = appendIDOrNull(b, items, len(items)-1)
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	b = append(b, '}')
	h.writeJSON(w, http.StatusOK, b)
}

func itemID(it json.RawMessage) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(it, &v)
	return v.ID
}

func appendIDOrNull(b []byte, items []json.RawMessage, i int) []byte {
	if i < 0 || i >= len(items) {
		return append(b, "null"...)
	}
	id, _ := json.Marshal(itemID(items[i]))
	return append(b, id...)
}

// inProgress reports whether rec's segment is the one its run is running.
func (h *Handler) inProgress(ctx context.Context, principal string, rec *record) bool {
	run, err := h.cfg.Engine.Run(ctx, rec.RunID)
	if err != nil || run.Status != bridge.StatusRunning {
		return false
	}
	segs, err := h.rec.segments(ctx, principal, rec.RunID)
	return err == nil && len(segs) > 0 && segs[len(segs)-1].ID == rec.ID
}

// stop finds the caller's response id and aborts its run when the
// response is the one the run is running.
func (h *Handler) stop(ctx context.Context, principal, id string) (*record, error) {
	rec, err := h.rec.get(ctx, principal, id)
	if err != nil {
		return nil, err
	}
	if h.inProgress(ctx, principal, rec) {
		if _, err := h.cfg.Engine.Abort(ctx, rec.RunID); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	principal := bridge.PrincipalFromContext(ctx)
	rec, err := h.stop(ctx, principal, r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if err := h.cfg.Responses.DeleteResponse(ctx, principal, rec.ID); err != nil {
		h.WriteError(w, err)
		return
	}
	id, _ := json.Marshal(rec.ID)
	b := append([]byte(`{"id":`), id...)
	b = append(b, `,"object":"response","deleted":true}`...)
	h.writeJSON(w, http.StatusOK, b)
}

func (h *Handler) cancelResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	principal := bridge.PrincipalFromContext(ctx)
	rec, err := h.stop(ctx, principal, r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.writeObject(ctx, w, principal, rec)
}

// unsupported answers the endpoints the bridge does not serve (context
// compaction, input token counts) with an OpenAI error, after the checks
// every create-like request gets.
func (h *Handler) unsupported(w http.ResponseWriter, r *http.Request) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	var v struct {
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		h.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "request body: invalid JSON"))
		return
	}
	var model string
	if json.Unmarshal(v.Model, &model) != nil || model == "" {
		h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid, Param: "model", Message: "model: required"})
		return
	}
	h.WriteError(w, bridge.Errorf(bridge.CodeUnsupported, "%s is not supported by this bridge", r.URL.Path))
}

// ---- helpers ----------------------------------------------------------------

// dropped records what the encoder dropped on the run and returns the
// run's whole list.
func (h *Handler) dropped(ctx context.Context, runID string, enc []string) []string {
	ctx = context.WithoutCancel(ctx)
	if len(enc) > 0 {
		if err := h.cfg.Engine.RecordDropped(ctx, runID, enc); err != nil {
			h.cfg.Logger.Warn("record dropped", "run", runID, "err", err)
		}
	}
	run, err := h.cfg.Engine.Run(ctx, runID)
	if err != nil {
		return enc
	}
	return run.Dropped
}

// failure is the error a failed final stands for.
func failure(f *bridge.Final) *bridge.Error {
	if f.Error != nil {
		return f.Error
	}
	return bridge.Errorf(bridge.CodeUpstream, "%s", f.Reason)
}

var _ inbound.Dialect = (*Handler)(nil)
