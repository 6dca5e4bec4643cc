package anthropic

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
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
	HeaderSessionID   = inbound.HeaderSessionID
	HeaderRunID       = inbound.HeaderRunID
	HeaderClientRunID = inbound.HeaderClientRunID
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
	inbound.WriteError(w, err, wire.EncodeError)
}

// History implements inbound.Dialect. Anthropic has no history API of its
// own; a session's history is rendered in the chatkit OpenAI-compatible
// shape (mapping/openai.EncodeHistory), the one a chatkit frontend reads.
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) { return openai.EncodeHistory(p) }

func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	req, err := inbound.Decode(w, r, h.cfg.MaxBody, wire.DecodeRequest)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	inbound.Stateless(r, req)
	// Anthropic's pings write from another goroutine, so its stream
	// flushes every event and makes no batched writer.
	run, events, _, err := inbound.StartRun(w, r, h.cfg.Engine, req)
	if err != nil {
		h.WriteError(w, err)
		return
	}
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
	var final *bridge.Final
	for ev, err := range events {
		if err != nil {
			inbound.EndedEarly(h.cfg.Logger, r, run, err)
			h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
			return
		}
		if ev.Kind == bridge.KindFinal {
			final = ev.Final
		}
		acc.Add(&ev)
	}
	body, err := acc.Response()
	inbound.SetDropped(w.Header(), inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, final, acc.Dropped()))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// stream answers with SSE frames. Nothing is written until the upstream has
// answered: an upstream failure before its first byte becomes an ordinary
// error response with the status Anthropic uses for it.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	p := inbound.Pull(events)
	defer p.Stop()
	held, failed := p.Head(func(k bridge.Kind) bool { return k == bridge.KindRunStarted || k == bridge.KindUserMessage })
	if failed != nil {
		inbound.SetDropped(w.Header(), inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, failed, nil))
		h.WriteError(w, inbound.FinalError(failed))
		return
	}
	if p.Failed(h.cfg.Logger, r, run) {
		h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run's events could not be read"))
		return
	}
	// The header says what the inbound decoder dropped; the trailer the
	// whole list, the outbound's included.
	h.serveEvents(w, r, run, opt, run.Dropped, held, p)
}

// serveEvents writes SSE frames for the held events, then for the rest,
// with a ping after every PingInterval of silence.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, opt wire.StreamOptions,
	dropped []string, held []bridge.Event, events *inbound.Pulled) {
	inbound.SetDropped(w.Header(), dropped)
	// Every event is flushed on its own (no inbound.Batch): each upstream
	// chunk reaches the client as the matching Anthropic event, never
	// merged with the next one in a flush.
	sw := inbound.NewSSEWriter(w)
	enc := wire.NewStreamEncoder(sw, opt)
	w.WriteHeader(http.StatusOK)
	p := newPinger(enc, sw, h.cfg.PingInterval)
	defer p.close()
	var final *bridge.Final
	for i := range held {
		if held[i].Kind == bridge.KindFinal {
			final = held[i].Final
		}
		if err := p.encode(&held[i]); err != nil {
			return
		}
	}
	if err := p.flush(); err != nil { // the first visible event, at once
		return
	}
	for ev := range events.Events {
		if ev.Kind == bridge.KindFinal {
			final = ev.Final
		}
		if err := p.encode(&ev); err != nil {
			return // the client went away
		}
	}
	if events.Failed(h.cfg.Logger, r, run) {
		return
	}
	p.close()
	_ = enc.Close()
	inbound.SetDroppedTrailer(w.Header(), inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, final, enc.Dropped()))
}

// pinger writes a ping when the stream has been silent for the interval.
// The ping is written from the timer's goroutine while the handler waits
// for the next event; a mutex keeps it and the handler's frames apart, and
// after close nothing more is written. So the hot path has no goroutine
// hand-off: an event goes from the engine to the connection on the
// handler's goroutine.
type pinger struct {
	mu     sync.Mutex
	enc    *wire.StreamEncoder
	sw     *inbound.SSEWriter
	every  time.Duration
	t      *time.Timer
	closed bool
}

func newPinger(enc *wire.StreamEncoder, sw *inbound.SSEWriter, every time.Duration) *pinger {
	p := &pinger{enc: enc, sw: sw, every: every}
	p.t = time.AfterFunc(every, p.ping)
	return p
}

func (p *pinger) ping() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.enc.Ping() == nil && p.sw.Flush() == nil {
		p.t.Reset(p.every)
	}
}

// flush sends what the handler has written.
func (p *pinger) flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sw.Flush()
}

// encode writes ev's frames and restarts the silence.
func (p *pinger) encode(ev *bridge.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.enc.Encode(ev)
	if !p.closed {
		p.t.Reset(p.every)
	}
	return err
}

// close stops the pings; it is idempotent.
func (p *pinger) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.t.Stop()
}

// ServeEvents implements inbound.Dialect: a replay (and follow) of a run's
// events as the Messages stream its client was sent, each frame with its
// id. The events start where that stream started (inbound.Resume), so a
// fresh encoder renders its frames byte for byte, block indices and the
// open block included; the run API drops those before the cursor.
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	p := inbound.Pull(events)
	defer p.Stop()
	h.serveEvents(w, r, run, streamOptions(run, ""), run.Dropped, nil, p)
}

// countTokens answers POST /v1/messages/count_tokens: the upstream's count
// when the model routes to an Anthropic upstream, else an estimate (see
// wire.EstimateInputTokens), marked by X-Bridge-Token-Count: estimate.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	req, err := inbound.Decode(w, r, h.cfg.MaxBody, wire.DecodeCountTokens)
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

var _ inbound.Dialect = (*Handler)(nil)
