package hermes

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/hermes"
)

func sessionNotFound(id string) error {
	return wire.Errorf(bridge.CodeNotFound, wire.CodeSessionNotFound, "Session not found: %s", id)
}

// lookup finds a session of the caller: one this handler holds, else one
// the store holds (adopted into the handler). A deleted one is not found.
func (h *Handler) lookup(ctx context.Context, id string) (*session, error) {
	if id == "" || len(id) > 256 {
		return nil, sessionNotFound(id)
	}
	k := sessionKey{bridge.PrincipalFromContext(ctx), id}
	h.mu.Lock()
	s, ok := h.sessions[k]
	h.mu.Unlock()
	if ok {
		if s.deleted {
			return nil, sessionNotFound(id)
		}
		return s, nil
	}
	page, err := h.cfg.Engine.History(ctx, id, "", 1)
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeNotFound {
			return nil, sessionNotFound(id)
		}
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.sessions[k]; ok {
		return s, nil
	}
	s = &session{id: id, created: page.Session.Created}
	h.sessions[k] = s
	return s, nil
}

// object renders a session with what the store knows of its transcript.
func (h *Handler) object(ctx context.Context, s *session) *wire.Session {
	o := &wire.Session{ID: s.id, Source: "api", Model: wire.Ptr(s.model), Title: wire.Ptr(s.title),
		StartedAt: wire.Unix(s.created), EndReason: wire.Ptr(s.endReason), ParentSessionID: wire.Ptr(s.parent),
		LastActive: wire.Unix(s.created), HasSystemPrompt: s.system != ""}
	if !s.ended.IsZero() {
		v := wire.Unix(s.ended)
		o.EndedAt = &v
	}
	if p := bridge.PrincipalFromContext(ctx); p != "" {
		o.UserID = &p
	}
	msgs := s.seed
	if page, err := h.cfg.Engine.History(ctx, s.id, "", 1000); err == nil {
		msgs = slices.Clone(s.seed)
		for _, m := range page.Messages {
			if !page.Folded(&m) { // a running turn's messages count once stored
				msgs = append(msgs, m)
			}
		}
		if !page.Session.Updated.IsZero() {
			o.LastActive = wire.Unix(page.Session.Updated)
		}
		for _, r := range page.Runs {
			o.InputTokens += deref(r.Usage.InputTokens)
			o.OutputTokens += deref(r.Usage.OutputTokens)
			if t := wire.Unix(cmp.Or(r.Finished, r.Created)); t > o.LastActive {
				o.LastActive = t
			}
		}
	}
	o.MessageCount = len(msgs)
	for _, m := range msgs {
		o.ToolCallCount += len(m.ToolCalls)
		if o.Preview == "" && m.Role == bridge.RoleUser {
			o.Preview = truncate(m.Text(), 63)
		}
	}
	return o
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, offset := 50, 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "limit must be a positive integer"))
			return
		}
		limit = min(n, 200)
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "offset must be a non-negative integer"))
			return
		}
		offset = n
	}
	principal := bridge.PrincipalFromContext(r.Context())
	h.mu.Lock()
	var mine []*session
	for k, s := range h.sessions {
		if k.principal == principal && !s.deleted && (s.parent == "" || q.Get("include_children") != "false") {
			mine = append(mine, s)
		}
	}
	h.mu.Unlock()
	slices.SortFunc(mine, func(a, b *session) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	more := false
	if offset >= len(mine) {
		mine = nil
	} else {
		mine = mine[offset:]
		if len(mine) > limit {
			mine, more = mine[:limit], true
		}
	}
	out := make([]*wire.Session, 0, len(mine))
	for _, s := range mine {
		out = append(out, h.object(r.Context(), s))
	}
	writeJSON(w, http.StatusOK, wire.EncodeSessionList(out, limit, offset, more))
}

// body reads a JSON object body; an empty body is an empty object.
func (h *Handler) body(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	b, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return map[string]json.RawMessage{}, nil
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(b, &o); err != nil || o == nil {
		return nil, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "request body: want a JSON object")
	}
	return o, nil
}

func str(o map[string]json.RawMessage, keys ...string) (string, error) {
	for _, k := range keys {
		raw, ok := o[k]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "%s: want a string", k)
		}
		return s, nil
	}
	return "", nil
}

// validID accepts the session ids a client may choose.
func validID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c == '/' || c == '?' || c == '#' || c == '%' || c > '~' {
			return false
		}
	}
	return true
}

// register adds a new session of the caller; CodeConflict (session_exists)
// when the id is taken.
func (h *Handler) register(ctx context.Context, s *session) error {
	if _, err := h.lookup(ctx, s.id); err == nil {
		return wire.Errorf(bridge.CodeConflict, wire.CodeSessionExists, "Session already exists: %s", s.id)
	} else if bridge.ErrorCode(err) != bridge.CodeNotFound {
		return err
	}
	k := sessionKey{bridge.PrincipalFromContext(ctx), s.id}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.sessions[k]; ok && !old.deleted {
		return wire.Errorf(bridge.CodeConflict, wire.CodeSessionExists, "Session already exists: %s", s.id)
	}
	h.sessions[k] = s
	return nil
}

// unregister forgets s, a session of the caller that register added for
// a run the engine then refused, unless the store holds it by now (a
// turn of it started meanwhile): the refused request leaves no session to
// find, patch, fork or delete.
func (h *Handler) unregister(ctx context.Context, s *session) {
	if _, err := h.cfg.Engine.History(ctx, s.id, "", 1); err == nil {
		return
	}
	k := sessionKey{bridge.PrincipalFromContext(ctx), s.id}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[k] == s {
		delete(h.sessions, k)
	}
}

