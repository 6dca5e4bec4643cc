package responsestest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// q quotes s as a JSON string.
func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// Events builds a response's typed events as OpenAI streams them:
// sequence numbers from 0, items numbered by output_index, ids of the
// upstream's own ("msg_…", "fc_…", "rs_…").
type Events struct {
	ID, Model string
	seq       int
	out       []string
	items     []string // the completed items, for the terminal snapshot
}

func (e *Events) add(typ string, fields string) *Events {
	ev := fmt.Sprintf(`{"type":%q,"sequence_number":%d%s}`, typ, e.seq, fields)
	e.seq++
	e.out = append(e.out, ev)
	return e
}

// snapshot renders the Response object with status, output and usage.
func (e *Events) snapshot(status, output, usage, extra string) string {
	if usage == "" {
		usage = "null"
	}
	return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1760000000,"status":%q,"background":false,"error":null,`+
		`"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":%q,"output":[%s],"parallel_tool_calls":true,`+
		`"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1.0,`+
		`"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":%s,`+
		`"user":null,"metadata":{}%s}`, e.ID, status, e.Model, output, usage, extra)
}

// Created adds response.created and response.in_progress.
func (e *Events) Created() *Events {
	e.add("response.created", `,"response":`+e.snapshot("in_progress", "", "", ""))
	return e.add("response.in_progress", `,"response":`+e.snapshot("in_progress", "", "", ""))
}

func (e *Events) itemID(prefix string) string {
	return fmt.Sprintf("%s_%s_%d", prefix, e.ID, len(e.items))
}

// Text adds a message item whose text comes in the given pieces.
func (e *Events) Text(pieces ...string) *Events {
	n, id := len(e.items), e.itemID("msg")
	e.add("response.output_item.added", fmt.Sprintf(`,"output_index":%d,"item":{"id":%q,"type":"message","status":"in_progress","content":[],"role":"assistant"}`, n, id))
	e.add("response.content_part.added", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`, id, n))
	for _, p := range pieces {
		e.add("response.output_text.delta", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"content_index":0,"delta":%s,"logprobs":[],"obfuscation":"k3"`, id, n, q(p)))
	}
	text := q(strings.Join(pieces, ""))
	e.add("response.output_text.done", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"content_index":0,"text":%s,"logprobs":[]`, id, n, text))
	part := `{"type":"output_text","annotations":[],"logprobs":[],"text":` + text + `}`
	e.add("response.content_part.done", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"content_index":0,"part":%s`, id, n, part))
	item := fmt.Sprintf(`{"id":%q,"type":"message","status":"completed","content":[%s],"role":"assistant"}`, id, part)
	e.items = append(e.items, item)
	return e.add("response.output_item.done", fmt.Sprintf(`,"output_index":%d,"item":%s`, n, item))
}

// Reasoning adds a reasoning item with one summary part made of pieces,
// and encrypted content when enc is set.
func (e *Events) Reasoning(enc string, pieces ...string) *Events {
	n, id := len(e.items), e.itemID("rs")
	e.add("response.output_item.added", fmt.Sprintf(`,"output_index":%d,"item":{"id":%q,"type":"reasoning","summary":[]}`, n, id))
	e.add("response.reasoning_summary_part.added", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"summary_index":0,"part":{"type":"summary_text","text":""}`, id, n))
	for _, p := range pieces {
		e.add("response.reasoning_summary_text.delta", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"summary_index":0,"delta":%s,"obfuscation":"x"`, id, n, q(p)))
	}
	text := q(strings.Join(pieces, ""))
	e.add("response.reasoning_summary_text.done", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"summary_index":0,"text":%s`, id, n, text))
	e.add("response.reasoning_summary_part.done", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"summary_index":0,"part":{"type":"summary_text","text":%s}`, id, n, text))
	encField := ""
	if enc != "" {
		encField = `,"encrypted_content":` + q(enc)
	}
	item := fmt.Sprintf(`{"id":%q,"type":"reasoning","summary":[{"type":"summary_text","text":%s}]%s}`, id, text, encField)
	e.items = append(e.items, item)
	return e.add("response.output_item.done", fmt.Sprintf(`,"output_index":%d,"item":%s`, n, item))
}

// FunctionCall adds a function_call item whose arguments come in the
// given fragments.
func (e *Events) FunctionCall(callID, name string, fragments ...string) *Events {
	n, id := len(e.items), e.itemID("fc")
	e.add("response.output_item.added", fmt.Sprintf(`,"output_index":%d,"item":{"id":%q,"type":"function_call","status":"in_progress","arguments":"","call_id":%q,"name":%q}`, n, id, callID, name))
	for _, f := range fragments {
		e.add("response.function_call_arguments.delta", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"delta":%s,"obfuscation":"y"`, id, n, q(f)))
	}
	args := q(strings.Join(fragments, ""))
	e.add("response.function_call_arguments.done", fmt.Sprintf(`,"item_id":%q,"output_index":%d,"arguments":%s`, id, n, args))
	item := fmt.Sprintf(`{"id":%q,"type":"function_call","status":"completed","arguments":%s,"call_id":%q,"name":%q}`, id, args, callID, name)
	e.items = append(e.items, item)
	return e.add("response.output_item.done", fmt.Sprintf(`,"output_index":%d,"item":%s`, n, item))
}

func usage(in, out int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, in, out, in+out)
}

// Completed adds response.completed with the items so far and the usage.
func (e *Events) Completed(in, out int) *Events {
	return e.add("response.completed", `,"response":`+e.snapshot("completed", strings.Join(e.items, ","), usage(in, out), ""))
}

// CompletedWithoutUsage adds response.completed with usage null, as a
// server that does not count tokens sends it.
func (e *Events) CompletedWithoutUsage() *Events {
	return e.add("response.completed", `,"response":`+e.snapshot("completed", strings.Join(e.items, ","), "", ""))
}

// Incomplete adds response.incomplete with the reason.
func (e *Events) Incomplete(reason string, in, out int) *Events {
	return e.add("response.incomplete", `,"response":`+e.snapshot("incomplete", strings.Join(e.items, ","), usage(in, out),
		`,"incomplete_details":{"reason":`+q(reason)+`}`))
}

// Failed adds response.failed with the response's error.
func (e *Events) Failed(code, message string) *Events {
	s := e.snapshot("failed", strings.Join(e.items, ","), "", "")
	s = strings.Replace(s, `"error":null`, `"error":{"code":`+q(code)+`,"message":`+q(message)+`}`, 1)
	return e.add("response.failed", `,"response":`+s)
}

// Error adds an error event (flat code, message and param, as OpenAI
// sends it).
func (e *Events) Error(code, message string) *Events {
	cv := "null"
	if code != "" {
		cv = q(code)
	}
	return e.add("error", fmt.Sprintf(`,"code":%s,"message":%s,"param":null`, cv, q(message)))
}

// Raw adds an event as given (its sequence_number is set).
func (e *Events) Raw(typ, fields string) *Events { return e.add(typ, fields) }

// List returns the payloads.
func (e *Events) List() []string { return e.out }
