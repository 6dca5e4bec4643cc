package adk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/adk"
)

// Store is the part of the bridge's store the handler keeps ADK sessions
// in (a bridge.Store is one).
type Store interface {
	CreateSession(ctx context.Context, s *bridge.Session) error
	Session(ctx context.Context, principal, id string) (*bridge.Session, error)
	UpdateSession(ctx context.Context, s *bridge.Session) error
	PutID(ctx context.Context, m bridge.IDMapping) error
	RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error)
}

// record is what Session.State holds for an ADK session.
type record struct {
	ADK struct {
		App  string `json:"app"`
		User string `json:"user"`
		ID   string `json:"id"`
	} `json:"adk"`
	State   json.RawMessage `json:"state,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`

	sess *bridge.Session // the bridge session
}

func scope(principal string) string { return "adk-in:" + principal }

func key(app, user, id string) string { return "k/" + app + "/" + user + "/" + id }

// indexID is the bridge session whose State lists a user's ADK sessions.
func indexID(principal, app, user string) string {
	h := sha256.Sum256([]byte(principal + "\x00" + app + "\x00" + user))
	return "adkidx_" + hex.EncodeToString(h[:12])
}

func decodeRecord(s *bridge.Session) (*record, error) {
	r := &record{sess: s}
	if err := json.Unmarshal(s.State, r); err != nil || r.ADK.ID == "" {
		return nil, bridge.Errorf(bridge.CodeNotFound, "Session not found: %s", s.ID)
	}
	return r, nil
}

func (r *record) save(ctx context.Context, st Store, now time.Time) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	r.sess.State, r.sess.Updated = b, now
	return st.UpdateSession(ctx, r.sess)
}

// find returns the ADK session (app, user, id) of the caller. app and
// user may be empty (a chatkit resume names only the session).
func (h *Handler) find(ctx context.Context, app, user, id string) (*record, error) {
	notFound := bridge.Errorf(bridge.CodeNotFound, "Session not found: %s", id)
	if id == "" {
		return nil, bridge.Errorf(bridge.CodeNotFound, "Session not found: undefined")
	}
	p := bridge.PrincipalFromContext(ctx)
	k := key(app, user, id)
	if app == "" || user == "" {
		k = "id/" + id
	}
	bid, err := h.cfg.Store.RemoteID(ctx, bridge.IDSession, scope(p), k)
	if err != nil || bid == "" {
		return nil, notFound
	}
	s, err := h.cfg.Store.Session(ctx, p, bid)
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeNotFound {
			return nil, notFound
		}
		return nil, err
	}
	r, err := decodeRecord(s)
	if err != nil || r.Deleted {
		return nil, notFound
	}
	if (app != "" && r.ADK.App != app) || (user != "" && r.ADK.User != user) {
		return nil, notFound
	}
	return r, nil
}

// create makes an ADK session; id "" picks one.
func (h *Handler) create(ctx context.Context, app, user, id string, state json.RawMessage) (*record, error) {
	if id == "" {
		id = bridge.NewID("s-")
	}
	if _, err := h.find(ctx, app, user, id); err == nil {
		return nil, bridge.Errorf(bridge.CodeConflict, "Session already exists: %s", id)
	}
	p := bridge.PrincipalFromContext(ctx)
	now := h.cfg.Now().UTC()
	r := &record{State: state}
	r.ADK.App, r.ADK.User, r.ADK.ID = app, user, id
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	r.sess = &bridge.Session{ID: bridge.NewID("sess_"), Principal: p, Created: now, Updated: now, State: b}
	if err := h.cfg.Store.CreateSession(ctx, r.sess); err != nil {
		return nil, err
	}
	for _, k := range []string{key(app, user, id), "id/" + id} {
		if err := h.cfg.Store.PutID(ctx, bridge.IDMapping{Kind: bridge.IDSession, Scope: scope(p), Local: k, Remote: r.sess.ID}); err != nil {
			return nil, err
		}
	}
	if err := h.index(ctx, app, user, func(ids []string) []string { return append(ids, id) }); err != nil {
		return nil, err
	}
	return r, nil
}

// remove deletes an ADK session: its keys are unmapped and it leaves the
// user's index; the bridge session and its runs stay for retention.
func (h *Handler) remove(ctx context.Context, r *record) error {
	p := bridge.PrincipalFromContext(ctx)
	r.Deleted = true
	if err := r.save(ctx, h.cfg.Store, h.cfg.Now().UTC()); err != nil {
		return err
	}
	for _, k := range []string{key(r.ADK.App, r.ADK.User, r.ADK.ID), "id/" + r.ADK.ID} {
		if err := h.cfg.Store.PutID(ctx, bridge.IDMapping{Kind: bridge.IDSession, Scope: scope(p), Local: k, Remote: ""}); err != nil {
			return err
		}
	}
	return h.index(ctx, r.ADK.App, r.ADK.User, func(ids []string) []string {
		return slices.DeleteFunc(ids, func(s string) bool { return s == r.ADK.ID })
	})
}