func (h *Handler) createSession(w http.ResponseWriter, r *http.Request) {
	o, err := h.body(w, r)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	s := &session{created: h.cfg.Now().UTC()}
	var fields [4]string
	for i, k := range [][]string{{"id", "session_id"}, {"model"}, {"system_prompt"}, {"title"}} {
		if fields[i], err = str(o, k...); err != nil {
			h.WriteError(w, err)
			return
		}
	}
	s.id, s.model, s.system, s.title = fields[0], fields[1], fields[2], fields[3]
	if s.id == "" {
		s.id = bridge.NewID("sess_")
	} else if !validID(s.id) {
		h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "id: at most 256 visible characters, no / ? # %%"))
		return
	}
	if err := h.register(r.Context(), s); err != nil {
		h.WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.EncodeSession(h.object(r.Context(), s)))
}

func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	s, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.EncodeSession(h.object(r.Context(), s)))
}

func (h *Handler) patchSession(w http.ResponseWriter, r *http.Request) {
	s, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	o, err := h.body(w, r)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	for k := range o {
		if k != "title" && k != "end_reason" {
			h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "only title and end_reason can be updated, not %s", k))
			return
		}
	}
	title, err := str(o, "title")
	if err != nil {
		h.WriteError(w, err)
		return
	}
	reason, err := str(o, "end_reason")
	if err != nil {
		h.WriteError(w, err)
		return
	}
	h.mu.Lock()
	if _, ok := o["title"]; ok {
		s.title = title
	}
	if _, ok := o["end_reason"]; ok {
		s.endReason = reason
		if reason != "" && s.ended.IsZero() {
			s.ended = h.cfg.Now().UTC()
		}
	}
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, wire.EncodeSession(h.object(r.Context(), s)))
}

func (h *Handler) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s, err := h.lookup(r.Context(), id)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if last := h.last(s); last != "" {
		_, _ = h.cfg.Engine.Abort(r.Context(), last) // a deleted session's turn stops
	}
	h.mu.Lock()
	s.deleted = true
	h.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"object": "hermes.session.deleted", "id": id, "deleted": true})
	writeJSON(w, http.StatusOK, b)
}

// transcript is a session's whole history page: a fork's seed, then what
// the store holds (with the runs a regenerate or an edit discarded when
// superseded).
func (h *Handler) transcript(ctx context.Context, s *session, superseded bool) (*bridge.HistoryPage, error) {
	page := &bridge.HistoryPage{Session: &bridge.Session{ID: s.id, Created: s.created}}
	before := ""
	for range 1000 { // pages of 1000 messages: a bound, not a limit anyone reaches
		p, err := h.cfg.Engine.QueryHistory(ctx, s.id, bridge.HistoryQuery{Before: before, Limit: 1000, Superseded: superseded})
		if err != nil {
			if bridge.ErrorCode(err) == bridge.CodeNotFound {
				break // no turn yet: nothing stored
			}
			return nil, err
		}
		page.Session = p.Session
		page.Messages = append(p.Messages, page.Messages...)
		for id, t := range p.Partial {
			if page.Partial == nil {
				page.Partial = map[string]*bridge.PartialTurn{}
			}
			page.Partial[id] = t
		}
		for _, r := range p.Runs {
			if !slices.ContainsFunc(page.Runs, func(o *bridge.Run) bool { return o.ID == r.ID }) {
				page.Runs = append(page.Runs, r)
			}
		}
		if !p.HasMore {
			break
		}
		before = p.Cursor
	}
	slices.SortFunc(page.Runs, func(a, b *bridge.Run) int { return a.Created.Compare(b.Created) })
	if len(s.seed) > 0 {
		page.Messages = append(slices.Clone(s.seed), page.Messages...)
	}
	return page, nil
}

func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	s, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "chatkit" && format != "hermes" {
		h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "format must be hermes or chatkit"))
		return
	}
	page, err := h.transcript(r.Context(), s, inbound.IncludeSuperseded(r))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	b, err := wire.EncodeHistory(page, wire.HistoryOptions{Chatkit: format == "chatkit"})
	if err != nil {
		h.WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// fork branches a session: the new one starts with the parent's
// transcript, which its first turn sends along and stores.
func (h *Handler) fork(w http.ResponseWriter, r *http.Request) {
	parent, err := h.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		h.WriteError(w, err)
		return
	}
	o, err := h.body(w, r)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	id, err := str(o, "id", "session_id")
	if err != nil {
		h.WriteError(w, err)
		return
	}
	title, err := str(o, "title")
	if err != nil {
		h.WriteError(w, err)
		return
	}
	if id == "" {
		id = bridge.NewID("sess_")
	} else if !validID(id) {
		h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "id: at most 256 visible characters, no / ? # %%"))
		return
	}
	page, err := h.transcript(r.Context(), parent, false)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	seed := make([]bridge.Message, len(page.Messages))
	for i, m := range page.Messages {
		m.ID, m.RunID = "m"+strconv.Itoa(i+1), ""
		seed[i] = m
	}
	if title == "" && parent.title != "" {
		title = parent.title + " (fork)"
	}
	s := &session{id: id, title: title, model: parent.model, system: parent.system, parent: parent.id,
		created: h.cfg.Now().UTC(), seed: seed}
	if err := h.register(r.Context(), s); err != nil {
		h.WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.EncodeSession(h.object(r.Context(), s)))
}
