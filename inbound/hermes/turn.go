package hermes

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/hermes"
)

// HeaderSessionID names the session of a turn's answer.
const HeaderSessionID = "X-Hermes-Session-Id"

// render is Run.Render for Hermes runs: what the stream's frames need
// that the events do not carry, and the hash of the body that created
// the run (for Idempotency-Key retries).
type render struct {
	UserMessage string `json:"user_message,omitempty"`
	BodySHA256  string `json:"body_sha256,omitempty"`
}

func renderOf(run *bridge.Run) render {
	var v render
	_ = json.Unmarshal(run.Render, &v) // absent or foreign: empty
	return v
}

func bodyHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// startTurn starts a turn of session s: CodeConflict run_already_active
// while another turn of it runs. The caller holds nothing.
func (h *Handler) startTurn(ctx context.Context, s *session, tr *wire.TurnRequest, body []byte, clientRunID string) (*bridge.Run, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	// A turn that replaces runs (X-Replace-From) cancels the active one.
	if last := h.last(s); last != "" && tr.Request.ReplaceFrom == "" {
		if r, err := h.cfg.Engine.Run(ctx, last); err == nil && r.Status == bridge.StatusRunning {
			e := wire.Errorf(bridge.CodeConflict, wire.CodeRunAlreadyActive, "Session %s already has an active run: %s", s.id, r.ID)
			return nil, e
		}
	}
	req := tr.Request
	req.SessionID = s.id
	req.Model = cmp.Or(req.Model, s.model, h.cfg.Model)
	req.ClientRunID = clientRunID
	req.Detached = true // a dropped stream is a dead transport, not a stop
	if len(req.Instructions) == 0 && s.system != "" {
		req.Instructions = []bridge.Message{{Role: bridge.RoleSystem, Parts: []bridge.Part{bridge.TextPart(s.system)}}}
	}
	h.mu.Lock()
	seed := s.seed
	h.mu.Unlock()
	switch {
	case tr.History != nil: // an explicit history replaces the stored one
		req.Full = true
		req.Messages = append(slices.Clone(tr.History), req.Messages...)
	case len(seed) > 0: // a fork's first turn stores the parent's transcript
		req.Full = true
		req.Messages = append(slices.Clone(seed), req.Messages...)
	}
	rb, _ := json.Marshal(render{UserMessage: tr.UserText, BodySHA256: bodyHash(body)})
	req.Render = rb
	run, err := h.cfg.Engine.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	s.lastRun = run.ID
	if len(seed) > 0 {
		s.seed = nil
	}
	h.mu.Unlock()
	return run, nil
}

// decodeTurn reads a turn body.
func (h *Handler) decodeTurn(w http.ResponseWriter, r *http.Request) (*wire.TurnRequest, []byte, error) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		return nil, nil, err
	}
	tr, err := wire.DecodeRequest(body)
	if err != nil {
		return nil, nil, err
	}
	tr.Request.ReplaceFrom = r.Header.Get(inbound.HeaderReplaceFrom)
	return tr, body, nil
}

