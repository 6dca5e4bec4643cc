package bridge

import (
	"cmp"
	"context"
	"slices"
	"strconv"
)

// HistoryPage is one page of a session's history: transcript messages
// oldest first, and the runs they belong to. Cursor, when HasMore, fetches
// the page of older messages before this one. A page never splits a run:
// it holds all of a run's messages or none.
//
// A run still running is shown as it stood at one committed event: its
// Run.LastSeq is that event's seq, so EventID(run, LastSeq) is the cursor
// to resume from, and Messages hold, after its stored messages, the
// partial turn folded from its events up to that seq (see Partial).
type HistoryPage struct {
	Session  *Session  `json:"session"`
	Messages []Message `json:"messages"`
	Runs     []*Run    `json:"runs"`
	Cursor   string    `json:"cursor,omitempty"`
	HasMore  bool      `json:"has_more"`

	// Partial holds, for each running run of the page, its partial turn:
	// the events it was folded from and the messages it added (Folded
	// tells them from stored ones, for a dialect whose history renders the
	// run's events rather than its messages: ADK).
	Partial map[string]*PartialTurn `json:"partial,omitempty"`
}

// PartialTurn is the part of a running run its stored messages do not yet
// hold: the committed events of its current model turn (after its last
// final event, if a client's tool results continued it), up to the seq
// the page hands out as its cursor, and the messages they fold into.
type PartialTurn struct {
	// After is the seq the turn starts after: 0, or the final event the
	// run waited for tool results at.
	After int64 `json:"after"`
	// Events are the turn's committed events, seq After+1 to the cursor.
	Events []Event `json:"events"`
	// Messages is FoldTurn of Events; they are also in HistoryPage.Messages.
	Messages []Message `json:"messages"`
}

// Folded reports whether m is one of the page's folded partial messages
// rather than a stored transcript message.
func (p *HistoryPage) Folded(m *Message) bool {
	t := p.Partial[m.RunID]
	return t != nil && slices.ContainsFunc(t.Messages, func(o Message) bool { return o.ID == m.ID })
}

// FoldTurn folds the events of a run's turn into the transcript messages
// they say so far, in the order they came: assistant messages (text,
// refusal, reasoning, and its tool calls, a call still streaming with the
// arguments so far), the results of tools the upstream ran, and the user
// input that joined the run (steers). Each message's ID is the event id
// of its first event (an ID the store never gives) and its time that
// event's. Events it does not show (usage, state, errors, final) are
// skipped.
func FoldTurn(events []Event) []Message {
	var f turnFold
	for i := range events {
		f.add(&events[i])
	}
	f.close()
	return f.out
}

// turnFold is FoldTurn's state: the assistant message being built, and
// the tool calls of it still streaming, by index.
type turnFold struct {
	out     []Message
	asm     *assembler
	first   *Event
	calls   []ToolCall // calls started and not done, in the order they started
	callIdx []int      // their event indexes
}

func (f *turnFold) assistant(ev *Event) {
	if f.asm == nil {
		f.asm, f.first = &assembler{}, ev
	}
}

// close ends the assistant message being built.
func (f *turnFold) close() {
	if f.asm == nil {
		return
	}
	f.asm.calls = append(f.asm.calls, f.calls...)
	if m := f.asm.message(f.first.RunID, f.first.Time); m != nil {
		m.ID = f.first.ID()
		f.out = append(f.out, *m)
	}
	f.asm, f.first, f.calls, f.callIdx = nil, nil, nil, nil
}

func (f *turnFold) add(ev *Event) {
	switch ev.Kind {
	case KindTextDelta, KindReasoningDelta, KindMessageDone:
		f.assistant(ev)
		f.asm.add(ev)
	case KindToolCallStarted, KindToolCallDelta:
		if ev.ToolCall == nil {
			return
		}
		f.assistant(ev)
		i := slices.Index(f.callIdx, ev.Index)
		if i < 0 {
			f.asm.flush() // text after the call is a part of its own
			f.calls = append(f.calls, ToolCall{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Index: ev.Index})
			f.callIdx = append(f.callIdx, ev.Index)
			i = len(f.calls) - 1
		}
		c := &f.calls[i]
		if ev.Kind == KindToolCallDelta {
			c.Arguments += ev.ToolCall.Arguments
		}
		c.ID, c.Name = cmp.Or(ev.ToolCall.ID, c.ID), cmp.Or(ev.ToolCall.Name, c.Name)
	case KindToolCallDone:
		if ev.ToolCall == nil {
			return
		}
		f.assistant(ev)
		if i := slices.Index(f.callIdx, ev.Index); i >= 0 {
			f.calls = slices.Delete(f.calls, i, i+1)
			f.callIdx = slices.Delete(f.callIdx, i, i+1)
		}
		f.asm.add(ev)
	case KindToolResult:
		if ev.ToolResult == nil {
			return
		}
		f.close()
		tr := ev.ToolResult
		f.out = append(f.out, Message{ID: ev.ID(), RunID: ev.RunID, Created: ev.Time, Role: RoleTool, Name: tr.Name,
			ToolCallID: tr.CallID, Parts: tr.Content, IsError: tr.IsError})
	case KindUserMessage:
		if ev.Message == nil {
			return
		}
		f.close()
		m := *ev.Message
		m.ID, m.RunID = ev.ID(), ev.RunID
		if m.Created.IsZero() {
			m.Created = ev.Time
		}
		f.out = append(f.out, m)
	}
}

// partialTurn returns the committed events of a running run's current
// turn: those after the last final event at or before knownSeq (the run's
// LastSeq when its stored messages were read: a final after it is one
// those messages do not reflect), up to the first final event after that
// (the run ended since; the page shows it as it stood just before). The
// events are read from the live run, else the store: either way each read
// is one consistent prefix of the run's log.
func (e *Engine) partialTurn(ctx context.Context, runID string, knownSeq int64) (*PartialTurn, error) {
	var evs []Event
	if lr := e.liveRun(runID); lr != nil {
		lr.mu.Lock()
		evs, base := lr.events, lr.base
		lr.mu.Unlock()
		if base > 0 { // never so today: a live run holds its whole log
			old, err := e.store.Events(ctx, runID, 0, int(base))
			if err != nil {
				return nil, err
			}
			evs = append(old, evs...)
		}
		return cutTurn(evs, knownSeq), nil
	}
	evs, err := e.store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, err
	}
	return cutTurn(evs, knownSeq), nil
}

// cutTurn cuts a run's turn out of its events (see partialTurn).
func cutTurn(evs []Event, knownSeq int64) *PartialTurn {
	t := &PartialTurn{}
	start := 0
	for i := range evs {
		if evs[i].Seq > knownSeq {
			break
		}
		if evs[i].Kind == KindFinal {
			t.After, start = evs[i].Seq, i+1
		}
	}
	end := start
	for end < len(evs) && evs[end].Kind != KindFinal {
		end++
	}
	t.Events = evs[start:end:end]
	t.Messages = FoldTurn(t.Events)
	return t
}

// cursor is the seq a page's cursor for the turn t names.
func (t *PartialTurn) cursor() int64 {
	if n := len(t.Events); n > 0 {
		return t.Events[n-1].Seq
	}
	return t.After
}

// positionOf turns a message id "m<pos>" into the cursor "<pos>".
func positionOf(id string) string {
	if len(id) > 1 && id[0] == 'm' {
		return id[1:]
	}
	return id
}

// position is the store position of a message id "m<pos>", 0 for others.
func position(id string) int64 {
	n, _ := strconv.ParseInt(positionOf(id), 10, 64)
	return n
}
