package otel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/kit/endpoint"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/bridge-dev/bridge/bridge"
)

// The GenAI semantic-convention attribute keys (semconv v1.40.0 names them;
// v1.43.0, which the rest of this package uses, no longer carries them).
const (
	keyGenAIOperation     = attribute.Key("gen_ai.operation.name")
	keyGenAIProvider      = attribute.Key("gen_ai.provider.name")
	keyGenAISystem        = attribute.Key("gen_ai.system") // deprecated for gen_ai.provider.name; still read by many backends
	keyGenAIConversation  = attribute.Key("gen_ai.conversation.id")
	keyGenAIRequestModel  = attribute.Key("gen_ai.request.model")
	keyGenAIMaxTokens     = attribute.Key("gen_ai.request.max_tokens")
	keyGenAITemperature   = attribute.Key("gen_ai.request.temperature")
	keyGenAITopP          = attribute.Key("gen_ai.request.top_p")
	keyGenAITopK          = attribute.Key("gen_ai.request.top_k")
	keyGenAIStop          = attribute.Key("gen_ai.request.stop_sequences")
	keyGenAISeed          = attribute.Key("gen_ai.request.seed")
	keyGenAIResponseModel = attribute.Key("gen_ai.response.model")
	keyGenAIResponseID    = attribute.Key("gen_ai.response.id")
	keyGenAIFinish        = attribute.Key("gen_ai.response.finish_reasons")
	keyGenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	keyGenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	keyGenAICacheRead     = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	keyGenAIInputMsgs     = attribute.Key("gen_ai.input.messages")
	keyGenAIOutputMsgs    = attribute.Key("gen_ai.output.messages")
	keyGenAIToolName      = attribute.Key("gen_ai.tool.name")
	keyGenAIToolCallID    = attribute.Key("gen_ai.tool.call.id")
	keyGenAIToolType      = attribute.Key("gen_ai.tool.type")
	keyGenAIToolArgs      = attribute.Key("gen_ai.tool.call.arguments")
	keyGenAIToolResult    = attribute.Key("gen_ai.tool.call.result")
)

// The bridge's own attribute keys.
var (
	attrRunID        = attribute.Key("bridge.run.id")
	attrUpstream     = attribute.Key(keyUpstream)
	attrInbound      = attribute.Key(keyInbound)
	attrOutbound     = attribute.Key(keyOutbound)
	attrOutcome      = attribute.Key(keyOutcome)
	attrToolIndex    = attribute.Key("bridge.tool_call.index")
	attrToolExecutor = attribute.Key("bridge.tool_call.executor")
	attrStopReason   = attribute.Key("bridge.stop_reason")
)

// EventFirstToken is the span event at the first token of a stream (text,
// reasoning or a tool call), on the upstream client span; the engine adds
// one of the same name to the run span.
const EventFirstToken = "first_token"

// GenAI names an upstream in the GenAI semantic conventions: its
// gen_ai.provider.name and gen_ai.operation.name (chat for a model,
// invoke_agent for an agent). The server's dialect table gives each
// dialect's; zero fields default to the upstream's dialect and chat.
type GenAI struct {
	Provider, Operation string
}

