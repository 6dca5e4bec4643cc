package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/anthropic"
	"github.com/bridge-dev/bridge/mapping/openai"
)

// DefaultPingInterval is how long a stream may stay silent before a ping.
const DefaultPingInterval = 10 * time.Second

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// CountTokens counts the input tokens of a count_tokens request at the
	// upstream its model routes to. ok is false when that upstream cannot
	// count (it is not an Anthropic one): the handler then answers with
	// wire.EstimateInputTokens. nil always estimates.
	CountTokens func(ctx context.Context, req *bridge.Request) (n int64, ok bool, err error)
	// MaxBody bounds request bodies (default inbound.DefaultMaxBody).
	MaxBody int64
	// PingInterval is the silence after which a stream gets a ping
	// (default DefaultPingInterval).
	PingInterval time.Duration
	Logger       *slog.Logger
}

// Handler serves the dialect. It is safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// Headers the handler reads and sets (the same as every dialect's).
const (
	HeaderSessionID   = "X-Session-Id"
	HeaderRunID       = "X-Run-Id"
	HeaderClientRunID = "X-Client-Run-Id"
	// HeaderTokenCount is "estimate" on a count_tokens answer the bridge
	// estimated rather than asked the upstream for.
	HeaderTokenCount = "X-Bridge-Token-Count"
)

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /v1/messages", h.messages)
	h.mux.HandleFunc("POST /v1/messages/count_tokens", h.countTokens)
	return h
}

