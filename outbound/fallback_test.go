package outbound_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/storage/memory"
)

// taken records the fallbacks a Fallback reports.
type taken struct {
	mu  sync.Mutex
	got []string
}

func (tk *taken) hook(_ context.Context, from, to bridge.Upstream, err error) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.got = append(tk.got, from.Name()+">"+to.Name()+":"+string(bridge.ErrorCode(err)))
}

func TestFallback(t *testing.T) {
	connect := outbound.ConnectError("p", false)
	e500 := &bridge.Error{Code: bridge.CodeUpstream, Status: 500, Message: "boom"}
	e400 := &bridge.Error{Code: bridge.CodeInvalid, Status: 400, Message: "bad request"}
	e429 := &bridge.Error{Code: bridge.CodeRateLimited, Status: 429, Message: "slow down"}
	timeout := &bridge.Error{Code: bridge.CodeTimeout, Message: "first byte timeout"}
	tests := []struct {
		name       string
		errs       []error // Open's error of the primary, then each fallback (nil: answers)
		wantServed string  // the upstream named in the call, "" for an error
		wantErr    error
		wantCalls  []int // Opens per upstream
		wantTaken  []string
	}{
		{"primary answers", []error{nil, nil}, "p", nil, []int{1, 0}, nil},
		{"connect error", []error{connect, nil}, "f1", nil, []int{1, 1}, []string{"p>f1:upstream"}},
		{"500", []error{e500, nil}, "f1", nil, []int{1, 1}, []string{"p>f1:upstream"}},
		{"429", []error{e429, nil}, "f1", nil, []int{1, 1}, []string{"p>f1:rate_limited"}},
		{"timeout before the first byte", []error{timeout, nil}, "f1", nil, []int{1, 1}, []string{"p>f1:timeout"}},
		{"400 is the client's", []error{e400, nil}, "", e400, []int{1, 0}, nil},
		{"second fallback", []error{connect, e500, nil}, "f2", nil, []int{1, 1, 1}, []string{"p>f1:upstream", "f1>f2:upstream"}},
		{"all fail: the primary's error", []error{connect, e500, e429}, "", connect, []int{1, 1, 1}, []string{"p>f1:upstream", "f1>f2:upstream"}},
		{"a fallback's 400 stops the chain", []error{e500, e400, nil}, "", e400, []int{1, 1, 0}, []string{"p>f1:upstream"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := []string{"p", "f1", "f2"}
			ups := make([]*bridgetest.Upstream, len(tt.errs))
			var fbs []bridge.Upstream
			for i, err := range tt.errs {
				ups[i] = &bridgetest.Upstream{UpName: names[i], UpDialect: "d" + names[i], OpenErr: err, Events: bridgetest.TextEvents("hi")}
				if i > 0 {
					fbs = append(fbs, ups[i])
				}
			}
			tk := &taken{}
			u := outbound.NewFallback(ups[0], fbs, outbound.FallbackConfig{OnFallback: tk.hook})
			if u.Name() != "p" || u.Dialect() != "dp" {
				t.Errorf("Name, Dialect = %s, %s; want the primary's", u.Name(), u.Dialect())
			}
			call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
			if tt.wantErr != nil {
				if err != tt.wantErr {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Open: %v", err)
			} else if call.Upstream != tt.wantServed || call.Dialect != "d"+tt.wantServed {
				t.Errorf("call served by %q (%q), want %q", call.Upstream, call.Dialect, tt.wantServed)
			}
			var calls []int
			for _, up := range ups {
				calls = append(calls, len(up.Requests()))
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("Opens per upstream (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTaken, tk.got); diff != "" {
				t.Errorf("fallbacks taken (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFallbackBreakerOpen: with the primary's breaker open the fallback
// serves at once, and the primary is not touched.
func TestFallbackBreakerOpen(t *testing.T) {
	primary := &flaky{Upstream: bridgetest.Upstream{UpName: "p"}, n: 1000, err: &bridge.Error{Code: bridge.CodeUpstream, Status: 502}}
	b := outbound.NewBreaker("p", outbound.BreakerConfig{Failures: 2, OpenFor: time.Minute}, nil, nil)
	fb := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
	u := outbound.NewFallback(outbound.Wrap(primary, b.Middleware()), []bridge.Upstream{fb}, outbound.FallbackConfig{})
	for range 4 {
		call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if call.Upstream != "f" {
			t.Fatalf("served by %q", call.Upstream)
		}
		drain(call)
	}
	if n := len(primary.Requests()); n != 2 {
		t.Errorf("the primary was called %d times; its breaker opens after 2", n)
	}
}

// TestFallbackCancelled: a call the client cancelled tries no fallback.
func TestFallbackCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := &bridgetest.Upstream{UpName: "p", OpenErr: outbound.ConnectError("p", false)}
	f := &bridgetest.Upstream{UpName: "f"}
	_, err := outbound.NewFallback(p, []bridge.Upstream{f}, outbound.FallbackConfig{}).Open(ctx, &bridge.Request{Model: "m"})
	if err == nil || len(f.Requests()) != 0 {
		t.Errorf("err %v, %d fallback calls; want the error and none", err, len(f.Requests()))
	}
}

// TestFallbackMidStreamIsNotRetried: a stream that fails after it began
// fails the call; no fallback is tried.
func TestFallbackMidStreamIsNotRetried(t *testing.T) {
	p := &streamUpstream{Upstream: bridgetest.Upstream{UpName: "p"}, ends: []string{"cut"}}
	f := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
	call, err := outbound.NewFallback(p, []bridge.Upstream{f}, outbound.FallbackConfig{}).Open(t.Context(), &bridge.Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(call); err == nil {
		t.Error("the cut stream ended without its error")
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("%d fallback calls after the stream began", n)
	}
}

// minting is an upstream that mints its own tool-call ids: it takes only
// ids that begin with m_, and keeps those.
type minting struct{ bridgetest.Upstream }

func (m *minting) MintToolCallID(local string) string {
	if strings.HasPrefix(local, "m_") {
		return local
	}
	return "m_" + local
}

// TestFallbackToolCallIDs: a fallback gets the tool-call ids of its own id
// space: the primary's remote ids go back to the local ones, then to the
// ids the fallback minted (recorded for the next turn).
func TestFallbackToolCallIDs(t *testing.T) {
	ids := memory.New(nil)
	ctx := t.Context()
	_ = ids.PutID(ctx, bridge.IDMapping{Kind: bridge.IDToolCall, Scope: "p", Local: "call_1", Remote: "p_1"})
	p := &bridgetest.Upstream{UpName: "p", OpenErr: outbound.ConnectError("p", false)}
	f := &minting{bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}}
	u := outbound.NewFallback(p, []bridge.Upstream{f}, outbound.FallbackConfig{IDs: ids})
	req := &bridge.Request{Model: "m", Messages: []bridge.Message{
		{Role: bridge.RoleUser, Parts: []bridge.Part{{Type: bridge.PartText, Text: "weather?"}}},
		{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{{ID: "p_1", Name: "get"}}},
		{Role: bridge.RoleTool, ToolCallID: "p_1"},
	}}
	if _, err := u.Open(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := f.Requests()[0].Messages
	if got[1].ToolCalls[0].ID != "m_call_1" || got[2].ToolCallID != "m_call_1" {
		t.Errorf("fallback got ids %q and %q, want m_call_1", got[1].ToolCalls[0].ID, got[2].ToolCallID)
	}
	if req.Messages[1].ToolCalls[0].ID != "p_1" {
		t.Error("the caller's request was changed")
	}
	if r, _ := ids.RemoteID(ctx, bridge.IDToolCall, "f", "call_1"); r != "m_call_1" {
		t.Errorf("the minted id is not recorded: %q", r)
	}
	if got := p.Requests()[0].Messages[1].ToolCalls[0].ID; got != "p_1" {
		t.Errorf("primary got %q, want its own id p_1", got)
	}
}

// TestFallbackKeepsThePrimarysInterfaces: the minter, Unwrap (and so the
// Resumer) are the primary's.
func TestFallbackKeepsThePrimarysInterfaces(t *testing.T) {
	p := &minting{bridgetest.Upstream{UpName: "p"}}
	u := outbound.NewFallback(outbound.Wrap(p, outbound.Retry(outbound.RetryConfig{}, true)), []bridge.Upstream{&bridgetest.Upstream{UpName: "f"}}, outbound.FallbackConfig{})
	m, ok := u.(bridge.ToolCallMinter)
	if !ok || m.MintToolCallID("x") != "m_x" {
		t.Error("the primary's ToolCallMinter is hidden")
	}
	uw, ok := u.(interface{ Unwrap() bridge.Upstream })
	if !ok || uw.Unwrap().Name() != "p" {
		t.Error("Unwrap does not give the primary")
	}
	if f := outbound.NewFallback(p, nil, outbound.FallbackConfig{}); f != bridge.Upstream(p) {
		t.Error("without fallbacks NewFallback should return the primary")
	}
}

// TestFallbackAgentPrimary: an upstream that may have started the work
// (not idempotent) goes on to a fallback only when the call never reached
// it or it refused with a 429.
func TestFallbackAgentPrimary(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connect error", outbound.ConnectError("p", false), true},
		{"429", &bridge.Error{Code: bridge.CodeRateLimited, Status: 429}, true},
		{"500", &bridge.Error{Code: bridge.CodeUpstream, Status: 500}, false},
		{"timeout before the first byte", &bridge.Error{Code: bridge.CodeTimeout}, false},
	}
	notIdempotent := func(bridge.Upstream) bool { return false }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &bridgetest.Upstream{UpName: "p", OpenErr: tt.err}
			f := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
			_, err := outbound.NewFallback(p, []bridge.Upstream{f}, outbound.FallbackConfig{Idempotent: notIdempotent}).Open(t.Context(), &bridge.Request{Model: "m"})
			if got := len(f.Requests()) == 1; got != tt.want || (err == nil) != tt.want {
				t.Errorf("fallback taken = %v (err %v), want %v", got, err, tt.want)
			}
		})
	}
	t.Run("breaker open", func(t *testing.T) {
		p := &flaky{Upstream: bridgetest.Upstream{UpName: "p"}, n: 1000, err: &bridge.Error{Code: bridge.CodeUpstream, Status: 500}}
		b := outbound.NewBreaker("p", outbound.BreakerConfig{Failures: 1, OpenFor: time.Minute}, nil, nil)
		f := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
		u := outbound.NewFallback(outbound.Wrap(p, b.Middleware()), []bridge.Upstream{f}, outbound.FallbackConfig{Idempotent: notIdempotent})
		if _, err := u.Open(t.Context(), &bridge.Request{Model: "m"}); err == nil {
			t.Fatal("a 500 of an agent went on to the fallback")
		}
		if _, err := u.Open(t.Context(), &bridge.Request{Model: "m"}); err != nil || len(f.Requests()) != 1 {
			t.Errorf("with the breaker open: err %v, %d fallback calls", err, len(f.Requests()))
		}
	})
}

// TestFallbackPrimaryGetsIDsItTakes: an id a fallback minted reached the
// primary's id space as it is; a primary that mints its own is asked for
// each id it would not take, the same one for the call and its result.
func TestFallbackPrimaryGetsIDsItTakes(t *testing.T) {
	p := &minting{bridgetest.Upstream{UpName: "p", Events: bridgetest.TextEvents("hi")}}
	u := outbound.NewFallback(p, []bridge.Upstream{&bridgetest.Upstream{UpName: "f"}}, outbound.FallbackConfig{})
	req := &bridge.Request{Model: "m", Messages: []bridge.Message{
		{Role: bridge.RoleAssistant, ToolCalls: []bridge.ToolCall{{ID: "m_own", Name: "a"}, {ID: "call:from/f", Name: "b"}}},
		{Role: bridge.RoleTool, ToolCallID: "m_own"},
		{Role: bridge.RoleTool, ToolCallID: "call:from/f"},
	}}
	if _, err := u.Open(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := p.Requests()[0].Messages
	ids := []string{got[0].ToolCalls[0].ID, got[0].ToolCalls[1].ID, got[1].ToolCallID, got[2].ToolCallID}
	if diff := cmp.Diff([]string{"m_own", "m_call:from/f", "m_own", "m_call:from/f"}, ids); diff != "" {
		t.Errorf("ids the primary got (-want +got):\n%s", diff)
	}
}

// scriptedStream answers every Open with events, and after them err when
// it is set (a stream error).
type scriptedStream struct {
	bridgetest.Upstream
	events []bridge.Event
	err    error
	opened int
	closed int // streams that ended, read to their end or stopped
	mu     sync.Mutex
}

func (s *scriptedStream) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	if _, err := s.Upstream.Open(ctx, req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.opened++
	s.mu.Unlock()
	return &bridge.Call{Events: func(yield func(bridge.Event, error) bool) {
		defer func() { s.mu.Lock(); s.closed++; s.mu.Unlock() }()
		for _, ev := range s.events {
			if !yield(ev, nil) {
				return
			}
		}
		if s.err != nil {
			yield(bridge.Event{}, s.err)
		}
	}}, nil
}

func overloadedFinal() bridge.Event {
	return bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed, Reason: "overloaded",
		Error: &bridge.Error{Code: bridge.CodeUnavailable, Status: 529, Message: "Overloaded"}}}
}

// TestFallbackFirstEventFails: an upstream that answers, then fails by its
// fault before its first event that serves the call, is passed over like
// one that failed to answer; once the stream has served anything, or when
// the failure is the client's, the stream goes to the client as it came.
func TestFallbackFirstEventFails(t *testing.T) {
	started := bridge.Event{Kind: bridge.KindMessageStarted, ResponseID: "r"}
	text := bridge.Event{Kind: bridge.KindTextDelta, Text: "par"}
	usage := bridge.Event{Kind: bridge.KindUsage, Usage: &bridge.Usage{InputTokens: bridge.Int64(3)}}
	clientFault := bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusFailed,
		Error: &bridge.Error{Code: bridge.CodeInvalid, Status: 400, Message: "bad tool schema"}}}
	unavailable := &bridge.Error{Code: bridge.CodeUnavailable, Status: 503, Message: "upstream stream: overloaded"}
	tests := []struct {
		name       string
		events     []bridge.Event
		err        error
		wantServed string
		wantKinds  []bridge.Kind // what the served call yields ("error" for a stream error)
		wantTaken  []string
	}{
		{"an error event first", []bridge.Event{overloadedFinal()}, nil, "f", []bridge.Kind{bridge.KindMessageStarted, bridge.KindTextDelta, bridge.KindMessageDone, bridge.KindFinal}, []string{"p>f:unavailable"}},
		{"after message_started and usage", []bridge.Event{started, usage, overloadedFinal()}, nil, "f", []bridge.Kind{bridge.KindMessageStarted, bridge.KindTextDelta, bridge.KindMessageDone, bridge.KindFinal}, []string{"p>f:unavailable"}},
		{"a stream error first", nil, unavailable, "f", []bridge.Kind{bridge.KindMessageStarted, bridge.KindTextDelta, bridge.KindMessageDone, bridge.KindFinal}, []string{"p>f:unavailable"}},
		{"after text: the stream began", []bridge.Event{started, text, overloadedFinal()}, nil, "p", []bridge.Kind{bridge.KindMessageStarted, bridge.KindTextDelta, bridge.KindFinal}, nil},
		{"the client's fault", []bridge.Event{started, clientFault}, nil, "p", []bridge.Kind{bridge.KindMessageStarted, bridge.KindFinal}, nil},
		{"a stream error after text", []bridge.Event{started, text}, unavailable, "p", []bridge.Kind{bridge.KindMessageStarted, bridge.KindTextDelta, "error"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &scriptedStream{Upstream: bridgetest.Upstream{UpName: "p"}, events: tt.events, err: tt.err}
			f := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
			tk := &taken{}
			call, err := outbound.NewFallback(p, []bridge.Upstream{f}, outbound.FallbackConfig{OnFallback: tk.hook}).Open(t.Context(), &bridge.Request{Model: "m"})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if call.Upstream != tt.wantServed {
				t.Errorf("served by %q, want %q", call.Upstream, tt.wantServed)
			}
			var kinds []bridge.Kind
			for ev, err := range call.Events {
				if err != nil {
					kinds = append(kinds, "error")
					continue
				}
				kinds = append(kinds, ev.Kind)
			}
			if diff := cmp.Diff(tt.wantKinds, kinds); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTaken, tk.got); diff != "" {
				t.Errorf("fallbacks taken (-want +got):\n%s", diff)
			}
			if p.opened != 1 || p.closed != 1 {
				t.Errorf("primary streams opened %d, ended %d; want 1 and 1", p.opened, p.closed)
			}
		})
	}
}