// Upstream returns the go-kit endpoint middleware for calls to u
// (outbound.Wrap(u, t.Upstream(u, g))), named in spans as g says: a client span per call with the GenAI
// semantic conventions, named "chat MODEL", child of the context's span (the
// engine's run span), and carried in the context the call's HTTP request is
// made with, so Transport sends it upstream as the traceparent.
//
// The middleware wraps the call's stream: the span ends when the stream
// ends, is abandoned or fails, and records the response model and id, the
// usage, the finish reason and a first_token event from the events. Each
// tool call the stream makes gets a child span "tool_call NAME". The run
// metrics are recorded here too.
func (t *Telemetry) Upstream(u bridge.Upstream, g GenAI) endpoint.Middleware {
	dialect, name := u.Dialect(), u.Name()
	provider, op := cmp.Or(g.Provider, dialect), cmp.Or(g.Operation, "chat")
	fixed := []attribute.KeyValue{
		keyGenAIOperation.String(op),
		keyGenAIProvider.String(provider),
		keyGenAISystem.String(provider),
		attrUpstream.String(name),
		attrOutbound.String(dialect),
	}
	sets := &metricSets{name: name, dialect: dialect}
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, request any) (any, error) {
			req, _ := request.(*bridge.Request)
			var model, inbound string
			if req != nil {
				model, inbound = req.Model, req.Inbound
			}
			pair := sets.of(inbound)
			start := t.now()
			spanName := op
			if model != "" {
				spanName += " " + model
			}
			ctx, span := t.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
			if span.IsRecording() {
				span.SetAttributes(fixed...)
				if req != nil {
					span.SetAttributes(requestAttributes(req, t.recordContent)...)
				}
			}
			t.m.started.Add(ctx, 1, pair.pair)

			resp, err := next(ctx, request)
			call, _ := resp.(*bridge.Call)
			if err == nil && call == nil {
				err = errors.New("otel: upstream returned no call")
			}
			if err != nil {
				outcome := "failed"
				if ctx.Err() != nil {
					outcome = string(bridge.StatusCancelled)
				} else {
					t.m.upErrs.Add(ctx, 1, sets.errCode(string(bridge.ErrorCode(err))))
				}
				end := t.now()
				t.m.ended.Add(ctx, 1, pair.outcome(outcome))
				t.m.duration.Record(ctx, end.Sub(start).Seconds(), pair.pair)
				if span.IsRecording() {
					failSpan(span, err)
					span.SetAttributes(attrOutcome.String(outcome))
				}
				span.End(trace.WithTimestamp(end))
				return resp, err
			}
			t.m.active.Add(ctx, 1, pair.pair)
			s := &upstreamStream{t: t, span: span, start: start, pair: pair, sets: sets}
			// In place, not a copy: a call may add to its Dropped while it
			// streams (a resumed A2A task that lost text), and the engine
			// reads it from the call it was given.
			call.Events = s.wrap(ctx, call.Events)
			return call, nil
		}
	}
}

// metricSets holds the attribute sets of one upstream's run metrics, made
// once each: metric.WithAttributes sorts, dedupes and hashes its attributes
// into a set at every call, which cost each request more than the metrics
// themselves (a no-op meter pays it too). The keys are few: the inbound
// dialects, the outcomes and the error codes; past maxSets a set is made
// per call instead of cached.
type metricSets struct {
	name, dialect string
	pairs         sync.Map // inbound dialect -> *pairSets
	codes         sync.Map // error code -> metric.MeasurementOption
	n             atomic.Int32
}

// pairSets are the sets of one (inbound, outbound) pair.
type pairSets struct {
	kvs      []attribute.KeyValue
	pair     metric.MeasurementOption
	outcomes sync.Map // outcome -> metric.MeasurementOption
	n        atomic.Int32
}

const maxSets = 64

func (m *metricSets) of(inbound string) *pairSets {
	if p, ok := m.pairs.Load(inbound); ok {
		return p.(*pairSets)
	}
	kvs := []attribute.KeyValue{attrInbound.String(inbound), attrOutbound.String(m.dialect)}
	p := &pairSets{kvs: kvs, pair: metric.WithAttributeSet(attribute.NewSet(kvs...))}
	if m.n.Load() >= maxSets {
		return p
	}
	got, loaded := m.pairs.LoadOrStore(inbound, p)
	if !loaded {
		m.n.Add(1)
	}
	return got.(*pairSets)
}

// outcome is the pair's set with the outcome attribute.
func (p *pairSets) outcome(o string) metric.MeasurementOption {
	if opt, ok := p.outcomes.Load(o); ok {
		return opt.(metric.MeasurementOption)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(p.kvs), attrOutcome.String(o))...))
	if p.n.Load() < maxSets {
		if _, loaded := p.outcomes.LoadOrStore(o, opt); !loaded {
			p.n.Add(1)
		}
	}
	return opt
}

