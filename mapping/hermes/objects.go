package hermes

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Session is the client-safe session object.
type Session struct {
	ID              string   `json:"id"`
	Source          string   `json:"source"`
	UserID          *string  `json:"user_id"`
	Model           *string  `json:"model"`
	Title           *string  `json:"title"`
	StartedAt       float64  `json:"started_at"`
	EndedAt         *float64 `json:"ended_at"`
	EndReason       *string  `json:"end_reason"`
	MessageCount    int      `json:"message_count"`
	ToolCallCount   int      `json:"tool_call_count"`
	InputTokens     int64    `json:"input_tokens"`
	OutputTokens    int64    `json:"output_tokens"`
	ParentSessionID *string  `json:"parent_session_id"`
	LastActive      float64  `json:"last_active"`
	Preview         string   `json:"preview"`
	HasSystemPrompt bool     `json:"has_system_prompt"`
}

// Unix is t in unix seconds, 0 for the zero time.
func Unix(t time.Time) float64 { return unixSeconds(t) }

// Ptr returns a pointer to v, nil for the zero value.
func Ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// EncodeSession renders {"object":"hermes.session","session":{...}}.
func EncodeSession(s *Session) []byte {
	b, _ := json.Marshal(struct {
		Object  string   `json:"object"`
		Session *Session `json:"session"`
	}{"hermes.session", s})
	return b
}

// EncodeSessionList renders a page of GET /api/sessions.
func EncodeSessionList(ss []*Session, limit, offset int, more bool) []byte {
	if ss == nil {
		ss = []*Session{}
	}
	b, _ := json.Marshal(struct {
		Object  string     `json:"object"`
		Data    []*Session `json:"data"`
		Limit   int        `json:"limit"`
		Offset  int        `json:"offset"`
		HasMore bool       `json:"has_more"`
	}{"list", ss, limit, offset, more})
	return b
}

// RunStatus is a bridge status in Hermes' words.
func RunStatus(s bridge.Status) string {
	if s == "" {
		return "queued"
	}
	return string(s)
}

// LastEvent is the name of the frame a run in status s ended with (or is
// at).
func LastEvent(s bridge.Status) string {
	switch s {
	case bridge.StatusCompleted:
		return EventRunCompleted
	case bridge.StatusFailed:
		return EventRunFailed
	case bridge.StatusCancelled:
		return EventRunCancelled
	case bridge.StatusInterrupted, bridge.StatusInputRequired:
		return EventRunInterrupted
	}
	return EventRunStarted
}

// EncodeRun renders a run as GET /v1/runs/{id} does; output is the final
// text when known. Beside Hermes' members it has the common run API's (id,
// stop_reason, reason, inbound, outbound, last_seq), so one client reads
// every run the same way.
func EncodeRun(r *bridge.Run, output string) []byte {
	o := wire.NewObj()
	o.Str("object", "hermes.run")
	o.Str("run_id", r.ID)
	o.Str("id", r.ID)
	o.Str("status", RunStatus(r.Status))
	o.Str("session_id", r.SessionID)
	o.Str("model", r.Model)
	o.Float("created_at", unixSeconds(r.Created))
	upd := r.Finished
	if upd.IsZero() {
		upd = r.Created
	}
	o.Float("updated_at", unixSeconds(upd))
	o.Str("last_event", LastEvent(r.Status))
	if r.LastSeq > 0 {
		o.Str("last_event_id", bridge.EventID(r.ID, r.LastSeq))
	}
	if output != "" {
		o.Str("output", output)
	}
	if !r.Usage.IsZero() {
		o.Raw("usage", UsageJSON(&r.Usage))
	}
	if r.Status == bridge.StatusFailed && r.Reason != "" {
		o.Str("error", r.Reason)
	}
	if r.ClientRunID != "" {
		o.Str("idempotency_key", r.ClientRunID)
	}
	if r.StopReason != "" {
		o.Str("stop_reason", string(r.StopReason))
	}
	if r.Reason != "" {
		o.Str("reason", r.Reason)
	}
	o.Str("inbound", r.Inbound)
	o.Str("outbound", r.Outbound)
	if r.UpstreamRunID != "" {
		o.Str("upstream_run_id", r.UpstreamRunID)
	}
	o.Int("last_seq", r.LastSeq)
	o.B = append(o.B, '}')
	return o.B
}

// EncodeAccepted renders POST /v1/runs' 202 answer.
func EncodeAccepted(r *bridge.Run, replayed bool) []byte {
	o := wire.NewObj()
	o.Str("run_id", r.ID)
	o.Str("session_id", r.SessionID)
	st := "started"
	if replayed {
		st = RunStatus(r.Status)
	}
	o.Str("status", st)
	o.Bool("replayed", replayed)
	o.B = append(o.B, '}')
	return o.B
}

