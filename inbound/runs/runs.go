// Package runs serves the run API common to every dialect: a run's state,
// its events replayed then followed (rendered in the run's inbound
// dialect), cancel (and stop, its alias), steer, a session's history in a
// chosen dialect's shape, and, when a dialect creates runs on this API
// (Hermes' POST /v1/runs), run creation; and a session's channel, every
// run of the session as it happens (channel.go).
package runs

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
)

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// Dialects renders runs by inbound dialect name. Default renders errors
	// where no run names its dialect, and runs of a dialect not listed.
	Dialects map[string]inbound.Dialect
	Default  inbound.Dialect
	// Create, when set, serves POST /v1/runs (the dialect whose clients
	// start runs on this API: Hermes).
	Create http.Handler
	// Channel limits (zero: the defaults): open session channels per
	// principal and per session, how often an idle one is kept alive, and
	// how often one over a store other replicas share reads it without a
	// signal (DefaultChannelPoll).
	ChannelsPerPrincipal int
	ChannelsPerSession   int
	ChannelKeepAlive     time.Duration
	ChannelPoll          time.Duration
}

// RunWriter is implemented by a dialect with its own run object (Hermes'
// hermes.run): GET, cancel, stop and steer of its runs answer in it.
type RunWriter interface {
	// WriteRun writes the run object.
	WriteRun(w http.ResponseWriter, r *http.Request, run *bridge.Run)
	// WriteSteer writes the answer to an accepted steer.
	WriteSteer(w http.ResponseWriter, run *bridge.Run)
}

// EventServer is implemented by a dialect whose resume cursors are its own
// (Hermes numbers frames, not events): it reads the cursor of r and
// subscribes itself.
type EventServer interface {
	ServeRunEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run)
}

// RunPager is implemented by a dialect whose history pages count runs
// rather than messages (A2A: one task per run): its limit is in runs.
type RunPager interface {
	PagesByRun()
}

// SteerDecoder is implemented by a dialect with its own steer body.
type SteerDecoder interface {
	DecodeSteer(body []byte) (bridge.Message, error)
}

// Handler serves the run API. It is safe for concurrent use.
type Handler struct {
	cfg   Config
	mux   *http.ServeMux
	chans channels
}

// New returns the handler.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	for _, p := range h.Routes() {
		switch p {
		case "GET /v1/runs/{run}":
			h.mux.HandleFunc(p, h.get)
		case "GET /v1/runs/{run}/events":
			// A resume that asks for an acceptance only (Prefer:
			// respond-async) is answered 202: the run's output is on its
			// session's channel.
			h.mux.Handle(p, inbound.Accept(http.HandlerFunc(h.events)))
		case "POST /v1/runs/{run}/cancel", "POST /v1/runs/{run}/stop":
			h.mux.HandleFunc(p, h.cancel)
		case "POST /v1/runs/{run}/steer":
			h.mux.HandleFunc(p, h.steer)
		case "POST /v1/runs":
			h.mux.Handle(p, h.cfg.Create)
		case "GET /v1/sessions/{session}/history":
			h.mux.HandleFunc(p, h.history)
		case "GET /v1/sessions/{session}/events":
			h.mux.HandleFunc(p, h.sessionEvents)
		}
	}
	return h
}

// Routes lists the patterns the handler serves.
func (h *Handler) Routes() []string {
	routes := []string{"GET /v1/runs/{run}", "GET /v1/runs/{run}/events", "POST /v1/runs/{run}/cancel",
		"POST /v1/runs/{run}/stop", "POST /v1/runs/{run}/steer", "GET /v1/sessions/{session}/history",
		"GET /v1/sessions/{session}/events"}
	if h.cfg.Create != nil {
		routes = append(routes, "POST /v1/runs")
	}
	return routes
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// run is the run the path names and its dialect; nil when there is none
// (answered).
func (h *Handler) run(w http.ResponseWriter, r *http.Request) (*bridge.Run, inbound.Dialect) {
	run, err := h.cfg.Engine.Run(r.Context(), r.PathValue("run"))
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return nil, nil
	}
	return run, h.dialect(run.Inbound)
}

// format is the dialect the query's format names (the default's when
// none) for a what (history, channel); nil when there is none (answered).
func (h *Handler) format(w http.ResponseWriter, r *http.Request, what string) inbound.Dialect {
	format := r.URL.Query().Get("format")
	if format == "" {
		format = h.cfg.Default.Name()
	}
	d, ok := h.cfg.Dialects[format]
	if !ok {
		h.cfg.Default.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "unknown %s format %q", what, format))
		return nil
	}
	return d
}

