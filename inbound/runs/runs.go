// Package runs serves the run API common to every dialect: a run's state,
// its events replayed then followed (rendered in the run's inbound
// dialect), cancel, and a session's history in a chosen dialect's shape.
package runs

import (
	"encoding/json"
	"net/http"
	"strconv"

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
}

// Handler serves the run API. It is safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the handler.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	for _, p := range h.Routes() {
		switch p {
		case "GET /v1/runs/{run}":
			h.mux.HandleFunc(p, h.get)
		case "GET /v1/runs/{run}/events":
			h.mux.HandleFunc(p, h.events)
		case "POST /v1/runs/{run}/cancel":
			h.mux.HandleFunc(p, h.cancel)
		case "GET /v1/sessions/{session}/history":
			h.mux.HandleFunc(p, h.history)
		}
	}
	return h
}

// Routes lists the patterns the handler serves.
func (h *Handler) Routes() []string {
	return []string{"GET /v1/runs/{run}", "GET /v1/runs/{run}/events", "POST /v1/runs/{run}/cancel",
		"GET /v1/sessions/{session}/history"}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) dialect(name string) inbound.Dialect {
	if d, ok := h.cfg.Dialects[name]; ok {
		return d
	}
	return h.cfg.Default
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	run, err := h.cfg.Engine.Run(r.Context(), r.PathValue("run"))
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	writeRun(w, run)
}

// events replays the run's events after the client's cursor (Last-Event-ID
// or ?after=, an event id of this run or a bare seq), then follows live ones.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	run, err := h.cfg.Engine.Run(r.Context(), id)
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	d := h.dialect(run.Inbound)
	after, err := cursor(id, inbound.LastEventID(r, "after"))
	if err != nil {
		d.WriteError(w, err)
		return
	}
	run, events, err := h.cfg.Engine.Subscribe(r.Context(), id, after)
	if err != nil {
		d.WriteError(w, err)
		return
	}
	d.ServeEvents(w, r, run, events)
}

// cursor parses a resume cursor for run: "" is the start; an event id must
// name this run.
func cursor(run, c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	if seq, err := strconv.ParseInt(c, 10, 64); err == nil && seq >= 0 {
		return seq, nil
	}
	r, seq, ok := bridge.ParseEventID(c)
	if !ok || r != run {
		return 0, bridge.Errorf(bridge.CodeInvalid, "cursor %q is not an event id of run %s", c, run)
	}
	return seq, nil
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	run, err := h.cfg.Engine.Abort(r.Context(), r.PathValue("run"))
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	writeRun(w, run)
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = h.cfg.Default.Name()
	}
	d, ok := h.cfg.Dialects[format]
	if !ok {
		h.cfg.Default.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "unknown history format %q", format))
		return
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 {
			d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "limit must be between 1 and 1000"))
			return
		}
		limit = n
	}
	page, err := h.cfg.Engine.History(r.Context(), r.PathValue("session"), q.Get("cursor"), limit)
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