// index edits the list of a user's ADK sessions.
func (h *Handler) index(ctx context.Context, app, user string, edit func([]string) []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := bridge.PrincipalFromContext(ctx)
	id := indexID(p, app, user)
	now := h.cfg.Now().UTC()
	s, err := h.cfg.Store.Session(ctx, p, id)
	fresh := false
	switch {
	case bridge.ErrorCode(err) == bridge.CodeNotFound:
		s, fresh = &bridge.Session{ID: id, Principal: p, Created: now}, true
	case err != nil:
		return err
	}
	var ids []string
	_ = json.Unmarshal(s.State, &ids)
	ids = edit(ids)
	s.State, _ = json.Marshal(ids)
	s.Updated = now
	if fresh {
		return h.cfg.Store.CreateSession(ctx, s)
	}
	return h.cfg.Store.UpdateSession(ctx, s)
}

// list returns the ids of a user's ADK sessions, oldest first.
func (h *Handler) list(ctx context.Context, app, user string) ([]string, error) {
	p := bridge.PrincipalFromContext(ctx)
	s, err := h.cfg.Store.Session(ctx, p, indexID(p, app, user))
	if bridge.ErrorCode(err) == bridge.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	_ = json.Unmarshal(s.State, &ids)
	return ids, nil
}