func (h *Handler) dialect(name string) inbound.Dialect {
	if d, ok := h.cfg.Dialects[name]; ok {
		return d
	}
	return h.cfg.Default
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	if run, _ := h.run(w, r); run != nil {
		h.writeRun(w, r, run)
	}
}

// writeRun answers with the run object of the run's dialect, else the run
// API's own.
func (h *Handler) writeRun(w http.ResponseWriter, r *http.Request, run *bridge.Run) {
	if rw, ok := h.dialect(run.Inbound).(RunWriter); ok {
		rw.WriteRun(w, r, run)
		return
	}
	writeRun(w, run)
}

// events replays the run's events after the client's cursor (Last-Event-ID
// or ?after=: a frame id of this run, or a bare event seq), then follows
// live ones. The dialect renders the stream the cursor's frame was part of
// from its start, with a fresh encoder, and the frames up to the cursor's
// are dropped: what the client gets is byte for byte what followed that
// frame (inbound.Resume, inbound.SkipFrames).
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	run, d := h.run(w, r)
	if run == nil {
		return
	}
	id := r.PathValue("run")
	if es, ok := d.(EventServer); ok {
		es.ServeRunEvents(w, r, run)
		return
	}
	c := inbound.LastEventID(r, "after")
	cur, ok := inbound.ParseCursor(id, c)
	if !ok {
		d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "cursor %q is not an event id of run %s", c, id))
		return
	}
	run, events, err := inbound.Resume(r.Context(), h.cfg.Engine, id, cur)
	if err != nil {
		d.WriteError(w, err)
		return
	}
	d.ServeEvents(inbound.SkipFrames(w, cur), r, run, events)
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	run, err := h.cfg.Engine.Abort(r.Context(), r.PathValue("run"))
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	h.writeRun(w, r, run)
}

// steer adds the body's user input to a running run (Engine.Steer). A run
// that is not running, or has decided its outcome, answers 409 with the
// code run_not_accepting_steer: the steer is reported back, never lost.
func (h *Handler) steer(w http.ResponseWriter, r *http.Request) {
	run, d := h.run(w, r)
	if run == nil {
		return
	}
	id := r.PathValue("run")
	body, err := inbound.ReadBody(w, r, 0)
	if err != nil {
		d.WriteError(w, err)
		return
	}
	var msg bridge.Message
	if sd, ok := d.(SteerDecoder); ok {
		msg, err = sd.DecodeSteer(body)
	} else {
		msg, err = decodeSteer(body)
	}
	if err != nil {
		d.WriteError(w, err)
		return
	}
	if err := h.cfg.Engine.Steer(r.Context(), id, msg); err != nil {
		be := bridge.AsError(err)
		if be.Code == bridge.CodeConflict {
			be = &bridge.Error{Code: bridge.CodeConflict, Message: be.Message, UpstreamCode: "run_not_accepting_steer"}
		}
		d.WriteError(w, be)
		return
	}
	if rw, ok := d.(RunWriter); ok {
		rw.WriteSteer(w, run)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "run.steer", "run_id": id, "accepted": true})
}

// decodeSteer reads the run API's steer body: {"input"|"message"|"text":
// "..."}.
func decodeSteer(body []byte) (bridge.Message, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return bridge.Message{}, bridge.Errorf(bridge.CodeInvalid, "request body: want a JSON object")
	}
	for _, k := range []string{"input", "message", "text"} {
		var s string
		if raw, ok := v[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(s)}}, nil
		}
	}
	return bridge.Message{}, bridge.Errorf(bridge.CodeInvalid, "request.input: missing (a string in input, message or text)")
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	d := h.format(w, r, "history")
	if d == nil {
		return
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 {
			d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "limit must be between 1 and 1000"))
			return
		}
		limit = n
	}
	_, byRun := d.(RunPager)
	page, err := h.cfg.Engine.QueryHistory(r.Context(), r.PathValue("session"),
		bridge.HistoryQuery{Before: q.Get("cursor"), Limit: limit, ByRun: byRun, Superseded: inbound.IncludeSuperseded(r)})
	if err != nil {
		d.WriteError(w, err)
		return
	}
	body, err := d.History(page)
	if err != nil {
		d.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// runJSON is the run API's own view of a run.
type runJSON struct {
	*bridge.Run
	LastEventID string `json:"last_event_id,omitempty"`
}

func writeRun(w http.ResponseWriter, run *bridge.Run) {
	v := runJSON{Run: run}
	if run.LastSeq > 0 {
		v.LastEventID = bridge.EventID(run.ID, run.LastSeq)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
