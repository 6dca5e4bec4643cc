package bridge

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
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
// the page hands out as its cursor, folded into messages.
type PartialTurn struct {
	// After is the seq the turn starts after: 0, or the final event the
	// run waited for tool results at.
	After int64 `json:"after"`
	// Last is the seq of the turn's last event folded (After when it has
	// none yet): the page's cursor for the run.
	Last int64 `json:"last"`
	// Messages is FoldTurn of the events After+1 to Last; they are also in
	// HistoryPage.Messages.
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
// the tool calls of it still streaming, by index, their arguments so far
// in builders (a call of many deltas is not copied at each).
type turnFold struct {
	out     []Message
	asm     *assembler
	first   *Event
	calls   []ToolCall         // calls started and not done, in the order they started
	callIdx []int              // their event indexes
	args    []*strings.Builder // their arguments so far
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
	for i := range f.calls {
		f.calls[i].Arguments = f.args[i].String()
	}
	f.asm.calls = append(f.asm.calls, f.calls...)
	if m := f.asm.message(f.first.RunID, f.first.Time); m != nil {
		m.ID = f.first.ID()
		f.out = append(f.out, *m)
	}
	f.asm, f.first, f.calls, f.callIdx, f.args = nil, nil, nil, nil, nil
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
			f.args = append(f.args, new(strings.Builder))
			i = len(f.calls) - 1
		}
		c := &f.calls[i]
		if ev.Kind == KindToolCallDelta {
			f.args[i].WriteString(ev.ToolCall.Arguments)
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
			f.args = slices.Delete(f.args, i, i+1)
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

// partialTurn folds a running run's current turn: its committed events
// after the last final event at or before knownSeq (the run's LastSeq when
// its stored messages were read: a final after it is one those messages
// do not reflect), up to the first final event after that (the run ended
// since; the page shows it as it stood just before). It reads the store a
// page at a time and keeps only the fold, so a turn of millions of events
// costs its text, not its events; the pages read are one consistent
// prefix of the run's log (the log is only appended to).
func (e *Engine) partialTurn(ctx context.Context, runID string, knownSeq int64) (*PartialTurn, error) {
	t := &PartialTurn{}
	var f turnFold
	for after := int64(0); ; {
		evs, err := e.store.Events(ctx, runID, after, storePage)
		if err != nil {
			return nil, err
		}
		for i := range evs {
			ev := &evs[i]
			if ev.Kind == KindFinal {
				if ev.Seq > knownSeq {
					f.close()
					t.Messages = f.out
					return t, nil
				}
				t.After, t.Last, f = ev.Seq, ev.Seq, turnFold{}
				continue
			}
			f.add(ev)
			t.Last = ev.Seq
		}
		if len(evs) < storePage {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	f.close()
	t.Messages = f.out
	return t, nil
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

// History returns a page of a session's transcript with its runs, the
// runs a regenerate or an edit discarded left out. before is a cursor from
// an earlier page ("" for the newest page); limit <= 0 means 100 messages.
// A page ends where a run begins, so it may hold more messages than limit:
// the rest of its oldest run.
func (e *Engine) History(ctx context.Context, sessionID, before string, limit int) (*HistoryPage, error) {
	return e.QueryHistory(ctx, sessionID, HistoryQuery{Before: before, Limit: limit})
}

// HistoryRuns is History counting runs rather than messages: the page
// holds the newest runs runs (<= 0: 20) before the cursor, whole.
func (e *Engine) HistoryRuns(ctx context.Context, sessionID, before string, runs int) (*HistoryPage, error) {
	return e.QueryHistory(ctx, sessionID, HistoryQuery{Before: before, Limit: runs, ByRun: true})
}

// HistoryQuery selects a page of history.
type HistoryQuery struct {
	Before string // a cursor from an earlier page ("" for the newest page)
	// Limit is the page's messages (<= 0: 100), or its runs when ByRun
	// (<= 0: 20).
	Limit int
	ByRun bool
	// Superseded includes the runs a regenerate or an edit discarded, and
	// their messages, where they were (the runs marked Superseded).
	Superseded bool
}

// QueryHistory is History with the options of q.
func (e *Engine) QueryHistory(ctx context.Context, sessionID string, q HistoryQuery) (*HistoryPage, error) {
	if q.Limit <= 0 {
		q.Limit = 100
		if q.ByRun {
			q.Limit = 20
		}
	}
	return e.history(ctx, sessionID, q)
}

// maxHistoryReads bounds the reads History makes when runs end while it
// reads (each run that ends commits its messages: the read is redone).
const maxHistoryReads = 4

func (e *Engine) history(ctx context.Context, sessionID string, q HistoryQuery) (*HistoryPage, error) {
	before := q.Before
	principal := PrincipalFromContext(ctx)
	s, err := e.store.Session(ctx, principal, sessionID)
	if err != nil {
		return nil, err
	}
	var pos int64
	if before != "" {
		pos, err = strconv.ParseInt(before, 10, 64)
		if err != nil || pos <= 0 {
			return nil, Errorf(CodeInvalid, "cursor %q is not one this server gave", before)
		}
	}
	// A run's messages are committed with its status (its input when it
	// starts or continues, its answer when it ends): runs read before and
	// after the messages with the same statuses say the messages are those
	// of these runs, and a running run's stored messages end where its
	// current turn begins.
	var (
		msgs []Message
		more bool
		runs []*Run
	)
	for i := 0; ; i++ {
		runs0, err := e.store.ListRuns(ctx, RunFilter{SessionID: sessionID, Principal: principal})
		if err != nil {
			return nil, err
		}
		msgs, more, err = e.pageMessages(ctx, sessionID, pos, q.Limit, q.ByRun, q.Superseded)
		if err != nil {
			return nil, err
		}
		runs, err = e.store.ListRuns(ctx, RunFilter{SessionID: sessionID, Principal: principal})
		if err != nil {
			return nil, err
		}
		if sameOutcomes(runs0, runs) || i == maxHistoryReads-1 {
			break
		}
	}
	inPage := make(map[string]bool)
	for _, m := range msgs {
		inPage[m.RunID] = true
	}
	page := &HistoryPage{Session: s, HasMore: more}
	if more && len(msgs) > 0 {
		page.Cursor = positionOf(msgs[0].ID)
	}
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		r := runs[i]
		if !inPage[r.ID] || r.Superseded && !q.Superseded {
			continue
		}
		if r.Status == StatusRunning {
			t, err := e.partialTurn(ctx, r.ID, r.LastSeq)
			if err != nil {
				return nil, err
			}
			if lr := e.liveRun(r.ID); lr != nil {
				if snap := lr.snapshot(); snap.Status == StatusRunning {
					r = snap // its usage and upstream so far
				}
			}
			r.LastSeq = t.Last
			if page.Partial == nil {
				page.Partial = make(map[string]*PartialTurn)
			}
			page.Partial[r.ID] = t
			msgs = insertAfterRun(msgs, r.ID, t.Messages)
		}
		page.Runs = append(page.Runs, r)
	}
	page.Messages = msgs
	return page, nil
}

// sameOutcomes reports whether two reads of a session's runs list the same
// runs with the same statuses, and the same last event for those not
// running.
func sameOutcomes(a, b []*Run) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Status != b[i].Status || a[i].Superseded != b[i].Superseded ||
			a[i].Status != StatusRunning && a[i].LastSeq != b[i].LastSeq {
			return false
		}
	}
	return true
}

// insertAfterRun inserts add after the last message of run in msgs.
func insertAfterRun(msgs []Message, run string, add []Message) []Message {
	if len(add) == 0 {
		return msgs
	}
	i := len(msgs)
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].RunID == run {
			i = j + 1
			break
		}
	}
	return slices.Insert(msgs, i, add...)
}

