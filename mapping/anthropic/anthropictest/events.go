package anthropictest

import (
	"encoding/json"
	"fmt"
)

// Event is one named SSE event: "event: Name" and "data: Data".
type Event struct {
	Name string
	Data string
}

// q quotes s as a JSON string.
func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// Events builds a Messages stream as the real API sends it: message_start,
// blocks with their deltas, message_delta, message_stop. Block indices are
// counted for the caller.
type Events struct {
	ID, Model string
	out       []Event
	next      int
}

func (e *Events) add(name, data string) *Events {
	e.out = append(e.out, Event{Name: name, Data: data})
	return e
}

// Start adds message_start with the input counts (cache counts when > 0).
func (e *Events) Start(input, cacheRead, cacheCreation int) *Events {
	usage := fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1,"service_tier":"standard"}`,
		input, cacheCreation, cacheRead)
	return e.add("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`,
		e.ID, e.Model, usage))
}

// Ping adds a ping event.
func (e *Events) Ping() *Events { return e.add("ping", `{"type": "ping"}`) }

func (e *Events) blockStart(block string) int {
	i := e.next
	e.next++
	e.add("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block))
	return i
}

func (e *Events) delta(i int, delta string) {
	e.add("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta))
}

func (e *Events) stop(i int) {
	e.add("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

// Text adds a text block with one text_delta per piece.
func (e *Events) Text(pieces ...string) *Events {
	i := e.blockStart(`{"type":"text","text":""}`)
	for _, p := range pieces {
		e.delta(i, `{"type":"text_delta","text":`+q(p)+`}`)
	}
	e.stop(i)
	return e
}

// Thinking adds a thinking block: thinking_delta per piece, then the
// signature_delta.
func (e *Events) Thinking(signature string, pieces ...string) *Events {
	i := e.blockStart(`{"type":"thinking","thinking":"","signature":""}`)
	for _, p := range pieces {
		e.delta(i, `{"type":"thinking_delta","thinking":`+q(p)+`}`)
	}
	if signature != "" {
		e.delta(i, `{"type":"signature_delta","signature":`+q(signature)+`}`)
	}
	e.stop(i)
	return e
}

// Redacted adds a redacted_thinking block.
func (e *Events) Redacted(data string) *Events {
	i := e.blockStart(`{"type":"redacted_thinking","data":` + q(data) + `}`)
	e.stop(i)
	return e
}

// ToolUse adds a tool_use block whose input arrives in the fragments (the
// first input_json_delta is empty, as the real API sends it).
func (e *Events) ToolUse(id, name string, fragments ...string) *Events {
	i := e.blockStart(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":{}}`, id, name))
	e.delta(i, `{"type":"input_json_delta","partial_json":""}`)
	for _, f := range fragments {
		e.delta(i, `{"type":"input_json_delta","partial_json":`+q(f)+`}`)
	}
	e.stop(i)
	return e
}

// Delta adds message_delta with the stop reason and the output count.
func (e *Events) Delta(stopReason string, output int) *Events {
	return e.add("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`,
		stopReason, output))
}

// Stop adds message_stop.
func (e *Events) Stop() *Events { return e.add("message_stop", `{"type":"message_stop"}`) }

// Error adds an in-stream error event.
func (e *Events) Error(typ, msg string) *Events {
	return e.add("error", fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s}}`, typ, q(msg)))
}

// Raw adds an event as given.
func (e *Events) Raw(name, data string) *Events { return e.add(name, data) }

// List returns the events.
func (e *Events) List() []Event { return e.out }
