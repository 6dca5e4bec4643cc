package bridgetest

import (
	"context"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
)

// Upstream is a scripted bridge.Upstream for tests. Each Open yields Events
// in order; when Gate is set, every event waits for a receive on it (or the
// context) first, so a test decides when each event is produced.
type Upstream struct {
	UpName    string
	UpDialect string
	// Script, when set, picks the events for each call (by call number,
	// starting at 0); else Events is used for every call.
	Script  func(call int, req *bridge.Request) []bridge.Event
	Events  []bridge.Event
	Gate    chan struct{}
	OpenErr error // returned by Open instead of a stream

	mu       sync.Mutex
	requests []*bridge.Request
}

// Name implements bridge.Upstream.
func (u *Upstream) Name() string {
	if u.UpName == "" {
		return "scripted"
	}
	return u.UpName
}

// Dialect implements bridge.Upstream.
func (u *Upstream) Dialect() string {
	if u.UpDialect == "" {
		return "test"
	}
	return u.UpDialect
}

// Requests returns the requests Open received.
func (u *Upstream) Requests() []*bridge.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*bridge.Request(nil), u.requests...)
}

// Open implements bridge.Upstream.
func (u *Upstream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	u.mu.Lock()
	n := len(u.requests)
	r := *req
	u.requests = append(u.requests, &r)
	u.mu.Unlock()
	if u.OpenErr != nil {
		return nil, u.OpenErr
	}
	evs := u.Events
	if u.Script != nil {
		evs = u.Script(n, req)
	}
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		for _, ev := range evs {
			if u.Gate != nil {
				select {
				case <-u.Gate:
				case <-ctx.Done():
					yield(bridge.Event{}, context.Cause(ctx))
					return
				}
			} else if ctx.Err() != nil {
				yield(bridge.Event{}, context.Cause(ctx))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}}, nil
}

// TextEvents scripts a model step that says the words and ends the turn.
func TextEvents(words ...string) []bridge.Event {
	evs := []bridge.Event{{Kind: bridge.KindMessageStarted, ResponseID: "resp-1", Model: "m"}}
	for _, w := range words {
		evs = append(evs, bridge.Event{Kind: bridge.KindTextDelta, Text: w})
	}
	return append(evs,
		bridge.Event{Kind: bridge.KindMessageDone},
		bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}})
}

// ToolTurn is a transcript in which the user asks, the assistant calls
// tool "f" with the call id id, and the tool answers: what a test of how
// an upstream takes a tool-call id sends.
func ToolTurn(id string) []bridge.Message {
	return []bridge.Message{
		{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("q")}},
		{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{{ID: id, Name: "f", Arguments: "{}"}}},
		{Role: bridge.RoleTool, ToolCallID: id, Parts: []bridge.Part{bridge.TextPart("r")}},
	}
}
