package adk

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/adk"
)

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// Store keeps the ADK sessions (the engine's store).
	Store Store
	// Apps lists the app names for GET /list-apps (the routed models).
	Apps func() []string
	// MaxBody bounds request bodies (default inbound.DefaultMaxBody).
	MaxBody int64
	Logger  *slog.Logger
	Now     func() time.Time
}

// Handler serves the dialect. It is safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux
	mu  sync.Mutex // the session indexes
}

const sessionsPath = "/apps/{app}/users/{user}/sessions"

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Apps == nil {
		cfg.Apps = func() []string { return nil }
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /list-apps", h.listApps)
	h.mux.HandleFunc("GET "+sessionsPath, h.listSessions)
	h.mux.HandleFunc("POST "+sessionsPath, h.createSession)
	h.mux.HandleFunc("GET "+sessionsPath+"/{session}", h.getSession)
	h.mux.HandleFunc("POST "+sessionsPath+"/{session}", h.createSessionWithID)
	h.mux.HandleFunc("DELETE "+sessionsPath+"/{session}", h.deleteSession)
	h.mux.HandleFunc("POST /run", h.run)
	h.mux.HandleFunc("POST /run_sse", h.run)
	return h
}

// Routes lists the patterns the handler serves, for a parent mux.
func (h *Handler) Routes() []string {
	return []string{"GET /list-apps", "GET " + sessionsPath, "POST " + sessionsPath,
		"GET " + sessionsPath + "/{session}", "POST " + sessionsPath + "/{session}", "DELETE " + sessionsPath + "/{session}",
		"POST /run", "POST /run_sse"}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Name implements inbound.Dialect.
func (h *Handler) Name() string { return wire.Dialect }

// WriteError implements inbound.Dialect: {"error": "..."} with its status.
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	var be *bridge.Error
	if !errors.As(err, &be) {
		h.cfg.Logger.Error("adk request failed", "err", err)
		be = bridge.AsError(err)
	}
	status, body := wire.EncodeError(be)
	inbound.WriteErrorBody(w, be, status, body, "application/json; charset=utf-8")
}

func (h *Handler) writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(b)
}

// listApps serves GET /list-apps: the routed models (the --model and the
// config's), each an app. A model name need not be an ADK app name
// (gpt-4o-mini has a hyphen): the bridge takes it as one all the same, so
// an ADK web UI offers every model.
func (h *Handler) listApps(w http.ResponseWriter, r *http.Request) {
	apps := []string{}
	for _, a := range h.cfg.Apps() {
		if appSegment(a) && !slices.Contains(apps, a) {
			apps = append(apps, a)
		}
	}
	sort.Strings(apps)
	h.writeJSON(w, apps)
}

// appSegment reports whether a model name can stand as the {app} of a
// session URL.
func appSegment(a string) bool { return a != "" && !strings.ContainsAny(a, "/?#") }

// isApp reports whether app names an app: an ADK app name, or one of
// the models GET /list-apps lists.
func (h *Handler) isApp(app string) bool {
	return wire.ValidAppName(app) || (appSegment(app) && slices.Contains(h.cfg.Apps(), app))
}

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	app, user := r.PathValue("app"), r.PathValue("user")
	ids, err := h.list(ctx, app, user)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	out := wire.SessionList{Sessions: []wire.Session{}, Page: 1}
	for _, id := range ids {
		rec, err := h.find(ctx, app, user, id)
		if err != nil {
			continue
		}
		s, err := h.view(ctx, rec, false)
		if err != nil {
			h.WriteError(w, err)
			return
		}
		out.Sessions = append(out.Sessions, *s)
	}
	out.Limit, out.TotalItems, out.TotalPages = len(out.Sessions), len(out.Sessions), 1
	h.writeJSON(w, out)
}

// createSession serves POST .../sessions: {"sessionId"?, "state"?} (a
// client-chosen id as the Python server takes it).
func (h *Handler) createSession(w http.ResponseWriter, r *http.Request) {
	id, state, err := h.sessionBody(w, r, false)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.created(w, r, id, state)
}