// TestFallbackFirstEventLastAndAll: the last upstream's stream is passed
// on as it comes, and when every earlier one failed at its first event the
// client gets the last's own stream; an agent primary, which may have
// started the work, is not passed over for an error event.
func TestFallbackFirstEventLastAndAll(t *testing.T) {
	p := &scriptedStream{Upstream: bridgetest.Upstream{UpName: "p"}, events: []bridge.Event{overloadedFinal()}}
	f := &scriptedStream{Upstream: bridgetest.Upstream{UpName: "f"}, events: []bridge.Event{overloadedFinal()}}
	call, err := outbound.NewFallback(p, []bridge.Upstream{f}, outbound.FallbackConfig{}).Open(t.Context(), &bridge.Request{Model: "m"})
	if err != nil || call.Upstream != "f" {
		t.Fatalf("Open: %v, served by %v; want the last fallback's stream", err, call)
	}
	var finals int
	for ev := range call.Events {
		if ev.Kind == bridge.KindFinal && ev.Final.Status == bridge.StatusFailed {
			finals++
		}
	}
	if finals != 1 {
		t.Errorf("%d failed finals from the last fallback, want its 1", finals)
	}

	// The primary fails at its first event, the fallback before answering:
	// the primary's failure is the call's.
	p = &scriptedStream{Upstream: bridgetest.Upstream{UpName: "p"}, events: []bridge.Event{overloadedFinal()}}
	e500 := &bridge.Error{Code: bridge.CodeUpstream, Status: 500, Message: "boom"}
	_, err = outbound.NewFallback(p, []bridge.Upstream{&bridgetest.Upstream{UpName: "f", OpenErr: e500}}, outbound.FallbackConfig{}).
		Open(t.Context(), &bridge.Request{Model: "m"})
	if be := bridge.AsError(err); be.Code != bridge.CodeUnavailable || be.Status != 529 {
		t.Errorf("err %v, want the primary's overloaded error", err)
	}

	agent := &scriptedStream{Upstream: bridgetest.Upstream{UpName: "agent"}, events: []bridge.Event{overloadedFinal()}}
	fb := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
	call, err = outbound.NewFallback(agent, []bridge.Upstream{fb}, outbound.FallbackConfig{
		Idempotent: func(up bridge.Upstream) bool { return up.Name() != "agent" }}).Open(t.Context(), &bridge.Request{Model: "m"})
	if err != nil || call.Upstream != "agent" || len(fb.Requests()) != 0 {
		t.Errorf("agent primary: %v, served by %q, %d fallback calls; want the agent's stream, no fallback", err, call.Upstream, len(fb.Requests()))
	}
	drain(call)
}

