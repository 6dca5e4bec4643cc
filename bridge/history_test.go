package bridge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// waitSeq waits until run has committed event seq.
func waitSeq(t *testing.T, e *bridge.Engine, run string, seq int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := e.Run(t.Context(), run)
		if err != nil {
			t.Fatal(err)
		}
		if r.LastSeq >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: seq %d not committed (last %d)", run, seq, r.LastSeq)
		}
		time.Sleep(time.Millisecond)
	}
}

// historyRun returns the page's run id and the page's messages of it.
func historyRun(t *testing.T, e *bridge.Engine, session, run string) (*bridge.Run, []bridge.Message) {
	t.Helper()
	page, err := e.History(t.Context(), session, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []bridge.Message
	for _, m := range page.Messages {
		if m.RunID == run {
			msgs = append(msgs, m)
		}
	}
	for _, r := range page.Runs {
		if r.ID == run {
			return r, msgs
		}
	}
	t.Fatalf("run %s not in the history", run)
	return nil, nil
}

// said is the assistant text and reasoning of msgs, and their tool calls.
func said(msgs []bridge.Message) (text, reasoning string, calls []bridge.ToolCall) {
	for _, m := range msgs {
		if m.Role != bridge.RoleAssistant {
			continue
		}
		for _, p := range m.Parts {
			switch p.Type {
			case bridge.PartText:
				text += p.Text
			case bridge.PartReasoning:
				reasoning += p.Text
			}
		}
		calls = append(calls, m.ToolCalls...)
	}
	return text, reasoning, calls
}

// eventText is the text and reasoning the events say.
func eventText(evs []bridge.Event) (text, reasoning string) {
	for _, ev := range evs {
		switch ev.Kind {
		case bridge.KindTextDelta:
			text += ev.Text
		case bridge.KindReasoningDelta:
			reasoning += ev.Text
		}
	}
	return text, reasoning
}

// TestHistoryPartialTurn: at every committed event of a running run, the
// history holds the partial turn folded up to exactly the cursor it gives
// (Run.LastSeq); with the events after that cursor it is the whole answer,
// once.
func TestHistoryPartialTurn(t *testing.T) {
	evs := []bridge.Event{
		{Kind: bridge.KindMessageStarted, ResponseID: "r1"},
		{Kind: bridge.KindReasoningDelta, Text: "let me "},
		{Kind: bridge.KindReasoningDelta, Text: "think"},
		{Kind: bridge.KindTextDelta, Text: "Hel"},
		{Kind: bridge.KindTextDelta, Text: "lo"},
		{Kind: bridge.KindToolCallStarted, ToolCall: &bridge.ToolCall{ID: "c1", Name: "weather"}},
		{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: `{"city":`}},
		{Kind: bridge.KindToolCallDelta, ToolCall: &bridge.ToolCall{Arguments: `"Oslo"}`}},
		{Kind: bridge.KindToolCallDone, ToolCall: &bridge.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}},
		{Kind: bridge.KindToolResult, ToolResult: &bridge.ToolResult{CallID: "c1", Name: "weather", Content: []bridge.Part{bridge.TextPart("cold")}}},
		{Kind: bridge.KindTextDelta, Text: " world"},
		{Kind: bridge.KindMessageDone},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted}},
	}
	up := &bridgetest.Upstream{Events: evs, Gate: make(chan struct{})}
	e, _ := newEngine(t, up)
	req := userRequest("hi")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		cursor          int64
		text, reasoning string
	}
	var seens []seen
	for k := range len(evs) - 1 { // every event but the final: the run still runs
		up.Gate <- struct{}{}
		waitSeq(t, e, run.ID, int64(k+2)) // run_started is seq 1
		r, msgs := historyRun(t, e, run.SessionID, run.ID)
		if r.Status != bridge.StatusRunning || r.LastSeq != int64(k+2) {
			t.Fatalf("after event %d: run %s at %d", k, r.Status, r.LastSeq)
		}
		if msgs[0].Role != bridge.RoleUser || msgs[0].Text() != "hi" {
			t.Fatalf("after event %d: first message %+v", k, msgs[0])
		}
		_, all, _ := e.Subscribe(t.Context(), run.ID, 0)
		var prefix []bridge.Event
		for ev, err := range all {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Seq > r.LastSeq {
				break
			}
			prefix = append(prefix, ev)
			if ev.Seq == r.LastSeq {
				break
			}
		}
		if diff := cmp.Diff(bridge.FoldTurn(prefix), msgs[1:], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("after event %d: partial turn (-fold +history):\n%s", k, diff)
		}
		text, reasoning, calls := said(msgs)
		wt, wr := eventText(prefix)
		if text != wt || reasoning != wr {
			t.Errorf("after event %d: history says %q/%q, events up to the cursor %q/%q", k, text, reasoning, wt, wr)
		}
		if k >= 6 && (len(calls) != 1 || calls[0].ID != "c1" || calls[0].Name != "weather") {
			t.Errorf("after event %d: calls %+v", k, calls)
		}
		seens = append(seens, seen{r.LastSeq, text, reasoning})
	}
	up.Gate <- struct{}{}
	bridgetest.Drain(t, e, run)
	for _, s := range seens {
		_, rest, err := e.Subscribe(t.Context(), run.ID, s.cursor)
		if err != nil {
			t.Fatal(err)
		}
		text, reasoning := eventText(collect(t, rest))
		if s.text+text != "Hello world" || s.reasoning+reasoning != "let me think" {
			t.Errorf("cursor %d: history %q + resumed %q, reasoning %q + %q", s.cursor, s.text, text, s.reasoning, reasoning)
		}
	}
	// Once ended, the history holds the stored answer and no partial turn.
	page, err := e.History(t.Context(), run.SessionID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Partial) != 0 || page.Runs[0].Status != bridge.StatusCompleted {
		t.Errorf("ended run: partial %v, status %s", page.Partial, page.Runs[0].Status)
	}
	if text, _, _ := said(page.Messages); text != "Hello world" {
		t.Errorf("ended run says %q", text)
	}
}