// createSessionWithID serves POST .../sessions/{session}: the body is
// {"state": {...}} (ADK-JS) or the state itself (Python).
func (h *Handler) createSessionWithID(w http.ResponseWriter, r *http.Request) {
	_, state, err := h.sessionBody(w, r, true)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.created(w, r, r.PathValue("session"), state)
}

func (h *Handler) created(w http.ResponseWriter, r *http.Request, id string, state json.RawMessage) {
	app, user := r.PathValue("app"), r.PathValue("user")
	if !h.isApp(app) {
		h.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "Invalid app name: %s", app))
		return
	}
	rec, err := h.create(r.Context(), app, user, id, state)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	s, err := h.view(r.Context(), rec, false)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	s.State = rec.State
	if len(s.State) == 0 {
		s.State = json.RawMessage("{}")
	}
	// The bridge's session: its channel is /v1/sessions/{it}/events.
	w.Header().Set(inbound.HeaderSessionID, rec.sess.ID)
	h.writeJSON(w, s)
}

// sessionBody reads a create body: the session id and the initial state.
func (h *Handler) sessionBody(w http.ResponseWriter, r *http.Request, bareState bool) (string, json.RawMessage, error) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		return "", nil, err
	}
	if len(body) == 0 {
		return "", nil, nil
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(body, &o) != nil {
		return "", nil, bridge.Errorf(bridge.CodeInvalid, "request body: expected a JSON object")
	}
	var id string
	for _, k := range []string{"sessionId", "session_id"} {
		if v, ok := o[k]; ok && json.Unmarshal(v, &id) != nil {
			return "", nil, bridge.Errorf(bridge.CodeInvalid, "%s: expected a string", k)
		}
		if err := inbound.CheckID(k, id); err != nil {
			return "", nil, err
		}
	}
	state := o["state"]
	if len(state) == 0 && bareState && len(o) > 0 {
		state = body
	}
	if len(state) > 0 && string(state) != "null" {
		var m map[string]json.RawMessage
		if json.Unmarshal(state, &m) != nil {
			return "", nil, bridge.Errorf(bridge.CodeInvalid, "state: expected an object")
		}
		state, _ = json.Marshal(m)
	} else {
		state = nil
	}
	return id, state, nil
}

func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	rec, err := h.find(r.Context(), r.PathValue("app"), r.PathValue("user"), r.PathValue("session"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	s, err := h.viewQuery(r.Context(), rec, true, inbound.IncludeSuperseded(r))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.writeJSON(w, s)
}

func (h *Handler) deleteSession(w http.ResponseWriter, r *http.Request) {
	rec, err := h.find(r.Context(), r.PathValue("app"), r.PathValue("user"), r.PathValue("session"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if err := h.remove(r.Context(), rec); err != nil {
		h.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// render is Run.Render for ADK runs.
type render struct {
	Streaming bool   `json:"streaming"`
	Author    string `json:"author"`
}

// run serves POST /run and POST /run_sse: a new turn, or (run_sse with
// lastEventId and no newMessage) the resume of a run after that event.
func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	sse := r.URL.Path == "/run_sse"
	ctx := r.Context()
	req, err := inbound.Decode(w, r, h.cfg.MaxBody, wire.DecodeRequest)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	for _, id := range [][2]string{{"appName", req.AppName}, {"userId", req.UserID}, {"sessionId", req.SessionID}} {
		if err := inbound.CheckID(id[0], id[1]); err != nil {
			h.WriteError(w, err)
			return
		}
	}
	rec, err := h.find(ctx, req.AppName, req.UserID, req.SessionID)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if len(req.StateDelta) > 0 {
		rec.State = mergeState(rec.State, req.StateDelta)
		if err := rec.save(ctx, h.cfg.Store, h.cfg.Now().UTC()); err != nil {
			h.WriteError(w, err)
			return
		}
	}
	opt := wire.StreamOptions{Author: rec.ADK.App, Streaming: sse && req.Streaming}
	if req.NewMessage == nil {
		if !sse {
			h.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "No newMessage: /run needs a newMessage"))
			return
		}
		h.resume(w, r, rec, req, opt)
		return
	}
	msgs, dropped := wire.HubMessages(req.NewMessage)
	if len(msgs) == 0 {
		h.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "No parts in the newMessage."))
		return
	}
	rd, _ := json.Marshal(render{Streaming: opt.Streaming, Author: opt.Author})
	run, events, batch, err := inbound.StartRun(w, r, h.cfg.Engine, &bridge.Request{Inbound: wire.Dialect, Model: rec.ADK.App, SessionID: rec.sess.ID,
		Detached: true, Stream: true, Messages: msgs, Dropped: dropped, Render: rd, ReplaceFrom: r.Header.Get(inbound.HeaderReplaceFrom),
		Tools: req.Tools})
	if err != nil {
		h.WriteError(w, err)
		return
	}
	inbound.SetDropped(w.Header(), run.Dropped)
	if !sse {
		h.collect(w, r, run, events, opt)
		return
	}
	h.stream(w, r, run, events, opt, false, batch)
}

