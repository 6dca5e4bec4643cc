package wire

import (
	"bytes"
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// Emitter is the emit/fail skeleton the SSE stream decoders share: it
// yields events to a bridge.Stream's consumer until the consumer stops or
// an error is yielded, after which it yields nothing (the Stream
// contract). A decoder embeds one; it belongs to one stream.
type Emitter struct {
	yield   func(bridge.Event, error) bool
	stopped bool
}

// NewEmitter returns an Emitter yielding to yield.
func NewEmitter(yield func(bridge.Event, error) bool) Emitter { return Emitter{yield: yield} }

// Emit yields ev, with Source model when it names none: what an upstream
// model's stream says is the model's unless the decoder says otherwise.
func (e *Emitter) Emit(ev bridge.Event) {
	if e.stopped {
		return
	}
	if ev.Source == "" {
		ev.Source = bridge.SourceModel
	}
	if !e.yield(ev, nil) {
		e.stopped = true
	}
}

// Fail yields err and stops the stream.
func (e *Emitter) Fail(err error) {
	if e.stopped {
		return
	}
	e.stopped = true
	e.yield(bridge.Event{}, err)
}

// Stopped reports whether the consumer stopped or an error was yielded.
func (e *Emitter) Stopped() bool { return e.stopped }

// SSEFrames says how RunSSE reads a stream: Frame takes each event and
// reports whether the stream is finished; End is called at the end of the
// events, to yield the final event or the error of a stream cut short.
type SSEFrames interface {
	Frame(ev SSEEvent) (finished bool)
	End()
}

// RunSSE reads sr's events into f until the consumer stops, f finishes,
// or the events end: at the end of the body, or at a data: [DONE] when
// done ends the stream (OpenAI's end marker), it calls f.End. A read
// error fails the stream.
func (e *Emitter) RunSSE(sr *SSEReader, done bool, f SSEFrames) { e.Run(sr.Next, done, f) }

// Run is RunSSE over any source of events: next returns them in turn,
// io.EOF at their end (a WebSocket's messages, each one event's data).
func (e *Emitter) Run(next func() (SSEEvent, error), done bool, f SSEFrames) {
	for !e.stopped {
		ev, err := next()
		if err == io.EOF {
			f.End()
			return
		}
		if err != nil {
			e.Fail(err)
			return
		}
		if done && string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
			f.End()
			return
		}
		if f.Frame(ev) {
			return
		}
	}
}
