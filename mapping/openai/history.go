package openai

import (
	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// EncodeHistory renders a history page in the chatkit OpenAI-compatible
// history shape: {"messages":[…],"runs":[…],"cursor","has_more"}.
//
// A message has id, run_id, created_at (Unix seconds; left out when
// unknown), role, content (the text; null for an assistant that only calls
// tools), reasoning_content when any, tool_calls, and tool_call_id on tool
// messages. A run has id, status (a bridge.Status), created_at,
// finished_at once finished, model, usage {prompt_tokens,
// completion_tokens, total_tokens}, last_event_id (the resume cursor), and
// stop_reason, reason, superseded (a run a regenerate or an edit
// discarded, in a history that asked for them) and dropped when set.
// cursor is given only when has_more.
func EncodeHistory(p *bridge.HistoryPage) ([]byte, error) {
	if p == nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "openai: nil history page")
	}
	w := wire.NewObj()
	w.Array("messages", len(p.Messages), func(i int) []byte { return historyMessage(&p.Messages[i]) })
	w.Key("runs")
	w.B = append(w.B, '[')
	n := 0
	for _, r := range p.Runs {
		if r == nil {
			continue
		}
		if n > 0 {
			w.B = append(w.B, ',')
		}
		n++
		w.B = append(w.B, historyRun(r)...)
	}
	w.B = append(w.B, ']')
	if p.HasMore && p.Cursor != "" {
		w.Str("cursor", p.Cursor)
	}
	w.Bool("has_more", p.HasMore)
	return w.End(), nil
}

func historyMessage(m *bridge.Message) []byte {
	w := wire.NewObj()
	if m.ID != "" {
		w.Str("id", m.ID)
	}
	if m.RunID != "" {
		w.Str("run_id", m.RunID)
	}
	if !m.Created.IsZero() {
		w.Int("created_at", m.Created.Unix())
	}
	w.Str("role", string(m.Role))
	if m.Name != "" {
		w.Str("name", m.Name)
	}
	var text, reasoning []byte
	hasText := false
	for i := range m.Parts {
		switch p := &m.Parts[i]; p.Type {
		case bridge.PartText, bridge.PartData:
			text = append(text, wire.PartText(p)...)
			hasText = true
		case bridge.PartReasoning:
			reasoning = append(reasoning, p.Text...)
		}
	}
	if !hasText && m.Role == bridge.RoleAssistant && len(m.ToolCalls) > 0 {
		w.Raw("content", []byte("null"))
	} else {
		w.Str("content", string(text))
	}
	if len(reasoning) > 0 {
		w.Str("reasoning_content", string(reasoning))
	}
	if len(m.ToolCalls) > 0 {
		w.Array("tool_calls", len(m.ToolCalls), func(j int) []byte {
			tc := &m.ToolCalls[j]
			return toolCallObject(tc.ID, tc.Name, tc.Arguments).End()
		})
	}
	if m.Role == bridge.RoleTool {
		w.Str("tool_call_id", m.ToolCallID)
	}
	return w.End()
}

func historyRun(r *bridge.Run) []byte {
	w := wire.NewObj()
	w.Str("id", r.ID)
	w.Str("status", string(r.Status))
	if !r.Created.IsZero() {
		w.Int("created_at", r.Created.Unix())
	}
	if !r.Finished.IsZero() {
		w.Int("finished_at", r.Finished.Unix())
	}
	if r.Model != "" {
		w.Str("model", r.Model)
	}
	u := wire.NewObj()
	if r.Usage.InputTokens != nil {
		u.Int("prompt_tokens", *r.Usage.InputTokens)
	}
	if r.Usage.OutputTokens != nil {
		u.Int("completion_tokens", *r.Usage.OutputTokens)
	}
	u.Int("total_tokens", r.Usage.Total())
	w.Raw("usage", u.End())
	if r.LastSeq > 0 {
		w.Str("last_event_id", bridge.EventID(r.ID, r.LastSeq))
	}
	if r.StopReason != "" {
		w.Str("stop_reason", string(r.StopReason))
	}
	if r.Reason != "" {
		w.Str("reason", r.Reason)
	}
	if r.Superseded {
		w.Bool("superseded", true)
	}
	if len(r.Dropped) > 0 {
		w.Strings("dropped", r.Dropped)
	}
	return w.End()
}