// EncodeSteer renders a steer's answer.
func EncodeSteer(runID string) []byte {
	o := wire.NewObj()
	o.Str("object", "hermes.run.steer")
	o.Str("run_id", runID)
	o.Bool("accepted", true)
	o.B = append(o.B, '}')
	return o.B
}

// HistoryOptions choose between Hermes' own message list and the chatkit
// Hermes shape (run_id per message and the runs list).
type HistoryOptions struct {
	Chatkit bool
}

// EncodeHistory renders a history page: {"object":"list","session_id",
// "data":[messages]} and, in the chatkit shape, each message's run_id and
// "runs":[{id,status,created_at,finished_at}], a running run with its
// resume cursor, last_event_id: its partial turn, folded up to that
// cursor, ends data (messages whose id is an event id, a string, where
// stored messages have integers). Hermes' own shape leaves the partial
// turn out.
// A run a regenerate or an edit discarded (in a history that asked for
// them) has superseded: true.
func EncodeHistory(p *bridge.HistoryPage, opt HistoryOptions) ([]byte, error) {
	o := wire.NewObj()
	o.Str("object", "list")
	if p.Session != nil {
		o.Str("session_id", p.Session.ID)
	}
	data := []byte{'['}
	n := 0
	for i := range p.Messages {
		if !opt.Chatkit && p.Folded(&p.Messages[i]) {
			continue // Hermes' own list holds stored rows, integer ids, only
		}
		if n > 0 {
			data = append(data, ',')
		}
		n++
		data = append(data, encodeMessage(&p.Messages[i], p.Session, opt)...)
	}
	data = append(data, ']')
	o.Raw("data", data)
	if opt.Chatkit {
		runs := []byte{'['}
		for i, r := range p.Runs {
			if i > 0 {
				runs = append(runs, ',')
			}
			ro := wire.NewObj()
			ro.Str("id", r.ID)
			ro.Str("status", RunStatus(r.Status))
			ro.Float("created_at", unixSeconds(r.Created))
			if r.Finished.IsZero() {
				ro.Null("finished_at")
			} else {
				ro.Float("finished_at", unixSeconds(r.Finished))
			}
			if r.Status == bridge.StatusRunning && r.LastSeq > 0 {
				ro.Str("last_event_id", bridge.EventID(r.ID, r.LastSeq))
			}
			if r.Superseded {
				ro.Bool("superseded", true)
			}
			ro.B = append(ro.B, '}')
			runs = append(runs, ro.B...)
		}
		runs = append(runs, ']')
		o.Raw("runs", runs)
		o.Bool("has_more", p.HasMore)
		if p.Cursor != "" {
			o.Str("cursor", p.Cursor)
		}
	}
	o.B = append(o.B, '}')
	return o.B, nil
}

// MessageID is the integer row id of a store message id "m<pos>".
func MessageID(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(id, "m"), 10, 64)
	return n
}

func encodeMessage(m *bridge.Message, s *bridge.Session, opt HistoryOptions) []byte {
	o := wire.NewObj()
	if n := MessageID(m.ID); n > 0 || m.ID == "" {
		o.Int("id", n)
	} else {
		o.Str("id", m.ID) // a running run's partial turn: no row yet
	}
	if s != nil {
		o.Str("session_id", s.ID)
	}
	if opt.Chatkit && m.RunID != "" {
		o.Str("run_id", m.RunID)
	}
	o.Str("role", string(m.Role))
	var text, reasoning strings.Builder
	for _, p := range m.Parts {
		switch p.Type {
		case bridge.PartText, bridge.PartRefusal:
			text.WriteString(p.Text)
		case bridge.PartReasoning:
			reasoning.WriteString(p.Text)
		case bridge.PartData:
			text.Write(p.JSON)
		}
	}
	o.Str("content", text.String())
	if m.ToolCallID != "" {
		o.Str("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		o.Str("tool_name", m.Name)
	}
	if reasoning.Len() > 0 {
		o.Str("reasoning", reasoning.String())
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]json.RawMessage, len(m.ToolCalls))
		for i := range m.ToolCalls {
			calls[i] = toolCallJSON(&m.ToolCalls[i])
		}
		o.Raw("tool_calls", wire.JoinArray(calls))
		o.Str("finish_reason", "tool_calls")
	}
	o.Float("timestamp", unixSeconds(m.Created))
	o.B = append(o.B, '}')
	return o.B
}