// TestFallbackFirstEventCountsInTheBreaker: a primary behind its breaker
// that answers and then fails at once is counted as failing, though the
// fallback stops its stream there: after Failures of them the breaker opens
// and the primary is no longer asked.
func TestFallbackFirstEventCountsInTheBreaker(t *testing.T) {
	p := &scriptedStream{Upstream: bridgetest.Upstream{UpName: "p"}, events: []bridge.Event{{Kind: bridge.KindMessageStarted}, overloadedFinal()}}
	b := outbound.NewBreaker("p", outbound.BreakerConfig{Failures: 2, OpenFor: time.Minute}, nil, nil)
	fb := &bridgetest.Upstream{UpName: "f", Events: bridgetest.TextEvents("hi")}
	u := outbound.NewFallback(outbound.Wrap(p, b.Middleware()), []bridge.Upstream{fb}, outbound.FallbackConfig{})
	for i := range 4 {
		call, err := u.Open(t.Context(), &bridge.Request{Model: "m"})
		if err != nil || call.Upstream != "f" {
			t.Fatalf("call %d: %v, served by %v", i, err, call)
		}
		if err := drain(call); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.Requests()); n != 2 {
		t.Errorf("the primary was asked %d times; its breaker opens after 2 failures", n)
	}
}

// resumable is an upstream that can resume runs: it records the runs it
// was asked to resume and answers with its events.
type resumable struct {
	bridgetest.Upstream
	resumed []string
}