// pageMessages reads the messages of a history page: the newest limit
// messages (or the messages of the newest limit runs, byRun) before
// position pos (0: the newest), oldest first, extended back to the start
// of the oldest run they hold; more says older messages exist. The
// superseded messages are among them when all.
func (e *Engine) pageMessages(ctx context.Context, session string, pos int64, limit int, byRun, all bool) ([]Message, bool, error) {
	principal := PrincipalFromContext(ctx)
	messages := func(ctx context.Context, session string, before int64, limit int) ([]Message, bool, error) {
		if all {
			return e.store.AllMessages(ctx, principal, session, before, limit)
		}
		return e.store.Messages(ctx, principal, session, before, limit)
	}
	if !byRun {
		msgs, more, err := messages(ctx, session, pos, limit)
		if err != nil || !more || len(msgs) == 0 {
			return msgs, more, err
		}
		return e.wholeRun(ctx, session, msgs)
	}
	var msgs []Message
	more := true
	for cur := pos; more; {
		chunk, m, err := messages(ctx, session, cur, 4*limit+16)
		if err != nil {
			return nil, false, err
		}
		msgs, more = append(chunk, msgs...), m
		if len(chunk) == 0 || countRuns(msgs) > limit {
			break
		}
		cur = position(chunk[0].ID)
	}
	// Keep the newest limit runs: cut after the newest message of any other.
	kept := make(map[string]bool, limit)
	cut := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		id := msgs[i].RunID
		if !kept[id] && len(kept) == limit {
			cut = i + 1
			break
		}
		kept[id] = true
	}
	if cut > 0 {
		return msgs[cut:], true, nil
	}
	if !more || len(msgs) == 0 {
		return msgs, more, nil
	}
	return e.wholeRun(ctx, session, msgs)
}

// countRuns counts the runs msgs belong to.
func countRuns(msgs []Message) int {
	seen := map[string]bool{}
	for i := range msgs {
		seen[msgs[i].RunID] = true
	}
	return len(seen)
}

// wholeRun extends msgs (a page with older messages before it) back to
// the first message of its oldest run, and reports whether older
// messages exist before that.
func (e *Engine) wholeRun(ctx context.Context, session string, msgs []Message) ([]Message, bool, error) {
	first := position(msgs[0].ID)
	if run := msgs[0].RunID; run != "" {
		all, err := e.store.RunMessages(ctx, run)
		if err != nil {
			return nil, false, err
		}
		var earlier []Message
		for _, m := range all {
			if p := position(m.ID); p > 0 && p < first {
				earlier = append(earlier, m)
			}
		}
		if len(earlier) > 0 {
			msgs = append(earlier, msgs...)
			first = position(earlier[0].ID)
		}
	}
	older, _, err := e.store.Messages(ctx, PrincipalFromContext(ctx), session, first, 1)
	if err != nil {
		return nil, false, err
	}
	return msgs, len(older) > 0, nil
}
