package openai

import (
	"github.com/bridge-dev/bridge/bridge"
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
// stop_reason, reason and dropped when set. cursor is given only when
// has_more.
func EncodeHistory(p *bridge.HistoryPage) ([]byte, error) {
	if p == nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "openai: nil history page")
	}
	w := newObj()
	w.key("messages")
	w.b = append(w.b, '[')
	for i := range p.Messages {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, historyMessage(&p.Messages[i])...)
	}
	w.b = append(w.b, ']')
	w.key("runs")
	w.b = append(w.b, '[')
	n := 0
	for _, r := range p.Runs {
		if r == nil {
			continue
		}
		if n > 0 {
			w.b = append(w.b, ',')
		}
		n++
		w.b = append(w.b, historyRun(r)...)
	}
	w.b = append(w.b, ']')
	if p.HasMore && p.Cursor != "" {
		w.str("cursor", p.Cursor)
	}
	w.bool("has_more", p.HasMore)
	return w.end(), nil
}

func historyMessage(m *bridge.Message) []byte {
	w := newObj()
	if m.ID != "" {
		w.str("id", m.ID)
	}
	if m.RunID != "" {
		w.str("run_id", m.RunID)
	}
	if !m.Created.IsZero() {
		w.int("created_at", m.Created.Unix())
	}
	w.str("role", string(m.Role))
	if m.Name != "" {
		w.str("name", m.Name)
	}
	var text, reasoning []byte
	hasText := false
	for i := range m.Parts {
		switch p := &m.Parts[i]; p.Type {
		case bridge.PartText:
			text = append(text, p.Text...)
			hasText = true
		case bridge.PartData:
			text = append(text, compact(p.JSON)...)
			hasText = true
		case bridge.PartReasoning:
			reasoning = append(reasoning, p.Text...)
		}
	}
	if !hasText && m.Role == bridge.RoleAssistant && len(m.ToolCalls) > 0 {
		w.raw("content", []byte("null"))
	} else {
		w.str("content", string(text))
	}
	if len(reasoning) > 0 {
		w.str("reasoning_content", string(reasoning))
	}
	if len(m.ToolCalls) > 0 {
		w.key("tool_calls")
		w.b = append(w.b, '[')
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			if j > 0 {
				w.b = append(w.b, ',')
			}
			f := newObj()
			f.str("name", tc.Name)
			f.str("arguments", tc.Arguments)
			t := newObj()
			t.str("id", tc.ID)
			t.str("type", "function")
			t.raw("function", f.end())
			w.b = append(w.b, t.end()...)
		}
		w.b = append(w.b, ']')
	}
	if m.Role == bridge.RoleTool {
		w.str("tool_call_id", m.ToolCallID)
	}
	return w.end()
}

func historyRun(r *bridge.Run) []byte {
	w := newObj()
	w.str("id", r.ID)
	w.str("status", string(r.Status))
	if !r.Created.IsZero() {
		w.int("created_at", r.Created.Unix())
	}
	if !r.Finished.IsZero() {
		w.int("finished_at", r.Finished.Unix())
	}
	if r.Model != "" {
		w.str("model", r.Model)
	}
	u := newObj()
	if r.Usage.InputTokens != nil {
		u.int("prompt_tokens", *r.Usage.InputTokens)
	}
	if r.Usage.OutputTokens != nil {
		u.int("completion_tokens", *r.Usage.OutputTokens)
	}
	u.int("total_tokens", r.Usage.Total())
	w.raw("usage", u.end())
	if r.LastSeq > 0 {
		w.str("last_event_id", bridge.EventID(r.ID, r.LastSeq))
	}
	if r.StopReason != "" {
		w.str("stop_reason", string(r.StopReason))
	}
	if r.Reason != "" {
		w.str("reason", r.Reason)
	}
	if len(r.Dropped) > 0 {
		w.key("dropped")
		w.b = append(w.b, '[')
		for i, d := range r.Dropped {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, d)
		}
		w.b = append(w.b, ']')
	}
	return w.end()
}