// resume serves a run_sse request with no newMessage: the stream of the
// run lastEventId names, after that frame. The stream is rendered again
// from where it began, with the options the run was started with, and the
// frames through the cursor are dropped (inbound.Resume,
// inbound.SkipFrames): the client gets byte for byte what followed it.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, rec *record, req *wire.RunRequest, opt wire.StreamOptions) {
	if req.LastEventID == "" {
		h.WriteError(w, bridge.Errorf(bridge.CodeNotFound,
			"no active or completed stream to resume without last_event_id: send newMessage to run, or lastEventId to resume"))
		return
	}
	nothing := bridge.Errorf(bridge.CodeNotFound, "no active or completed stream for lastEventId %q in session %s", req.LastEventID, rec.ADK.ID)
	runID, _, _, ok := bridge.ParseFrameID(req.LastEventID)
	if !ok {
		h.WriteError(w, nothing)
		return
	}
	cur, _ := inbound.ParseCursor(runID, req.LastEventID)
	run, err := h.cfg.Engine.Run(r.Context(), runID)
	if err != nil || run.SessionID != rec.sess.ID || cur.Seq > run.LastSeq && run.Status != bridge.StatusRunning {
		h.WriteError(w, nothing)
		return
	}
	run, events, err := inbound.Resume(r.Context(), h.cfg.Engine, runID, cur)
	if err != nil {
		h.WriteError(w, nothing)
		return
	}
	var rd render
	if json.Unmarshal(run.Render, &rd) == nil && rd.Author != "" {
		opt = wire.StreamOptions{Author: rd.Author, Streaming: rd.Streaming}
	}
	w.Header().Set("X-Run-Id", run.ID)
	w.Header().Set("X-Session-Id", run.SessionID)
	h.stream(inbound.SkipFrames(w, cur), r, run, events, opt, true, nil)
}

// stream writes a run's events as run_sse frames, then [DONE]. Nothing is
// written until the upstream has answered (unless resumed: the stream has
// begun): a run that fails before its first output is an ordinary error
// answer.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions, resumed bool, batch *inbound.Batch) {
	ctx := r.Context()
	enc := wire.NewStreamEncoder(opt)
	p := inbound.Pull(events)
	defer p.Stop()
	var held []bridge.Event
	if !resumed {
		for ev := range p.Events {
			if ev.Kind == bridge.KindRunStarted {
				continue
			}
			if ev.Kind == bridge.KindFinal && ev.Final != nil && ev.Final.Status == bridge.StatusFailed && ev.Final.Error != nil {
				h.WriteError(w, ev.Final.Error)
				return
			}
			held = append(held, ev)
			break
		}
		if p.Failed(h.cfg.Logger, r, run) {
			return
		}
	}
	sw := batch.Writer(w)
	w.WriteHeader(http.StatusOK)
	var buf []byte
	write := func(ev *bridge.Event) bool {
		buf = buf[:0]
		for _, o := range enc.Encode(ev) {
			buf, _ = wire.AppendSSE(buf, &o)
		}
		if len(buf) == 0 {
			return true
		}
		_, err := sw.Write(buf)
		return err == nil
	}
	for _, ev := range held {
		if !write(&ev) {
			return
		}
	}
	if sw.Flush() != nil { // the first output, at once
		return
	}
	for !enc.Done() {
		ev, ok := p.Next()
		if !ok {
			break
		}
		if !write(&ev) {
			return // the client went away; the run goes on
		}
	}
	if p.Failed(h.cfg.Logger, r, run) {
		return
	}
	if enc.Done() || run.Status.Terminal() {
		_, _ = sw.Write([]byte(wire.Done))
	}
	h.dropped(ctx, run.ID, enc.Dropped())
}

