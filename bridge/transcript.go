package bridge

import (
	"slices"
	"strings"
	"time"
)

// assembler folds the events of one model step into the assistant message
// the transcript keeps: reasoning (with its signature or encrypted form),
// text, refusal and the complete tool calls, in the order they came.
type assembler struct {
	parts []Part
	calls []ToolCall
	text  strings.Builder // the open text or reasoning part
	open  PartType        // type of the part being built, "" when none
	sig   string
	enc   string
	op    *Opaque
}

func (a *assembler) flush() {
	if a.open == "" {
		return
	}
	p := Part{Type: a.open, Text: a.text.String(), Signature: a.sig, Encrypted: a.enc, Opaque: a.op}
	if p.Text != "" || p.Signature != "" || p.Encrypted != "" || p.Opaque != nil {
		a.parts = append(a.parts, p)
	}
	a.text.Reset()
	a.open, a.sig, a.enc, a.op = "", "", "", nil
}

func (a *assembler) start(t PartType) {
	if a.open != t {
		a.flush()
		a.open = t
	}
}

func (a *assembler) add(ev *Event) {
	switch ev.Kind {
	case KindTextDelta:
		t := PartText
		if ev.Refusal {
			t = PartRefusal
		}
		a.start(t)
		a.text.WriteString(ev.Text)
	case KindReasoningDelta:
		// A signature or an encrypted block closes the reasoning it belongs
		// to: reasoning after it is a part of its own, so each block goes
		// back with its own signature.
		if a.open == PartReasoning && (a.sig != "" || a.enc != "") {
			a.flush()
		}
		a.start(PartReasoning)
		a.text.WriteString(ev.Text)
		if ev.Signature != "" {
			a.sig += ev.Signature
		}
		if ev.Encrypted != "" {
			a.enc += ev.Encrypted
		}
		if ev.Opaque != nil {
			a.op = ev.Opaque
		}
	case KindToolCallDone:
		a.flush()
		if ev.ToolCall != nil {
			a.calls = append(a.calls, *ev.ToolCall)
		}
	case KindMessageDone:
		a.flush()
	}
}

// message returns the assistant message, or nil when the step said nothing.
func (a *assembler) message(runID string, now time.Time) *Message {
	a.flush()
	if len(a.parts) == 0 && len(a.calls) == 0 {
		return nil
	}
	return &Message{RunID: runID, Created: now, Role: RoleAssistant, Parts: a.parts, ToolCalls: a.calls}
}

// RemapToolCallIDs returns msgs with each tool-call id (a call's, and a
// tool result's) replaced by remote(id). remote is asked once per id, so
// the same id always becomes the same one. It returns msgs itself when no
// id changes; else a copy, in which the messages and calls it changes are
// copies too: msgs is never written.
func RemapToolCallIDs(msgs []Message, remote func(string) string) []Message {
	var cache map[string]string
	get := func(id string) string {
		if id == "" {
			return ""
		}
		r, ok := cache[id]
		if !ok {
			if cache == nil {
				cache = map[string]string{}
			}
			r = remote(id)
			cache[id] = r
		}
		return r
	}
	var out []Message
	for i := range msgs {
		m := &msgs[i]
		changed := m.ToolCallID != "" && get(m.ToolCallID) != m.ToolCallID
		for _, c := range m.ToolCalls {
			changed = changed || (c.ID != "" && get(c.ID) != c.ID)
		}
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		c := &out[i]
		if len(c.ToolCalls) > 0 {
			c.ToolCalls = slices.Clone(c.ToolCalls)
			for j := range c.ToolCalls {
				c.ToolCalls[j].ID = get(c.ToolCalls[j].ID)
			}
		}
		c.ToolCallID = get(c.ToolCallID)
	}
	if out == nil {
		return msgs
	}
	return out
}

// NameToolResults returns input with each tool result that names no
// function given the name of the call it answers, from the calls in
// prefix (a Chat Completions tool message names none; an agent's
// function response carries the name). input itself is never written.
func NameToolResults(prefix, input []Message) []Message {
	names := map[string]string{}
	for i := range prefix {
		for _, c := range prefix[i].ToolCalls {
			names[c.ID] = c.Name
		}
	}
	var out []Message
	for i := range input {
		if input[i].Role == RoleTool && input[i].Name == "" && names[input[i].ToolCallID] != "" {
			if out == nil {
				out = slices.Clone(input)
			}
			out[i].Name = names[input[i].ToolCallID]
		}
	}
	if out == nil {
		return input
	}
	return out
}