// errCode is the set of an upstream error metric.
func (m *metricSets) errCode(code string) metric.MeasurementOption {
	if opt, ok := m.codes.Load(code); ok {
		return opt.(metric.MeasurementOption)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrUpstream.String(m.name), attrOutbound.String(m.dialect),
		attribute.Key(keyErrCode).String(code)))
	if m.n.Load() < maxSets {
		if _, loaded := m.codes.LoadOrStore(code, opt); !loaded {
			m.n.Add(1)
		}
	}
	return opt
}

// requestAttributes are the request's GenAI attributes.
func requestAttributes(req *bridge.Request, content bool) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	if req.Model != "" {
		attrs = append(attrs, keyGenAIRequestModel.String(req.Model))
	}
	if req.SessionID != "" {
		attrs = append(attrs, keyGenAIConversation.String(req.SessionID))
	}
	if req.MaxTokens != nil {
		attrs = append(attrs, keyGenAIMaxTokens.Int64(*req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, keyGenAITemperature.Float64(*req.Temperature))
	}
	if req.TopP != nil {
		attrs = append(attrs, keyGenAITopP.Float64(*req.TopP))
	}
	if req.TopK != nil {
		attrs = append(attrs, keyGenAITopK.Int64(*req.TopK))
	}
	if req.Seed != nil {
		attrs = append(attrs, keyGenAISeed.Int64(*req.Seed))
	}
	if len(req.Stop) > 0 {
		attrs = append(attrs, keyGenAIStop.StringSlice(req.Stop))
	}
	if content {
		attrs = append(attrs, keyGenAIInputMsgs.String(messagesJSON(req.Messages)))
	}
	return attrs
}