// mergeState applies a state delta (ADK: keys replaced, none removed).
func mergeState(state, delta json.RawMessage) json.RawMessage {
	if len(delta) == 0 {
		return state
	}
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(state, &m)
	var d map[string]json.RawMessage
	if json.Unmarshal(delta, &d) != nil || len(d) == 0 {
		return state
	}
	for k, v := range d {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// view renders an ADK session with its events: per run, the user's input,
// then the complete events of what the run has committed (the same ids its
// stream carried), with the results of the client's tools (functionResponse
// user events) where the run waited for them, with session.status and
// active_run. A running run is shown up to the cursor the history page
// gives (Engine.History): its events up to it, the model step they began
// as a partial event with that cursor as its id, and active_run.event_id
// the same cursor.
func (h *Handler) view(ctx context.Context, r *record, withEvents bool) (*wire.Session, error) {
	return h.viewQuery(ctx, r, withEvents, false)
}

// viewQuery is view; with superseded, the runs a regenerate or an edit
// discarded are shown too, their events marked in customMetadata
// ({"superseded": true}).
func (h *Handler) viewQuery(ctx context.Context, r *record, withEvents, superseded bool) (*wire.Session, error) {
	s := &wire.Session{ID: r.ADK.ID, AppName: r.ADK.App, UserID: r.ADK.User, State: r.State,
		LastUpdateTime: wire.Time(r.sess.Updated), Events: []wire.Event{}}
	if !withEvents {
		s.State = json.RawMessage("{}")
		return s, nil
	}
	page, err := h.cfg.Engine.QueryHistory(ctx, r.sess.ID, bridge.HistoryQuery{Limit: 10000, Superseded: superseded})
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeNotFound {
			return s, nil
		}
		return nil, err
	}
	state := r.State
	status := "idle"
	for _, run := range page.Runs {
		var stored []bridge.Message
		for i := range page.Messages {
			if m := &page.Messages[i]; m.RunID == run.ID && !page.Folded(m) {
				stored = append(stored, *m)
			}
		}
		evs, st, err := h.runEvents(ctx, run, stored, r.ADK.App, state)
		if err != nil {
			return nil, err
		}
		if run.Superseded {
			for i := range evs {
				evs[i].CustomMetadata = markSuperseded(evs[i].CustomMetadata)
			}
			s.Events = append(s.Events, evs...)
			continue // neither the session's state, nor its status, nor its active run
		}
		s.Events, state = append(s.Events, evs...), st
		if t := time.Time(lastTime(s.Events)); t.After(time.Time(s.LastUpdateTime)) {
			s.LastUpdateTime = wire.Time(t)
		}
		switch run.Status {
		case bridge.StatusRunning:
			status = "running"
			s.ActiveRun = &wire.ActiveRun{RunID: run.ID, EventID: bridge.EventID(run.ID, run.LastSeq)}
		case bridge.StatusFailed:
			status = "error"
		default:
			status = "idle"
		}
	}
	s.State = state
	s.Status = &wire.SessionStatus{Status: status}
	if s.ActiveRun == nil {
		s.NoActiveRun = true
	}
	return s, nil
}

// runEvents renders one run of a history page as ADK events, and the
// session state after its state deltas. The run's input is its user
// event, id run:0 (a resume from it gets the whole run); later user
// messages of a run are steers, which are among its events. Each later
// input of the client's tool results follows the final event the run
// waited at, with that final's id.
func (h *Handler) runEvents(ctx context.Context, run *bridge.Run, stored []bridge.Message, author string, state json.RawMessage) ([]wire.Event, json.RawMessage, error) {
	var out []wire.Event
	i := 0
	if len(stored) > 0 && (stored[0].Role == bridge.RoleUser || stored[0].Role == bridge.RoleTool) {
		i = toolBatch(stored, 1)
		if stored[0].Role == bridge.RoleUser {
			i = 1
		}
		out = append(out, wire.InputEvent(stored[:i], run.ID, bridge.EventID(run.ID, 0)))
	}
	var inputs [][]bridge.Message // the client's tool results, a batch per wait
	for i < len(stored) {
		if stored[i].Role != bridge.RoleTool {
			i++
			continue
		}
		j := toolBatch(stored, i)
		inputs = append(inputs, stored[i:j])
		i = j
	}
	if run.LastSeq == 0 {
		if run.Status != bridge.StatusRunning {
			out = append(out, fromMessages(stored, run, author)...)
		}
		return out, state, nil
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, events, err := h.cfg.Engine.Subscribe(cctx, run.ID, 0)
	if err != nil {
		return nil, state, err
	}
	enc := wire.NewStreamEncoder(wire.StreamOptions{Author: author})
	n := 0
	for ev, err := range events {
		if err != nil {
			return nil, state, err
		}
		if ev.Seq > run.LastSeq {
			break
		}
		n++
		if ev.Kind == bridge.KindStateUpdate {
			state = mergeState(state, ev.State)
		}
		evs := enc.Encode(&ev)
		out = append(out, evs...)
		if ev.Kind == bridge.KindFinal && len(inputs) > 0 {
			// The run waited for the client's tools and went on with
			// their results: a new turn of the same invocation. Its input
			// is the last of the final's events here, so it takes the
			// final's id and the ones before it frame ids (every event
			// has an id of its own).
			for i := range evs {
				out[len(out)-len(evs)+i].ID = bridge.FrameID(run.ID, ev.Seq, i+1)
			}
			out = append(out, wire.InputEvent(inputs[0], run.ID, ev.ID()))
			inputs = inputs[1:]
			enc = wire.NewStreamEncoder(wire.StreamOptions{Author: author})
		}
		if ev.Seq >= run.LastSeq {
			break
		}
	}
	if n == 0 && run.Status != bridge.StatusRunning {
		out = append(out, fromMessages(stored, run, author)...)
	}
	if run.Status == bridge.StatusRunning {
		if p, ok := enc.Pending(bridge.EventID(run.ID, run.LastSeq)); ok {
			out = append(out, p)
		}
	}
	return out, state, nil
}

// toolBatch returns the end of the tool messages of msgs from i on.
func toolBatch(msgs []bridge.Message, i int) int {
	for i < len(msgs) && msgs[i].Role == bridge.RoleTool {
		i++
	}
	return i
}

// markSuperseded adds "superseded": true to an event's customMetadata.
func markSuperseded(meta json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(meta, &m) // none, or not an object: replaced
	m["superseded"] = json.RawMessage("true")
	b, _ := json.Marshal(m)
	return b
}

func lastTime(evs []wire.Event) wire.Time {
	if len(evs) == 0 {
		return wire.Time{}
	}
	return evs[len(evs)-1].Timestamp
}

// fromMessages renders a finished run whose events are gone (retention)
// from its transcript messages.
func fromMessages(msgs []bridge.Message, run *bridge.Run, author string) []wire.Event {
	var out []wire.Event
	first := true
	for i := range msgs {
		m := &msgs[i]
		if m.RunID != run.ID {
			continue
		}
		if m.Role == bridge.RoleTool && !first { // the client's tool results
			out = append(out, wire.InputEvent([]bridge.Message{*m}, run.ID, m.ID))
		}
		first = false
		if m.Role != bridge.RoleAssistant {
			continue
		}
		ev := wire.Event{ID: m.ID, InvocationID: run.ID, Author: author, Timestamp: wire.Time(m.Created), TurnComplete: true, LongRunningToolIDs: []string{}}
		c := &wire.Content{Role: "model"}
		for _, p := range m.Parts {
			switch p.Type {
			case bridge.PartText:
				c.Parts = append(c.Parts, wire.Part{Text: p.Text})
			case bridge.PartReasoning:
				c.Parts = append(c.Parts, wire.Part{Text: p.Text, Thought: true})
			}
		}
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Arguments)
			if !json.Valid(args) {
				args = json.RawMessage("{}")
			}
			c.Parts = append(c.Parts, wire.Part{FunctionCall: &wire.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}})
		}
		if len(c.Parts) > 0 {
			ev.Content = c
			out = append(out, ev)
		}
	}
	return out
}
