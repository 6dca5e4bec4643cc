package hermes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/hermes"
)

// RunFinder finds a run by the id its client proposed (the store's
// RunByClientID): an Idempotency-Key retry finds its run after a restart.
type RunFinder interface {
	RunByClientID(ctx context.Context, principal, clientRunID string) (*bridge.Run, error)
}

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// Runs finds runs by Idempotency-Key; nil keeps the keys in memory.
	Runs RunFinder
	// Model is the model runs ask the router for when the client names
	// none.
	Model string
	// MaxBody bounds request bodies (default inbound.DefaultMaxBody).
	MaxBody int64
	// KeepAlive is the gap after which a quiet stream gets a ": keepalive"
	// comment, as Hermes sends (default 30s; negative: none).
	KeepAlive time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
}

// Handler serves the dialect. It is safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux

	mu       sync.Mutex
	sessions map[sessionKey]*session
	idem     map[sessionKey]*idemEntry // by (principal, Idempotency-Key)
}

type sessionKey struct{ principal, id string }

// session is what the handler knows of a session beyond the store.
type session struct {
	turn sync.Mutex // held while a turn is checked and started

	id, title, model, endReason, parent, system string
	created                                     time.Time
	ended                                       time.Time
	deleted                                     bool
	seed                                        []bridge.Message // a fork's transcript, until its first turn
	lastRun                                     string
}

// last is the session's latest run id.
func (h *Handler) last(s *session) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.lastRun
}

type idemEntry struct {
	mu    sync.Mutex
	runID string
}

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 30 * time.Second
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), sessions: map[sessionKey]*session{}, idem: map[sessionKey]*idemEntry{}}
	h.mux.HandleFunc("GET /api/sessions", h.listSessions)
	h.mux.HandleFunc("POST /api/sessions", h.createSession)
	h.mux.HandleFunc("GET /api/sessions/{id}", h.getSession)
	h.mux.HandleFunc("PATCH /api/sessions/{id}", h.patchSession)
	h.mux.HandleFunc("DELETE /api/sessions/{id}", h.deleteSession)
	h.mux.HandleFunc("GET /api/sessions/{id}/messages", h.messages)
	h.mux.HandleFunc("POST /api/sessions/{id}/fork", h.fork)
	h.mux.HandleFunc("POST /api/sessions/{id}/chat", h.chat)
	h.mux.HandleFunc("POST /api/sessions/{id}/chat/stream", h.chatStream)
	h.mux.HandleFunc("GET /api/sessions/{id}/chat/stream", h.resumeStream)
	h.mux.HandleFunc("GET /v1/capabilities", h.capabilities)
	h.mux.HandleFunc("POST /v1/runs", h.createRun)
	for _, p := range h.PublicRoutes() {
		h.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, []byte(`{"status":"ok","platform":"bridge"}`))
		})
	}
	return h
}

// PublicRoutes lists the health checks, which need no key (as Hermes').
func (h *Handler) PublicRoutes() []string { return []string{"GET /health", "GET /v1/health"} }

// Routes lists the patterns the dialect serves itself. POST /v1/runs is
// served through the common run API (CreateRun).
func (h *Handler) Routes() []string {
	return []string{"GET /api/sessions", "POST /api/sessions", "GET /api/sessions/{id}", "PATCH /api/sessions/{id}",
		"DELETE /api/sessions/{id}", "GET /api/sessions/{id}/messages", "POST /api/sessions/{id}/fork",
		"POST /api/sessions/{id}/chat", "POST /api/sessions/{id}/chat/stream", "GET /api/sessions/{id}/chat/stream",
		"GET /v1/capabilities"}
}

// CreateRun is the handler of POST /v1/runs, for the common run API's
// Config.Create.
func (h *Handler) CreateRun() http.Handler { return http.HandlerFunc(h.createRun) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Name implements inbound.Dialect.
func (h *Handler) Name() string { return wire.Dialect }

// WriteError implements inbound.Dialect: Hermes' error envelope.
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	be := bridge.AsError(err)
	if errors.Is(err, context.Canceled) {
		be = bridge.Errorf(bridge.CodeCanceled, "the request was cancelled")
	}
	inbound.WriteError(w, be, wire.EncodeError)
}

// History implements inbound.Dialect: the chatkit Hermes shape, for
// /v1/sessions/{id}/history?format=hermes.
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) {
	return wire.EncodeHistory(p, wire.HistoryOptions{Chatkit: true})
}

// DecodeSteer implements runs.SteerDecoder.
func (h *Handler) DecodeSteer(body []byte) (bridge.Message, error) { return wire.DecodeSteer(body) }

// WriteRun implements runs.RunWriter: the hermes.run object.
func (h *Handler) WriteRun(w http.ResponseWriter, r *http.Request, run *bridge.Run) {
	writeJSON(w, http.StatusOK, wire.EncodeRun(run, h.output(r.Context(), run)))
}

// WriteSteer implements runs.RunWriter.
func (h *Handler) WriteSteer(w http.ResponseWriter, run *bridge.Run) {
	writeJSON(w, http.StatusOK, wire.EncodeSteer(run.ID))
}

// output is a finished run's answer text.
func (h *Handler) output(ctx context.Context, run *bridge.Run) string {
	if !run.Status.Terminal() {
		return ""
	}
	msgs, err := h.cfg.Engine.RunMessages(ctx, run.ID)
	if err != nil {
		return ""
	}
	var out string
	for _, m := range msgs {
		if m.Role == bridge.RoleAssistant {
			out += m.Text()
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (h *Handler) capabilities(w http.ResponseWriter, r *http.Request) {
	v := map[string]any{
		"object":   "hermes.api_server.capabilities",
		"platform": "bridge",
		"model":    cmp.Or(h.cfg.Model, "bridge"),
		"auth":     map[string]any{"type": "bearer", "required": true},
		"features": map[string]bool{
			"chat_completions": true, "chat_completions_streaming": true, "responses_api": false,
			"reasoning_streaming": true, "run_submission": true, "run_status": true, "run_events_sse": true,
			"run_events_replay": true, "run_stop": true, "run_steer": true, "run_approval": false,
			"session_list": true, "session_create": true, "session_get": true, "session_update": true,
			"session_delete": true, "session_messages": true, "session_fork": true, "session_chat": true,
			"session_chat_stream": true, "session_stream_resume": true,
			"client_tools":         true, // tools in a turn body, and their results as tool messages
			"conversation_history": true, // on the session chat too, not only on /v1/runs
		},
		"endpoints": map[string]string{
			"runs": "/v1/runs", "run": "/v1/runs/{run_id}", "run_events": "/v1/runs/{run_id}/events",
			"run_stop": "/v1/runs/{run_id}/stop", "run_steer": "/v1/runs/{run_id}/steer",
			"sessions": "/api/sessions", "session": "/api/sessions/{id}", "session_messages": "/api/sessions/{id}/messages",
			"session_fork": "/api/sessions/{id}/fork", "session_chat": "/api/sessions/{id}/chat",
			"session_chat_stream": "/api/sessions/{id}/chat/stream", "history": "/v1/sessions/{id}/history?format=hermes",
			"chat_completions": "/v1/chat/completions",
		},
	}
	b, _ := json.Marshal(v)
	writeJSON(w, http.StatusOK, b)
}
