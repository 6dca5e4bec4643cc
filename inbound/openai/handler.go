// Package openai serves the OpenAI Chat Completions API: POST
// /v1/chat/completions (stream and non-stream) and GET /v1/models, over
// whatever upstream the engine routes the model to.
package openai

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/openai"
)

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// Models lists the routed model names for GET /v1/models.
	Models func() []string
	// MaxBody bounds request bodies (default inbound.DefaultMaxBody).
	MaxBody int64
	Logger  *slog.Logger
}

// Handler serves the dialect. It is safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// Headers the handler reads and sets.
const (
	HeaderSessionID   = inbound.HeaderSessionID
	HeaderRunID       = inbound.HeaderRunID
	HeaderClientRunID = inbound.HeaderClientRunID
)

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /v1/chat/completions", h.chat)
	h.mux.HandleFunc("GET /v1/models", h.models)
	h.mux.HandleFunc("GET /v1/models/{model}", h.model)
	return h
}

// Routes lists the patterns the handler serves, for a parent mux.
func (h *Handler) Routes() []string {
	return []string{"POST /v1/chat/completions", "GET /v1/models", "GET /v1/models/{model}"}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Name implements inbound.Dialect.
func (h *Handler) Name() string { return wire.Dialect }

// WriteError implements inbound.Dialect: an OpenAI error object.
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	inbound.WriteError(w, err, wire.EncodeError)
}

// History implements inbound.Dialect.
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) { return wire.EncodeHistory(p) }

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	req, err := inbound.Decode(w, r, h.cfg.MaxBody, wire.DecodeRequest)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	inbound.Stateless(r, req)
	if req.Stream && req.IncludeUsage {
		req.Render = renderIncludeUsage
	}
	run, events, batch, err := inbound.StartRun(w, r, h.cfg.Engine, req)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	opt := streamOptions(run, req.Model)
	// This request's own stream_options rule its response; a continued run
	// keeps the rendering its first request stored.
	opt.IncludeUsage = req.Stream && req.IncludeUsage
	if req.Stream {
		h.stream(w, r, run, events, opt, batch)
		return
	}
	h.complete(w, r, run, events, opt)
}

// renderIncludeUsage is Run.Render for a stream that asked for usage.
var renderIncludeUsage = json.RawMessage(`{"include_usage":true}`)

// streamOptions renders run as its client first saw it.
func streamOptions(run *bridge.Run, model string) wire.StreamOptions {
	if model == "" {
		model = run.Model
	}
	var render struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(run.Render, &render) // absent or foreign: the defaults
	return wire.StreamOptions{ID: "chatcmpl-" + run.ID, Model: model, Created: run.Created.Unix(), IncludeUsage: render.IncludeUsage}
}

// complete answers a non-streaming request with one chat.completion.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	acc := wire.NewAccumulator(opt)
	var final *bridge.Final
	for ev, err := range events {
		if err != nil {
			inbound.EndedEarly(h.cfg.Logger, r, run, err)
			return
		}
		if ev.Kind == bridge.KindFinal {
			final = ev.Final
		}
		acc.Add(&ev)
	}
	body, err := acc.Response()
	dropped := inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, final, acc.Dropped())
	inbound.SetDropped(w.Header(), dropped)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// stream answers with SSE chunks. Nothing is written until the upstream has
// answered: an upstream failure before its first byte becomes an ordinary
// error response with the upstream's status.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions, batch *inbound.Batch) {
	p := inbound.Pull(events)
	defer p.Stop()
	held, failed := p.Head(func(k bridge.Kind) bool { return k == bridge.KindRunStarted })
	if failed != nil {
		h.WriteError(w, inbound.FinalError(failed))
		return
	}
	if p.Failed(h.cfg.Logger, r, run) {
		return
	}
	h.serveEvents(w, r, run, opt, held, p, batch)
}

// serveEvents writes SSE frames for the held events, then for the rest.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, opt wire.StreamOptions,
	held []bridge.Event, p *inbound.Pulled, batch *inbound.Batch) {
	inbound.SetDropped(w.Header(), run.Dropped)
	sw := batch.Writer(w)
	w.WriteHeader(http.StatusOK)
	enc := wire.NewStreamEncoder(sw, opt)
	var final *bridge.Final
	for i := range held {
		if held[i].Kind == bridge.KindFinal {
			final = held[i].Final
		}
		if err := enc.Encode(&held[i]); err != nil {
			return
		}
	}
	if err := sw.Flush(); err != nil { // the first visible event, at once
		return
	}
	for ev := range p.Events {
		if ev.Kind == bridge.KindFinal {
			final = ev.Final
		}
		if err := enc.Encode(&ev); err != nil {
			return // the client went away
		}
	}
	if p.Failed(h.cfg.Logger, r, run) {
		return
	}
	_ = enc.Close()
	dropped := inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, final, enc.Dropped())
	inbound.SetDroppedTrailer(w.Header(), dropped)
}

// ServeEvents implements inbound.Dialect: a replay (and follow) of a run's
// events as the Chat Completions chunks its client was sent.
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	p := inbound.Pull(events)
	defer p.Stop()
	h.serveEvents(w, r, run, streamOptions(run, ""), nil, p, nil)
}

func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range h.routed() {
		list.Data = append(list.Data, model{ID: m, Object: "model", Created: started.Unix(), OwnedBy: "bridge"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (h *Handler) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("model")
	if !slices.Contains(h.routed(), id) {
		h.WriteError(w, bridge.Errorf(bridge.CodeNotFound, "The model '%s' does not exist", id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "model", "created": started.Unix(), "owned_by": "bridge"})
}

func (h *Handler) routed() []string {
	if h.cfg.Models == nil {
		return nil
	}
	return h.cfg.Models()
}

var started = time.Now()

var _ inbound.Dialect = (*Handler)(nil)