// collect answers POST /run: the run's events as one JSON array.
func (h *Handler) collect(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	enc := wire.NewStreamEncoder(opt)
	out := []wire.Event{}
	any := false
	for ev, err := range events {
		if err != nil {
			inbound.EndedEarly(h.cfg.Logger, r, run, err)
			h.WriteError(w, bridge.Errorf(bridge.CodeUnavailable, "the run's events could not be read"))
			return
		}
		if !any && ev.Kind == bridge.KindFinal && ev.Final != nil && ev.Final.Status == bridge.StatusFailed && ev.Final.Error != nil {
			h.WriteError(w, ev.Final.Error)
			return
		}
		if ev.Kind != bridge.KindRunStarted {
			any = true
		}
		out = append(out, enc.Encode(&ev)...)
	}
	h.dropped(r.Context(), run.ID, enc.Dropped())
	h.writeJSON(w, out)
}

func (h *Handler) dropped(ctx context.Context, runID string, d []string) {
	if len(d) == 0 {
		return
	}
	if err := h.cfg.Engine.RecordDropped(context.WithoutCancel(ctx), runID, d); err != nil {
		h.cfg.Logger.Warn("record dropped", "run", runID, "err", err)
	}
}

// ServeEvents implements inbound.Dialect: the run API's replay of a run
// as the run_sse frames its client was sent, ending with [DONE]. events
// start where that stream started (inbound.Resume), so a fresh encoder
// with the run's options renders the very frames.
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	var rd render
	_ = json.Unmarshal(run.Render, &rd)
	if rd.Author == "" {
		rd.Author = run.Model
	}
	enc := wire.NewStreamEncoder(wire.StreamOptions{Author: rd.Author, Streaming: rd.Streaming})
	inbound.SetDropped(w.Header(), run.Dropped)
	w.Header().Set("X-Run-Id", run.ID)
	sw := inbound.NewSSEWriter(w)
	w.WriteHeader(http.StatusOK)
	var buf []byte
	for ev, err := range events {
		if err != nil || enc.Done() {
			break
		}
		buf = buf[:0]
		for _, o := range enc.Encode(&ev) {
			buf, _ = wire.AppendSSE(buf, &o)
		}
		if len(buf) > 0 {
			if _, err := sw.Write(buf); err != nil {
				return
			}
		}
	}
	if enc.Done() || run.Status.Terminal() {
		_, _ = sw.Write([]byte(wire.Done))
	}
}

// History implements inbound.Dialect: the ADK session detail of the
// page's session (events oldest first, state, session.status,
// active_run). A session the ADK endpoints did not make is shown with
// its bridge id, app "" and user "".
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) {
	if p.Session == nil {
		return nil, bridge.Errorf(bridge.CodeNotFound, "Session not found")
	}
	rec, err := decodeRecord(p.Session)
	if err != nil {
		rec = &record{sess: p.Session}
		rec.ADK.ID = p.Session.ID
	}
	ctx := bridge.WithPrincipal(context.Background(), p.Session.Principal)
	// A page that holds superseded runs was asked for them.
	superseded := slices.ContainsFunc(p.Runs, func(r *bridge.Run) bool { return r.Superseded })
	s, err := h.viewQuery(ctx, rec, true, superseded)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

var _ inbound.Dialect = (*Handler)(nil)
