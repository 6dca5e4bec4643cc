package ui

import (
	"context"
	"slices"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// Timeline is a run without its contents: every event with its offset in
// ms from the run's start, the tool calls, the upstream's ids. `bridge runs
// show --json` prints it, and the inspector's run page shows it.
type Timeline struct {
	Run        *bridge.Run `json:"run"`
	DurationMS *float64    `json:"duration_ms,omitempty"`
	TTFTMS     *float64    `json:"ttft_ms,omitempty"`
	// FirstCommitMS and FirstClientByteMS place Run.FirstCommit and
	// Run.FirstClientByte (absent: not known).
	FirstCommitMS     *float64        `json:"first_commit_ms,omitempty"`
	FirstClientByteMS *float64        `json:"first_client_byte_ms,omitempty"`
	Upstream          UpstreamIDs     `json:"upstream_ids"`
	Events            []TimelineEvent `json:"events"`
	ToolCalls         []ToolCall      `json:"tool_calls"`
	Final             *bridge.Final   `json:"final,omitempty"`
	// EventsDeleted says the retention janitor has removed the events.
	EventsDeleted bool `json:"events_deleted,omitempty"`
}

// UpstreamIDs are the ids the upstream gave the run.
type UpstreamIDs struct {
	Run       string   `json:"run,omitempty"`
	Responses []string `json:"responses,omitempty"`
	// Events counts the events that carry an upstream event id; First and
	// Last are the first and last of those ids.
	Events     int    `json:"events,omitempty"`
	FirstEvent string `json:"first_event,omitempty"`
	LastEvent  string `json:"last_event,omitempty"`
}

// TimelineEvent is one event without its contents.
type TimelineEvent struct {
	Seq        int64          `json:"seq"`
	OffsetMS   float64        `json:"offset_ms"`
	Kind       bridge.Kind    `json:"kind"`
	Source     bridge.Source  `json:"source,omitempty"`
	Index      int            `json:"index,omitempty"`
	Chars      int            `json:"chars,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	ResponseID string         `json:"response_id,omitempty"`
	Model      string         `json:"model,omitempty"`
	UpstreamID string         `json:"upstream_id,omitempty"`
	Usage      *bridge.Usage  `json:"usage,omitempty"`
	Error      *bridge.Error  `json:"error,omitempty"`
	Final      *bridge.Final  `json:"final,omitempty"`
	Role       bridge.Role    `json:"role,omitempty"` // a steer's message
	ArgBytes   int            `json:"argument_bytes,omitempty"`
	Result     *ResultSummary `json:"result,omitempty"`
}

// ResultSummary is a tool result without its content.
type ResultSummary struct {
	CallID  string `json:"call_id"`
	IsError bool   `json:"is_error,omitempty"`
	Parts   int    `json:"parts"`
}

// ToolCall is one tool call the run recorded.
type ToolCall struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	OffsetMS float64 `json:"offset_ms"`
	ArgBytes int     `json:"argument_bytes"`
	// RemoteID is the id the upstream knows the call by, when it differs.
	RemoteID string `json:"remote_id,omitempty"`
	Result   string `json:"result,omitempty"` // "ok" or "error" when the stream carried one
}

// IDLookup finds the id an upstream knows a tool call by.
type IDLookup interface {
	RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error)
}

// BuildTimeline builds run's timeline from its events.
func BuildTimeline(ctx context.Context, store IDLookup, run *bridge.Run, evs []bridge.Event) *Timeline {
	tl := &Timeline{Run: run, Events: []TimelineEvent{}, ToolCalls: []ToolCall{}, Upstream: UpstreamIDs{Run: run.UpstreamRunID}}
	tl.EventsDeleted = len(evs) == 0 && run.LastSeq > 0
	tl.DurationMS = offset(run, run.Finished)
	tl.FirstCommitMS = offset(run, run.FirstCommit)
	tl.FirstClientByteMS = offset(run, run.FirstClientByte)
	calls := map[string]int{}
	for _, ev := range evs {
		te := TimelineEvent{Seq: ev.Seq, OffsetMS: ms(ev.Time.Sub(run.Created)), Kind: ev.Kind, Source: ev.Source, Index: ev.Index,
			Chars: len([]rune(ev.Text)), ResponseID: ev.ResponseID, Model: ev.Model, UpstreamID: ev.UpstreamID,
			Usage: ev.Usage, Error: ev.Error, Final: ev.Final}
		switch ev.Kind {
		case bridge.KindTextDelta, bridge.KindReasoningDelta, bridge.KindToolCallStarted:
			if tl.TTFTMS == nil {
				v := te.OffsetMS
				tl.TTFTMS = &v
			}
		case bridge.KindFinal:
			tl.Final = ev.Final
		case bridge.KindToolResult:
			if r := ev.ToolResult; r != nil {
				te.Result = &ResultSummary{CallID: r.CallID, IsError: r.IsError, Parts: len(r.Content)}
				if i, ok := calls[r.CallID]; ok {
					tl.ToolCalls[i].Result = map[bool]string{false: "ok", true: "error"}[r.IsError]
				}
			}
		}
		if ev.Message != nil {
			te.Role = ev.Message.Role
			te.Chars = len([]rune(ev.Message.Text()))
		}
		if c := ev.ToolCall; c != nil {
			te.ToolCallID, te.ToolName, te.ArgBytes = c.ID, c.Name, len(c.Arguments)
			if ev.Kind == bridge.KindToolCallDone {
				tc := ToolCall{ID: c.ID, Name: c.Name, OffsetMS: te.OffsetMS, ArgBytes: len(c.Arguments)}
				if remote, err := store.RemoteID(ctx, bridge.IDToolCall, run.Upstream, c.ID); err == nil && remote != c.ID {
					tc.RemoteID = remote
				}
				calls[c.ID] = len(tl.ToolCalls)
				tl.ToolCalls = append(tl.ToolCalls, tc)
			}
		}
		if ev.ResponseID != "" && !slices.Contains(tl.Upstream.Responses, ev.ResponseID) {
			tl.Upstream.Responses = append(tl.Upstream.Responses, ev.ResponseID)
		}
		if ev.UpstreamID != "" {
			if tl.Upstream.Events == 0 {
				tl.Upstream.FirstEvent = ev.UpstreamID
			}
			tl.Upstream.Events++
			tl.Upstream.LastEvent = ev.UpstreamID
		}
		tl.Events = append(tl.Events, te)
	}
	return tl
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// offset is t in ms from run's start (nil for the zero time).
func offset(run *bridge.Run, t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	v := ms(t.Sub(run.Created))
	return &v
}
