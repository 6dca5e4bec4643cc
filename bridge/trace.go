package bridge

// The run's span and its attributes.

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Run span attribute keys and event names.
const (
	attrRunID        = attribute.Key("bridge.run.id")
	attrSessionID    = attribute.Key("bridge.session.id")
	attrInbound      = attribute.Key("bridge.dialect.inbound")
	attrOutbound     = attribute.Key("bridge.dialect.outbound")
	attrUpstream     = attribute.Key("bridge.upstream.name")
	attrModel        = attribute.Key("gen_ai.request.model")
	attrOutcome      = attribute.Key("bridge.run.outcome")
	attrStopReason   = attribute.Key("bridge.stop_reason")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrResumeReason = attribute.Key("bridge.resume.reason")
	attrAfterSeq     = attribute.Key("bridge.resume.after_seq")
	attrCause        = attribute.Key("bridge.cancel.cause")
	attrSteers       = attribute.Key("bridge.steer.messages")
	attrLink         = attribute.Key("bridge.link")

	eventFirstToken = "first_token"
	eventResume     = "resume"
	eventCancel     = "cancel"
	eventSteer      = "steer"
	eventHandover   = "handover"
)

// runTrace is what a run's span and its end log line need. The pump
// goroutine owns it.
type runTrace struct {
	span       trace.Span
	start      time.Time // when Start began
	firstToken time.Time
}

// token notes the run's first token (text, reasoning or a tool call).
func (rt *runTrace) token(e *Engine, k Kind) {
	if !rt.firstToken.IsZero() || (k != KindTextDelta && k != KindReasoningDelta && k != KindToolCallStarted) {
		return
	}
	rt.firstToken = e.now().UTC()
	rt.span.AddEvent(eventFirstToken, trace.WithTimestamp(rt.firstToken))
}

// steer notes steering messages joining the run's next model call.
func (rt *runTrace) steer(n int) {
	rt.span.AddEvent(eventSteer, trace.WithAttributes(attrSteers.Int(n)))
}

// end sets the run's outcome on its span (ended by Start's goroutine).
func (rt *runTrace) end(run *Run) {
	if !rt.span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attrOutcome.String(string(run.Status))}
	if run.StopReason != "" {
		attrs = append(attrs, attrStopReason.String(string(run.StopReason)))
	}
	if run.Usage.InputTokens != nil {
		attrs = append(attrs, attrInputTokens.Int64(*run.Usage.InputTokens))
	}
	if run.Usage.OutputTokens != nil {
		attrs = append(attrs, attrOutputTokens.Int64(*run.Usage.OutputTokens))
	}
	rt.span.SetAttributes(attrs...)
	if run.Status == StatusFailed || run.Status == StatusInterrupted {
		rt.span.SetStatus(codes.Error, run.Reason)
	}
}

// ttftMillis is the time to first token in milliseconds, -1 for none.
func (rt *runTrace) ttftMillis() float64 {
	if rt.firstToken.IsZero() {
		return -1
	}
	return millis(rt.firstToken.Sub(rt.start))
}

// millis renders d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runSpanAttributes are the run span's attributes known at its start.
func runSpanAttributes(run *Run) []attribute.KeyValue {
	return []attribute.KeyValue{
		attrRunID.String(run.ID), attrSessionID.String(run.SessionID),
		attrInbound.String(run.Inbound), attrOutbound.String(run.Outbound),
		attrUpstream.String(run.Upstream), attrModel.String(run.Model),
	}
}

// originLinks links to the trace a run started in (a continued or steered
// run's first request) when ctx is in another trace. Only the trace id is
// stored, so the link names the trace, not a span.
func originLinks(ctx context.Context, traceID string) []trace.Link {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil || tid == trace.SpanContextFromContext(ctx).TraceID() {
		return nil
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid})
	return []trace.Link{{SpanContext: sc, Attributes: []attribute.KeyValue{attrLink.String("run origin")}}}
}