// chat is one synchronous turn.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	s, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	tr, body, err := h.decodeTurn(w, r)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	tr.Request.Stream = false
	run, err := h.startTurn(r.Context(), s, tr, body, "")
	if err != nil {
		h.WriteError(w, err)
		return
	}
	_, events, err := h.cfg.Engine.Subscribe(r.Context(), run.ID, run.LastSeq)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	var (
		text, reasoning []byte
		calls           []map[string]any
		final           *bridge.Final
		usage           bridge.Usage
	)
	for ev, err := range events {
		if err != nil {
			h.WriteError(w, err)
			return
		}
		switch ev.Kind {
		case bridge.KindTextDelta:
			text = append(text, ev.Text...)
		case bridge.KindReasoningDelta:
			reasoning = append(reasoning, ev.Text...)
		case bridge.KindToolCallDone:
			if tc := ev.ToolCall; tc != nil {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]string{"name": tc.Name, "arguments": tc.Arguments}})
			}
		case bridge.KindUsage:
			usage.Merge(ev.Usage)
		case bridge.KindFinal:
			final = ev.Final
		}
	}
	if final == nil {
		h.WriteError(w, bridge.Errorf(bridge.CodeInternal, "the run ended without an outcome"))
		return
	}
	usage.Merge(final.Usage)
	inbound.SetDropped(w.Header(), inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, final, nil))
	w.Header().Set(HeaderSessionID, s.id)
	w.Header().Set("X-Run-Id", run.ID)
	switch final.Status {
	case bridge.StatusCompleted, bridge.StatusInputRequired:
	default:
		e := final.Error
		if e == nil {
			code := bridge.CodeUpstream
			if final.Status == bridge.StatusCancelled {
				code = bridge.CodeCanceled
			}
			e = bridge.Errorf(code, "%s", cmp.Or(final.Reason, string(final.Status)))
		}
		h.WriteError(w, e)
		return
	}
	msg := map[string]any{"role": "assistant", "content": string(text)}
	if len(reasoning) > 0 {
		msg["reasoning"] = string(reasoning)
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	v := map[string]any{
		"object":     "hermes.session.chat.completion",
		"session_id": s.id,
		"run_id":     run.ID,
		"message":    msg,
		"usage":      json.RawMessage(wire.UsageJSON(&usage)),
	}
	if final.StopReason != "" {
		v["finish_reason"] = string(final.StopReason)
	}
	if final.Status == bridge.StatusInputRequired {
		v["status"] = "input_required"
	}
	b, _ := json.Marshal(v)
	writeJSON(w, http.StatusOK, b)
}

// resumeCursor is the client's cursor: Last-Event-ID, else
// ?after_event_id=, else ?after=.
func resumeCursor(r *http.Request) string {
	if c := inbound.LastEventID(r, "after_event_id"); c != "" {
		return c
	}
	return r.URL.Query().Get("after")
}

// chatStream streams a turn. A request with a resume cursor (Last-Event-ID
// or ?after_event_id=) that names a run of the session resumes that run's
// stream instead of starting a turn.
func (h *Handler) chatStream(w http.ResponseWriter, r *http.Request) {
	s, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if c := resumeCursor(r); c != "" {
		h.resume(w, r, s, c)
		return
	}
	tr, body, err := h.decodeTurn(w, r)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	run, err := h.startTurn(r.Context(), s, tr, body, "")
	if err != nil {
		h.WriteError(w, err)
		return
	}
	// A turn that continues the run waiting for tool results (a new run
	// has no event committed when Start returns) streams the continuation
	// only, from its run.started.
	var afterEvent int64
	if run.LastSeq > 0 {
		afterEvent = run.LastSeq
	}
	h.serveFrames(w, r, run, "", afterEvent)
}

// resumeStream is GET .../chat/stream: an EventSource reconnect.
func (h *Handler) resumeStream(w http.ResponseWriter, r *http.Request) {
	s, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.resume(w, r, s, resumeCursor(r))
}

// resume streams the run the cursor names, after it; a cursor of no run
// of this session replays the session's latest run from the start.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, s *session, c string) {
	runID, _, _, ok := bridge.ParseFrameID(c)
	var run *bridge.Run
	if ok {
		if rr, err := h.cfg.Engine.Run(r.Context(), runID); err == nil && rr.SessionID == s.id {
			run = rr
		}
	}
	if run == nil {
		id := h.last(s)
		if id == "" {
			if page, err := h.cfg.Engine.History(r.Context(), s.id, "", 1000); err == nil && len(page.Runs) > 0 {
				id = page.Runs[len(page.Runs)-1].ID
			}
		}
		if id == "" {
			h.WriteError(w, wire.Errorf(bridge.CodeNotFound, wire.CodeRunNotFound, "session %s has no run to resume", s.id))
			return
		}
		rr, err := h.cfg.Engine.Run(r.Context(), id)
		if err != nil {
			h.WriteError(w, err)
			return
		}
		run = rr
	}
	h.serveFrames(w, r, run, c, 0)
}