// Routes lists the patterns the handler serves, for a parent mux.
func (h *Handler) Routes() []string {
	return []string{"POST /v1/messages", "POST /v1/messages/count_tokens"}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Name implements inbound.Dialect.
func (h *Handler) Name() string { return wire.Dialect }

// WriteError implements inbound.Dialect: an Anthropic error object
// ({"type":"error","error":{type,message}}) with its status.
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	be := bridge.AsError(err)
	status, body := wire.EncodeError(be)
	w.Header().Set("Content-Type", "application/json")
	if be.RetryAfter > 0 {
		w.Header().Set("Retry-After", inbound.RetryAfter(be.RetryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// History implements inbound.Dialect. Anthropic has no history API of its
// own; a session's history is rendered in the chatkit OpenAI-compatible
// shape (mapping/openai.EncodeHistory), the one a chatkit frontend reads.
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) { return openai.EncodeHistory(p) }

func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	req, err := wire.DecodeRequest(body)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	req.Full = true
	req.SessionID = r.Header.Get(HeaderSessionID)
	req.Detached = req.SessionID != "" // a named session can be resumed
	req.ClientRunID = r.Header.Get(HeaderClientRunID)

	run, err := h.cfg.Engine.Start(r.Context(), req)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	// A request that continues a run (the client's tool results) is
	// answered with the new model call only.
	_, events, err := h.cfg.Engine.Subscribe(r.Context(), run.ID, run.LastSeq)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set(HeaderRunID, run.ID)
	w.Header().Set(HeaderSessionID, run.SessionID)
	opt := streamOptions(run, req.Model)
	if req.Stream {
		h.stream(w, r, run, events, opt)
		return
	}
	h.complete(w, r, run, events, opt)
}

// streamOptions names the message: "msg_" and the run id, and the model
// the client asked for.
func streamOptions(run *bridge.Run, model string) wire.StreamOptions {
	if model == "" {
		model = run.Model
	}
	return wire.StreamOptions{ID: "msg_" + run.ID, Model: model}
}

// complete answers a non-streaming request with one message object.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	acc := wire.NewAccumulator(opt)
	for ev, err := range events {
		if err != nil {
			h.streamGone(r, run, err)
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		}
		acc.Add(&ev)
	}
	body, err := acc.Response()
	inbound.SetDropped(w.Header(), h.dropped(r.Context(), run.ID, acc.Dropped()))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// item is one event (or the error ending the stream) on its way from the
// producer to the writer.
type item struct {
	ev  bridge.Event
	err error
}

// produce ranges over events in a goroutine of its own, so the writer can
// send pings while the upstream is quiet. It stops when stop is closed (the
// handler returned) or the stream ends; a panic in the stream ends it with
// an internal error.
func (h *Handler) produce(events bridge.Stream, stop <-chan struct{}) <-chan item {
	out := make(chan item, 16)
	go func() {
		defer close(out)
		defer func() {
			if p := recover(); p != nil {
				h.cfg.Logger.Error("run stream panicked", "panic", fmt.Sprint(p))
				select {
				case out <- item{err: bridge.Errorf(bridge.CodeInternal, "internal error")}:
				case <-stop:
				}
			}
		}()
		for ev, err := range events {
			select {
			case out <- item{ev: ev, err: err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// stream answers with SSE frames. Nothing is written until the upstream has
// answered: an upstream failure before its first byte becomes an ordinary
// error response with the status Anthropic uses for it.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	stop := make(chan struct{})
	defer close(stop)
	items := h.produce(events, stop)
	var held []bridge.Event
hold:
	for {
		var it item
		var ok bool
		select {
		case it, ok = <-items:
		case <-r.Context().Done():
			return
		}
		switch {
		case !ok:
			break hold
		case it.err != nil:
			h.streamGone(r, run, it.err)
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		case it.ev.Kind == bridge.KindRunStarted || it.ev.Kind == bridge.KindUserMessage:
			held = append(held, it.ev)
			continue
		case it.ev.Kind == bridge.KindFinal && it.ev.Final != nil && it.ev.Final.Status == bridge.StatusFailed:
			inbound.SetDropped(w.Header(), h.dropped(r.Context(), run.ID, nil))
			h.WriteError(w, finalError(it.ev.Final))
			return
		}
		held = append(held, it.ev)
		break
	}
	// The upstream answered: the run now knows what its outbound dropped.
	dropped := run.Dropped
	if cur, err := h.cfg.Engine.Run(context.WithoutCancel(r.Context()), run.ID); err == nil {
		dropped = cur.Dropped
	}
	h.serveEvents(w, r, run, opt, dropped, held, items, 0)
}

// gate passes writes through once opened; before, it discards them (the
// frames a resumed stream's client already has).
type gate struct {
	w    io.Writer
	open bool
}

func (g *gate) Write(p []byte) (int, error) {
	if !g.open {
		return len(p), nil
	}
	return g.w.Write(p)
}

// serveEvents writes SSE frames for the held events, then for the rest,
// with a ping after every PingInterval of silence. With prefix > 0 the
// encoder first renders the run's events up to seq prefix without writing
// them, so the stream goes on exactly where the client's left off.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, opt wire.StreamOptions,
	dropped []string, held []bridge.Event, items <-chan item, prefix int64) {
	inbound.SetDropped(w.Header(), dropped)
	sw := inbound.NewSSEWriter(w)
	g := &gate{w: sw, open: prefix <= 0}
	enc := wire.NewStreamEncoder(g, opt)
	if prefix > 0 {
		h.replayPrefix(r, run, enc, prefix)
		g.open = true
	}
	w.WriteHeader(http.StatusOK)
	for i := range held {
		if err := enc.Encode(&held[i]); err != nil {
			return
		}
	}
	ping := time.NewTimer(h.cfg.PingInterval)
	defer ping.Stop()
	for items != nil {
		select {
		case it, ok := <-items:
			if !ok {
				items = nil
				continue
			}
			if it.err != nil {
				h.streamGone(r, run, it.err)
				return
			}
			if err := enc.Encode(&it.ev); err != nil {
				return // the client went away
			}
			ping.Reset(h.cfg.PingInterval)
		case <-ping.C:
			if err := enc.Ping(); err != nil {
				return
			}
			ping.Reset(h.cfg.PingInterval)
		case <-r.Context().Done():
			return
		}
	}
	_ = enc.Close()
	inbound.SetDroppedTrailer(w.Header(), h.dropped(r.Context(), run.ID, enc.Dropped()))
}

// replayPrefix feeds the encoder the run's events up to seq upTo.
func (h *Handler) replayPrefix(r *http.Request, run *bridge.Run, enc *wire.StreamEncoder, upTo int64) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	_, events, err := h.cfg.Engine.Subscribe(ctx, run.ID, 0)
	if err != nil {
		return
	}
	for ev, err := range events {
		if err != nil || ev.Seq > upTo {
			return
		}
		_ = enc.Encode(&ev)
		if ev.Seq == upTo {
			return
		}
	}
}

// ServeEvents implements inbound.Dialect: a replay (and follow) of a run's
// events as the Messages stream its client was sent, each frame with its
// event id. A replay after a cursor (Last-Event-ID) continues the stream
// the client was reading: the frames up to the cursor are rendered but not
// sent, so block indices and the open block carry on, and the remaining
// frames are byte for byte the ones the live stream had.
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	stop := make(chan struct{})
	defer close(stop)
	items := h.produce(events, stop)
	opt := streamOptions(run, "")
	var held []bridge.Event
	var prefix int64
	select {
	case it, ok := <-items:
		switch {
		case !ok:
			items = nil
		case it.err != nil:
			h.streamGone(r, run, it.err)
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		default:
			held = append(held, it.ev)
			prefix = it.ev.Seq - 1
		}
	case <-r.Context().Done():
		return
	}
	h.serveEvents(w, r, run, opt, run.Dropped, held, items, prefix)
}

// countTokens answers POST /v1/messages/count_tokens: the upstream's count
// when the model routes to an Anthropic upstream, else an estimate (see
// wire.EstimateInputTokens), marked by X-Bridge-Token-Count: estimate.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	req, err := wire.DecodeCountTokens(body)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	n, counted := int64(0), false
	if h.cfg.CountTokens != nil {
		if n, counted, err = h.cfg.CountTokens(r.Context(), req); err != nil {
			h.WriteError(w, err)
			return
		}
	}
	if !counted {
		n = wire.EstimateInputTokens(req)
		w.Header().Set(HeaderTokenCount, "estimate")
	}
	inbound.SetDropped(w.Header(), req.Dropped)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"input_tokens":` + strconv.FormatInt(n, 10) + "}"))
}

// streamGone logs why a subscription ended early: the client left, or the
// store failed (the client then sees the stream cut, and can resume).
func (h *Handler) streamGone(r *http.Request, run *bridge.Run, err error) {
	if errors.Is(err, context.Canceled) || r.Context().Err() != nil {
		return
	}
	h.cfg.Logger.Warn("run stream ended early", "run", run.ID, "err", err)
}

// dropped records what the encoder dropped on the run and returns the run's
// whole list.
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

func finalError(f *bridge.Final) *bridge.Error {
	if f.Error != nil {
		return f.Error
	}
	return bridge.Errorf(bridge.CodeUpstream, "%s", f.Reason)
}

var _ inbound.Dialect = (*Handler)(nil)