func (r *resumable) Resume(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
	r.resumed = append(r.resumed, run.ID)
	return r.Upstream.Open(ctx, req)
}

// TestFallbackResumerFor: a run resumes over the member of the group that
// served it, primary or fallback, through the wrappers each sits behind,
// and the call names that member; a member that cannot resume, or a name
// that is none of the group's, gives no Resumer.
func TestFallbackResumerFor(t *testing.T) {
	primary := &resumable{Upstream: bridgetest.Upstream{UpName: "p", Events: bridgetest.TextEvents("from p")}}
	agent := &resumable{Upstream: bridgetest.Upstream{UpName: "agent", UpDialect: "a2a", Events: bridgetest.TextEvents("from agent")}}
	plain := &bridgetest.Upstream{UpName: "plain"}
	noop := outbound.Retry(outbound.RetryConfig{Disabled: true}, true)
	f := outbound.NewFallback(outbound.Wrap(primary, noop), []bridge.Upstream{outbound.Wrap(plain, noop), outbound.Wrap(agent, noop)},
		outbound.FallbackConfig{})

	for _, name := range []string{"p", "agent"} {
		res, ok := bridge.ResumerFor(f, name)
		if !ok {
			t.Fatalf("no Resumer for %s", name)
		}
		call, err := res.Resume(t.Context(), &bridge.Request{Model: "m"}, &bridge.Run{ID: "run_" + name, Upstream: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if call.Upstream != name {
			t.Errorf("resumed over %s, the call names %q", name, call.Upstream)
		}
		drain(call)
	}
	if !slices.Equal(primary.resumed, []string{"run_p"}) || !slices.Equal(agent.resumed, []string{"run_agent"}) {
		t.Errorf("resumed: primary %v, agent %v", primary.resumed, agent.resumed)
	}
	for _, name := range []string{"plain", "elsewhere"} {
		if _, ok := bridge.ResumerFor(f, name); ok {
			t.Errorf("a Resumer for %s", name)
		}
	}
	// Outside a group, only the upstream's own name.
	if _, ok := bridge.ResumerFor(primary, "agent"); ok {
		t.Error("a Resumer for another upstream's run")
	}
}