// TestHistoryContinuedRun: a run continued by the client's tool results
// shows its stored first turn, the results, and the partial second turn
// after the final it waited at.
func TestHistoryContinuedRun(t *testing.T) {
	call := bridge.ToolCall{ID: "c1", Name: "weather", Arguments: `{}`}
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Script: func(n int, _ *bridge.Request) []bridge.Event {
		if n == 0 {
			return []bridge.Event{
				{Kind: bridge.KindMessageStarted},
				{Kind: bridge.KindToolCallDone, ToolCall: &call},
				{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse}},
			}
		}
		return bridgetest.TextEvents("it is ", "sunny")
	}}
	e, _ := newEngine(t, up)
	req := userRequest("weather?")
	req.Detached = true
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	first := bridgetest.Drain(t, e, run)
	next := userRequest("weather?")
	next.Detached, next.SessionID = true, run.SessionID
	next.Messages = append(next.Messages,
		bridge.Message{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{call}},
		bridge.Message{Role: bridge.RoleTool, ToolCallID: "c1", Parts: []bridge.Part{bridge.TextPart("sunny")}})
	up.Gate = gate
	run2, err := e.Start(t.Context(), next)
	if err != nil || run2.ID != run.ID {
		t.Fatalf("continue: %v, run %v", err, run2)
	}
	base := int64(len(first))
	for range 2 { // message_started, "it is "
		gate <- struct{}{}
	}
	waitSeq(t, e, run.ID, base+2)
	r, msgs := historyRun(t, e, run.SessionID, run.ID)
	var roles []bridge.Role
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	want := []bridge.Role{bridge.RoleUser, bridge.RoleAssistant, bridge.RoleTool, bridge.RoleAssistant}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Fatalf("roles (-want +got):\n%s", diff)
	}
	if r.LastSeq != base+2 || msgs[3].Text() != "it is " {
		t.Errorf("cursor %d (want %d), partial %q", r.LastSeq, base+2, msgs[3].Text())
	}
	close(gate)
	bridgetest.Drain(t, e, run)
}