// ServeRunEvents implements runs.EventServer: GET /v1/runs/{id}/events of
// a Hermes run, resumable with Last-Event-ID or ?after_event_id=.
func (h *Handler) ServeRunEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run) {
	h.serveFrames(w, r, run, resumeCursor(r), 0)
}

// ServeEvents implements inbound.Dialect: the frames of events.
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	h.writeFrames(w, r, run, events, wire.StreamOptions{SessionID: run.SessionID, UserMessage: renderOf(run).UserMessage})
}

// serveFrames streams run's frames after the client's cursor c (and after
// the frames of events up to afterEvent). The run is encoded again from
// its first event, so every frame has the seq and the id it had, and the
// frames the client has are left out: those up to the frame c names (a
// frame id, inbound.SkipFrames), or with a bare number c, those with seq
// up to it. A cursor of no frame of the run, or ahead of its end, replays
// it from the start (never a silent skip); the cursor of its last frame
// gets nothing more.
func (h *Handler) serveFrames(w http.ResponseWriter, r *http.Request, run *bridge.Run, c string, afterEvent int64) {
	snap, events, err := h.cfg.Engine.Subscribe(r.Context(), run.ID, 0)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	opt := wire.StreamOptions{SessionID: run.SessionID, UserMessage: renderOf(run).UserMessage, AfterEvent: afterEvent}
	var cur inbound.Cursor
	if n, err := strconv.ParseInt(c, 10, 64); err == nil && n > 0 {
		opt.After = n
		if snap.Status.Terminal() {
			// A finished run: a seq past its last frame starts over.
			var n countWriter
			enc := wire.NewStreamEncoder(&n, wire.StreamOptions{})
			_, evs, err := h.cfg.Engine.Subscribe(r.Context(), run.ID, 0)
			if err == nil {
				for ev, err := range evs {
					if err != nil {
						break
					}
					_ = enc.Encode(&ev)
				}
				if opt.After > enc.Seq() {
					opt.After = 0
				}
			}
		}
	} else if cc, ok := inbound.ParseCursor(run.ID, c); ok && cc.Seq <= snap.LastSeq {
		cur = cc
	}
	h.writeFrames(inbound.SkipFrames(w, cur), r, snap, events, opt)
}

type countWriter struct{}

func (countWriter) Write(p []byte) (int, error) { return len(p), nil }

// writeFrames writes the SSE response.
func (h *Handler) writeFrames(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream, opt wire.StreamOptions) {
	w.Header().Set(HeaderSessionID, run.SessionID)
	w.Header().Set("X-Run-Id", run.ID)
	inbound.SetDropped(w.Header(), run.Dropped)
	sw := &lockedWriter{w: inbound.NewSSEWriter(w)}
	w.WriteHeader(http.StatusOK)
	if h.cfg.KeepAlive > 0 {
		// The keepalive goroutine writes between frames; it is stopped
		// before the handler returns.
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(h.cfg.KeepAlive)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					if sw.idle(h.cfg.KeepAlive) {
						if _, err := sw.Write([]byte(": keepalive\n\n")); err != nil {
							return
						}
					}
				case <-stop:
					return
				}
			}
		}()
		defer func() { close(stop); <-done }()
	}
	enc := wire.NewStreamEncoder(sw, opt)
	var final *bridge.Final
	for ev, err := range events {
		if err != nil {
			inbound.EndedEarly(h.cfg.Logger, r, run, err)
			return
		}
		if ev.Kind == bridge.KindFinal {
			final = ev.Final
		}
		if err := enc.Encode(&ev); err != nil {
			return // the client went away; the run goes on
		}
	}
	inbound.Dropped(r.Context(), h.cfg.Engine, h.cfg.Logger, run.ID, final, enc.Dropped())
}

// lockedWriter serializes the frames and the keepalive comments, each one
// Write (so one flush) of the SSE writer.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	last time.Time
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = time.Now()
	return l.w.Write(p)
}

// idle reports whether nothing was written for d.
func (l *lockedWriter) idle(d time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Since(l.last) >= d
}