// messagesJSON renders messages in the GenAI input-messages shape: role and
// parts, text only (media is named by type, never inlined).
func messagesJSON(msgs []bridge.Message) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content,omitempty"`
		ID      string `json:"id,omitempty"`
		Name    string `json:"name,omitempty"`
		Args    string `json:"arguments,omitempty"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		msg := message{Role: string(m.Role), Parts: []part{}}
		for _, p := range m.Parts {
			switch p.Type {
			case bridge.PartText, bridge.PartRefusal:
				msg.Parts = append(msg.Parts, part{Type: "text", Content: p.Text})
			case bridge.PartReasoning:
				msg.Parts = append(msg.Parts, part{Type: "reasoning", Content: p.Text})
			default:
				msg.Parts = append(msg.Parts, part{Type: string(p.Type)})
			}
		}
		for _, c := range m.ToolCalls {
			msg.Parts = append(msg.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Args: c.Arguments})
		}
		if m.ToolCallID != "" {
			msg.Parts = append(msg.Parts, part{Type: "tool_call_response", ID: m.ToolCallID})
		}
		out = append(out, msg)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// failSpan marks span failed with err's code and its client-safe message
// (never a Go error string, which can name internal addresses).
func failSpan(span trace.Span, err error) {
	be := bridge.AsError(err)
	span.SetStatus(codes.Error, be.Message)
	span.SetAttributes(semconv.ErrorTypeKey.String(string(be.Code)))
	if be.Status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(be.Status))
	}
}

// upstreamStream follows one upstream call's events for its span and
// metrics. Its methods run on the goroutine ranging over the stream.
type upstreamStream struct {
	t     *Telemetry
	span  trace.Span
	start time.Time
	pair  *pairSets
	sets  *metricSets

	first  bool
	final  *bridge.Final
	usage  bridge.Usage
	text   strings.Builder // the answer, when content is recorded
	tools  map[string]*toolSpan
	order  []string // tool keys in the order they started
	failed error
}

// toolSpan is one tool call's span.
type toolSpan struct {
	span  trace.Span
	agent bool // the upstream runs the tool: the span ends at its result
}

// wrap returns events with the span's bookkeeping around them; ctx is the
// call's (it holds the client span). The span ends when the range ends,
// however it ends.
func (s *upstreamStream) wrap(ctx context.Context, events bridge.Stream) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		stopped := false
		defer func() { s.end(ctx, stopped) }()
		for ev, err := range events {
			if err != nil {
				s.failed = err
				yield(ev, err)
				return
			}
			s.observe(ctx, &ev)
			if !yield(ev, nil) {
				stopped = true
				return
			}
		}
	}
}

// observe records what one event tells the span.
func (s *upstreamStream) observe(ctx context.Context, ev *bridge.Event) {
	rec := s.span.IsRecording()
	switch ev.Kind {
	case bridge.KindTextDelta, bridge.KindReasoningDelta, bridge.KindToolCallStarted:
		if !s.first {
			s.first = true
			now := s.t.now()
			s.t.m.ttft.Record(ctx, now.Sub(s.start).Seconds(), s.pair.pair)
			if rec {
				s.span.AddEvent(EventFirstToken, trace.WithTimestamp(now))
			}
		}
		if rec && s.t.recordContent && ev.Kind == bridge.KindTextDelta {
			s.text.WriteString(ev.Text)
		}
	case bridge.KindMessageStarted:
		if rec {
			if ev.Model != "" {
				s.span.SetAttributes(keyGenAIResponseModel.String(ev.Model))
			}
			if ev.ResponseID != "" {
				s.span.SetAttributes(keyGenAIResponseID.String(ev.ResponseID))
			}
		}
	case bridge.KindUsage:
		s.usage.Merge(ev.Usage)
	case bridge.KindFinal:
		if ev.Final != nil {
			f := *ev.Final
			s.final = &f
			s.usage.Merge(f.Usage)
		}
	}
	if rec {
		s.observeTool(ctx, ev)
	}
}

// observeTool starts and ends the tool-call spans.
func (s *upstreamStream) observeTool(ctx context.Context, ev *bridge.Event) {
	switch ev.Kind {
	case bridge.KindToolCallStarted:
		if ev.ToolCall == nil {
			return
		}
		key := toolKey(ev.ToolCall.ID, ev.Index)
		if s.tools == nil {
			s.tools = map[string]*toolSpan{}
		}
		if _, ok := s.tools[key]; ok {
			return
		}
		name := "tool_call"
		if ev.ToolCall.Name != "" {
			name += " " + ev.ToolCall.Name
		}
		_, span := s.t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			keyGenAIToolName.String(ev.ToolCall.Name), keyGenAIToolCallID.String(ev.ToolCall.ID),
			keyGenAIToolType.String("function"), attrToolIndex.Int(ev.Index)))
		s.tools[key] = &toolSpan{span: span, agent: ev.Source == bridge.SourceAgent}
		s.order = append(s.order, key)
	case bridge.KindToolCallDone:
		if ev.ToolCall == nil {
			return
		}
		ts := s.tools[toolKey(ev.ToolCall.ID, ev.Index)]
		if ts == nil {
			ts = s.tools[toolKey("", ev.Index)]
		}
		if ts == nil {
			return
		}
		if ev.ToolCall.ID != "" {
			ts.span.SetAttributes(keyGenAIToolCallID.String(ev.ToolCall.ID))
		}
		if s.t.recordContent {
			ts.span.SetAttributes(keyGenAIToolArgs.String(ev.ToolCall.Arguments))
		}
		if ev.Source == bridge.SourceAgent {
			ts.agent = true
		}
		if !ts.agent {
			ts.span.SetAttributes(attrToolExecutor.String("client"))
			ts.span.End()
		}
	case bridge.KindToolResult:
		if ev.ToolResult == nil {
			return
		}
		ts := s.tools[toolKey(ev.ToolResult.CallID, -1)]
		if ts == nil {
			return
		}
		ts.span.SetAttributes(attrToolExecutor.String("agent"), keyGenAIOperation.String("execute_tool"))
		if ev.ToolResult.IsError {
			ts.span.SetStatus(codes.Error, "tool returned an error")
		}
		if s.t.recordContent {
			b, _ := json.Marshal(ev.ToolResult.Content)
			ts.span.SetAttributes(keyGenAIToolResult.String(string(b)))
		}
		ts.span.End()
	}
}

// toolKey keys a tool call by its id, else by its index.
func toolKey(id string, index int) string {
	if id != "" {
		return "id:" + id
	}
	return "index:" + strconv.Itoa(index)
}

// end closes the span and records the run metrics. stopped says the
// consumer stopped ranging before the stream ended.
func (s *upstreamStream) end(ctx context.Context, stopped bool) {
	end := s.t.now()
	outcome := "failed"
	switch {
	case s.failed != nil && ctx.Err() != nil:
		outcome = string(bridge.StatusCancelled)
	case s.failed != nil:
		s.t.m.upErrs.Add(ctx, 1, s.sets.errCode(string(bridge.ErrorCode(s.failed))))
	case stopped:
		outcome = "stopped"
	case s.final != nil:
		outcome = string(s.final.Status)
	}
	s.t.m.active.Add(ctx, -1, s.pair.pair)
	s.t.m.ended.Add(ctx, 1, s.pair.outcome(outcome))
	s.t.m.duration.Record(ctx, end.Sub(s.start).Seconds(), s.pair.pair)
	if !s.span.IsRecording() {
		s.span.End()
		return
	}
	for _, k := range s.order { // tool calls the stream left open
		if ts := s.tools[k]; ts.span.IsRecording() {
			ts.span.End(trace.WithTimestamp(end))
		}
	}
	attrs := []attribute.KeyValue{attrOutcome.String(outcome)}
	if u := s.usage; !u.IsZero() {
		if u.InputTokens != nil {
			attrs = append(attrs, keyGenAIInputTokens.Int64(*u.InputTokens))
		}
		if u.OutputTokens != nil {
			attrs = append(attrs, keyGenAIOutputTokens.Int64(*u.OutputTokens))
		}
		if u.CacheReadTokens != nil {
			attrs = append(attrs, keyGenAICacheRead.Int64(*u.CacheReadTokens))
		}
	}
	if s.final != nil && s.final.StopReason != "" {
		attrs = append(attrs, keyGenAIFinish.StringSlice([]string{finishReason(s.final.StopReason)}),
			attrStopReason.String(string(s.final.StopReason)))
	}
	if s.t.recordContent && s.text.Len() > 0 {
		b, _ := json.Marshal([]map[string]any{{"role": "assistant", "parts": []map[string]string{{"type": "text", "content": s.text.String()}}}})
		attrs = append(attrs, keyGenAIOutputMsgs.String(string(b)))
	}
	s.span.SetAttributes(attrs...)
	switch {
	case s.failed != nil && outcome != string(bridge.StatusCancelled):
		failSpan(s.span, s.failed)
	case s.final != nil && s.final.Status == bridge.StatusFailed:
		if s.final.Error != nil {
			failSpan(s.span, s.final.Error)
		} else {
			s.span.SetStatus(codes.Error, s.final.Reason)
		}
	}
	s.span.End(trace.WithTimestamp(end))
}

// finishReason is the OpenAI-style finish reason GenAI backends know for a
// hub stop reason.
func finishReason(r bridge.StopReason) string {
	switch r {
	case bridge.StopEndTurn, bridge.StopSequence:
		return "stop"
	case bridge.StopMaxTokens:
		return "length"
	case bridge.StopToolUse:
		return "tool_calls"
	case bridge.StopContentFilter, bridge.StopRefusal:
		return "content_filter"
	}
	return string(r)
}