// TestHistoryNeverSplitsARun: whatever the limit, a page holds all of a
// run's messages or none, and the pages together hold every message once.
func TestHistoryNeverSplitsARun(t *testing.T) {
	call := bridge.ToolCall{ID: "c1", Name: "f", Arguments: `{}`}
	up := &bridgetest.Upstream{Script: func(n int, req *bridge.Request) []bridge.Event {
		if last := req.Messages[len(req.Messages)-1]; last.Role == bridge.RoleUser && strings.HasPrefix(last.Text(), "tool") {
			return []bridge.Event{{Kind: bridge.KindToolCallDone, ToolCall: &call},
				{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusInputRequired}}}
		}
		return bridgetest.TextEvents("ok")
	}}
	e, _ := newEngine(t, up)
	session := ""
	var transcript []bridge.Message
	for i := range 4 {
		q := fmt.Sprintf("q%d", i)
		if i%2 == 1 {
			q = fmt.Sprintf("tool%d", i)
		}
		req := userRequest(q)
		req.SessionID = session
		req.Messages = append(append([]bridge.Message(nil), transcript...), req.Messages...)
		run, err := e.Start(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		session = run.SessionID
		bridgetest.Drain(t, e, run)
		transcript = req.Messages
		if i%2 == 1 { // the tool loop: 4 messages in the run
			transcript = append(transcript, bridge.Message{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{call}},
				bridge.Message{Role: bridge.RoleTool, ToolCallID: "c1", Parts: []bridge.Part{bridge.TextPart("r")}})
			req := userRequest("")
			req.SessionID, req.Messages = session, transcript
			if _, err := e.Start(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			bridgetest.Drain(t, e, run)
		}
		transcript = append(transcript, bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart("ok")}})
	}
	all, err := e.History(t.Context(), session, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Runs) != 4 || len(all.Messages) != 12 {
		t.Fatalf("%d runs, %d messages", len(all.Runs), len(all.Messages))
	}
	for _, byRun := range []bool{false, true} {
		for limit := 1; limit <= 5; limit++ {
			var got []string
			cursor := ""
			for range 20 {
				var page *bridge.HistoryPage
				if byRun {
					page, err = e.HistoryRuns(t.Context(), session, cursor, limit)
				} else {
					page, err = e.History(t.Context(), session, cursor, limit)
				}
				if err != nil {
					t.Fatal(err)
				}
				if byRun && len(page.Runs) > limit {
					t.Errorf("runs limit %d: a page of %d runs", limit, len(page.Runs))
				}
				var ids []string
				for _, m := range page.Messages {
					ids = append(ids, m.ID)
				}
				got = append(ids, got...)
				for _, r := range page.Runs {
					n := 0
					for _, m := range page.Messages {
						if m.RunID == r.ID {
							n++
						}
					}
					if want := map[bool]int{true: 4, false: 2}[strings.HasPrefix(firstText(all, r.ID), "tool")]; n != want {
						t.Errorf("byRun %v limit %d: run %s has %d of its %d messages in the page", byRun, limit, r.ID, n, want)
					}
				}
				if !page.HasMore {
					break
				}
				cursor = page.Cursor
			}
			var want []string
			for _, m := range all.Messages {
				want = append(want, m.ID)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("byRun %v limit %d: pages (-want +got):\n%s", byRun, limit, diff)
			}
		}
	}
}

func firstText(p *bridge.HistoryPage, run string) string {
	for _, m := range p.Messages {
		if m.RunID == run {
			return m.Text()
		}
	}
	return ""
}

// TestHistoryWhileRunsEnd: pages read while runs stream and end are each
// one moment of the session: a running run's text is that of its events
// up to its cursor, an ended run's its stored answer, never both (no
// word twice) and never a run ended without its answer.
func TestHistoryWhileRunsEnd(t *testing.T) {
	ws := make([]string, 150)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d ", i)
	}
	whole := strings.Join(ws, "")
	gate := make(chan struct{})
	e, _ := newEngine(t, &bridgetest.Upstream{Events: bridgetest.TextEvents(ws...), Gate: gate})
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the model's pace: an event every 200µs
		for {
			select {
			case gate <- struct{}{}:
				time.Sleep(200 * time.Microsecond)
			case <-stop:
				return
			}
		}
	}()
	session := ""
	total := 0
	for turn := range 3 {
		req := userRequest(fmt.Sprintf("q%d", turn))
		req.Detached, req.Full, req.SessionID = true, false, session
		run, err := e.Start(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		session = run.SessionID
		reads, running := 0, 0
		for ended := false; !ended && reads < 10000; reads++ {
			page, err := e.History(t.Context(), session, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			var r *bridge.Run
			for _, pr := range page.Runs {
				if pr.ID == run.ID {
					r = pr
				}
			}
			if r == nil {
				t.Fatalf("read %d: run not in the page", reads)
			}
			var msgs []bridge.Message
			for _, m := range page.Messages {
				if m.RunID == run.ID {
					msgs = append(msgs, m)
				}
			}
			text, _, _ := said(msgs)
			switch r.Status {
			case bridge.StatusRunning:
				running++
				_, evs, _ := e.Subscribe(t.Context(), run.ID, 0)
				var prefix []bridge.Event
				for ev, err := range evs {
					if err != nil || ev.Seq > r.LastSeq {
						break
					}
					prefix = append(prefix, ev)
					if ev.Seq == r.LastSeq {
						break
					}
				}
				if want, _ := eventText(prefix); text != want {
					t.Fatalf("read %d: running at %d with %q, its events say %q", reads, r.LastSeq, text, want)
				}
			case bridge.StatusCompleted:
				if text != whole {
					t.Fatalf("read %d: completed with %q", reads, text)
				}
				ended = true
			default:
				t.Fatalf("read %d: status %s", reads, r.Status)
			}
		}
		total += running
		bridgetest.Drain(t, e, run)
	}
	if total == 0 {
		t.Error("no read saw a run running")
	}
}
