package responsestest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bridge-dev/bridge/mapping/internal/sseframe"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Frame is one SSE event as it came off the wire.
type Frame = sseframe.Frame

// ParseFrames splits an SSE body into frames (LF line ends, as the bridge
// writes). A body that ends inside a frame returns the frames before it and
// an error.
func ParseFrames(sse []byte) ([]Frame, error) { return sseframe.Parse(sse) }

// Check says what a stream must be.
type Check struct {
	// RunID, when set, is the run every frame's id: names (an event id,
	// its seq never going back).
	RunID string
	// FirstSeq is the first sequence_number (0, or starting_after+1 for a
	// resumed stream, which need not start with response.created).
	FirstSeq int64
	// Complete: the stream was read to its end, so it must end with a
	// terminal event.
	Complete bool
	// Model, when set, is the model every Response snapshot names.
	Model string
}

// ToolCall is one function_call item as a client accumulates it.
type ToolCall struct {
	OutputIndex          int
	ItemID               string
	CallID, Name, Args   string
	Status               string
	ArgumentsFromDeltas  bool
	ArgumentsDoneMatches bool
}

func (c ToolCall) String() string {
	return fmt.Sprintf("#%d %s %s(%s)", c.OutputIndex, c.CallID, c.Name, c.Args)
}

// ErrorEvent is an `error` event's payload.
type ErrorEvent struct {
	Type, Code, Message, Param string
	CodeNull                   bool
}

// Summary is what a stream (or a Response object) says.
type Summary struct {
	ResponseID string
	Status     string // the last snapshot's status
	Terminal   string // the terminal event's type, "" when none
	Text       string // output_text of every message item
	Refusal    string
	Reasoning  string // reasoning summary text
	Encrypted  []string
	Calls      []ToolCall
	Usage      *Usage
	Error      *ErrorEvent // the error event
	// ResponseError is a failed response's error (code and message).
	ResponseError    *struct{ Code, Message string }
	IncompleteReason string
	Items            int    // output items
	Final            []byte // the terminal Response object
	Events           int
}

// Usage is a ResponseUsage.
type Usage struct{ Input, Output, Total, Cached, Reasoning int64 }

// requiredResponse are the members of a Response the Open Responses schema
// requires (ResponseResource), each with the JSON kinds it may have.
var requiredResponse = map[string]string{
	"id": "s", "object": "s", "created_at": "n", "completed_at": "n0", "status": "s",
	"incomplete_details": "o0", "model": "s", "previous_response_id": "s0", "instructions": "s0",
	"output": "a", "error": "o0", "tools": "a", "tool_choice": "so", "truncation": "s",
	"parallel_tool_calls": "b", "text": "o", "top_p": "n", "presence_penalty": "n",
	"frequency_penalty": "n", "top_logprobs": "n", "temperature": "n", "reasoning": "o0",
	"usage": "o0", "max_output_tokens": "n0", "max_tool_calls": "n0", "store": "b",
	"background": "b", "service_tier": "s", "metadata": "o", "safety_identifier": "s0",
	"prompt_cache_key": "s0",
}

func kindOf(raw json.RawMessage) byte {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return 0
	}
	switch s[0] {
	case '"':
		return 's'
	case '{':
		return 'o'
	case '[':
		return 'a'
	case 't', 'f':
		return 'b'
	case 'n':
		return '0'
	}
	return 'n'
}

type item struct {
	kind, id, status string
	index            int
	parts            []*partState // message content
	summary          []string     // reasoning summary parts
	args             strings.Builder
	callID, name     string
	argsDone         bool
	done             bool
	json             json.RawMessage
}

type partState struct {
	typ  string
	text strings.Builder
	done bool
}

type checker struct {
	c        Check
	sum      *Summary
	problems []string
	frame    int
	at       string
	items    []*item
	byID     map[string]*item
	respID   string
	created  bool
	ended    bool
	lastPos  [2]int64
}

func (k *checker) bad(format string, args ...any) {
	k.problems = append(k.problems, fmt.Sprintf("event %d (%s): %s", k.frame, k.at, fmt.Sprintf(format, args...)))
}

// CheckStream holds frames to the Responses stream grammar and says what
// they carry. The problems are every rule broken; none for a valid stream:
//
//   - each frame has an event: line naming its type, one data: line with a
//     JSON object whose type is that name and whose sequence_number follows
//     the last (from Check.FirstSeq, no gap), and, with Check.RunID, one id:
//     line holding an event id of that run, never going back;
//   - a stream from the start opens with response.created then
//     response.in_progress, whose Response snapshots have every member the
//     Open Responses schema requires and the same response id;
//   - output_item.added numbers items from 0 with unique ids; every later
//     event of an item names its item_id and output_index consistently and
//     comes between its added and its done; content parts and summary
//     parts open before their deltas; a delta is not empty; each .done
//     carries exactly the text or arguments its deltas made;
//   - output_item.done carries the complete item (status completed or
//     incomplete) as the deltas made it;
//   - the terminal event (response.completed, .incomplete, .failed) is
//     last, after every item is done; its output lists exactly the items
//     done, in order; its status matches its type; completed and
//     incomplete carry usage; failed carries an error {code, message}; an
//     error event has code, message and param flat and nested in "error";
//   - no data: [DONE], nothing after the terminal event.
func CheckStream(frames []Frame, c Check) (*Summary, []string) {
	k := &checker{c: c, sum: &Summary{}, byID: map[string]*item{}, lastPos: [2]int64{-1, 0}}
	next := c.FirstSeq
	for i, f := range frames {
		k.frame, k.at = i, f.Event
		if k.ended {
			k.bad("a frame after the terminal event")
			continue
		}
		if f.Data == "[DONE]" {
			k.bad("data: [DONE] (the Responses stream has none)")
			continue
		}
		if len(f.Other) > 0 {
			k.bad("lines other than id, event and data: %q", f.Other)
		}
		if f.Datas != 1 {
			k.bad("%d data lines, want 1", f.Datas)
		}
		if c.RunID != "" {
			if f.IDs != 1 {
				k.bad("%d id lines, want 1", f.IDs)
			} else if run, pos, ok := sseframe.ParseID(f.ID); !ok || run != c.RunID {
				k.bad("id %q is not an event id of run %s", f.ID, c.RunID)
			} else {
				if !sseframe.Before(k.lastPos, pos) {
					k.bad("event id %q is not after the frame before's (every frame has an id of its own)", f.ID)
				}
				k.lastPos = pos
			}
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
			k.bad("data is not a JSON object: %v", err)
			continue
		}
		var typ string
		_ = json.Unmarshal(m["type"], &typ)
		if typ == "" || typ != f.Event {
			k.bad("type %q, event: line %q", typ, f.Event)
		}
		k.at = typ
		var seq *int64
		if err := json.Unmarshal(m["sequence_number"], &seq); err != nil || seq == nil {
			k.bad("no integer sequence_number")
		} else {
			if *seq != next {
				k.bad("sequence_number %d, want %d", *seq, next)
			}
			next = *seq + 1
		}
		k.sum.Events++
		k.event(typ, m, i == 0 && c.FirstSeq == 0)
	}
	if c.Complete && !k.ended {
		k.problems = append(k.problems, "the stream does not end with a terminal event")
	}
	k.summarize()
	return k.sum, k.problems
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func integer(raw json.RawMessage) (int, bool) {
	var n *int
	if err := json.Unmarshal(raw, &n); err != nil || n == nil {
		return 0, false
	}
	return *n, true
}

func (k *checker) event(typ string, m map[string]json.RawMessage, first bool) {
	if first && typ != "response.created" {
		k.bad("the stream does not start with response.created")
	}
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		if typ == "response.in_progress" && k.sum.Events == 2 && k.c.FirstSeq == 0 && !k.created {
			k.bad("response.in_progress before response.created")
		}
		if typ == "response.created" {
			if k.created {
				k.bad("a second response.created")
			}
			k.created = true
		}
		r := k.snapshot(m["response"])
		if st := str(r["status"]); st != "in_progress" && st != "queued" {
			k.bad("status %q", st)
		}
	case "response.output_item.added":
		k.itemAdded(m)
	case "response.content_part.added", "response.content_part.done":
		it := k.itemOf(m, "message")
		if it == nil {
			return
		}
		ci, _ := integer(m["content_index"])
		var p struct {
			Type    string  `json:"type"`
			Text    *string `json:"text"`
			Refusal *string `json:"refusal"`
		}
		_ = json.Unmarshal(m["part"], &p)
		if typ == "response.content_part.added" {
			if ci != len(it.parts) {
				k.bad("content_index %d, the item has %d parts", ci, len(it.parts))
			}
			if p.Type != "output_text" && p.Type != "refusal" {
				k.bad("part type %q", p.Type)
			}
			if p.Type == "output_text" && (p.Text == nil || *p.Text != "") || p.Type == "refusal" && (p.Refusal == nil || *p.Refusal != "") {
				k.bad("an added part is not empty")
			}
			it.parts = append(it.parts, &partState{typ: p.Type})
			return
		}
		ps := k.partOf(it, ci)
		if ps == nil {
			return
		}
		got := ""
		if p.Text != nil {
			got = *p.Text
		}
		if p.Refusal != nil {
			got = *p.Refusal
		}
		if p.Type != ps.typ || got != ps.text.String() {
			k.bad("part done %s %q, its deltas made %s %q", p.Type, got, ps.typ, ps.text.String())
		}
		ps.done = true
	case "response.output_text.delta", "response.refusal.delta", "response.output_text.done", "response.refusal.done":
		it := k.itemOf(m, "message")
		if it == nil {
			return
		}
		ci, _ := integer(m["content_index"])
		ps := k.partOf(it, ci)
		if ps == nil {
			return
		}
		want := "output_text"
		if strings.HasPrefix(typ, "response.refusal") {
			want = "refusal"
		}
		if ps.typ != want {
			k.bad("a %s event for a %s part", want, ps.typ)
		}
		if want == "output_text" && kindOf(m["logprobs"]) != 'a' {
			k.bad("logprobs is not an array")
		}
		if strings.HasSuffix(typ, ".delta") {
			d := str(m["delta"])
			if d == "" {
				k.bad("an empty delta")
			}
			ps.text.WriteString(d)
			return
		}
		key := "text"
		if want == "refusal" {
			key = "refusal"
		}
		if got := str(m[key]); got != ps.text.String() {
			k.bad("%s %q, the deltas made %q", key, got, ps.text.String())
		}
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		it := k.itemOf(m, "function_call")
		if it == nil {
			return
		}
		if typ == "response.function_call_arguments.delta" {
			d := str(m["delta"])
			if d == "" {
				k.bad("an empty arguments delta")
			}
			if it.argsDone {
				k.bad("an arguments delta after arguments.done")
			}
			it.args.WriteString(d)
			return
		}
		if got := str(m["arguments"]); got != it.args.String() {
			k.bad("arguments %q, the deltas made %q", got, it.args.String())
		}
		it.argsDone = true
	case "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done":
		it := k.itemOf(m, "reasoning")
		if it == nil {
			return
		}
		si, _ := integer(m["summary_index"])
		if typ == "response.reasoning_summary_part.added" {
			if si != len(it.summary) {
				k.bad("summary_index %d, the item has %d parts", si, len(it.summary))
			}
			it.summary = append(it.summary, "")
			return
		}
		if si < 0 || si >= len(it.summary) {
			k.bad("summary_index %d of %d parts", si, len(it.summary))
			return
		}
		switch typ {
		case "response.reasoning_summary_text.delta":
			d := str(m["delta"])
			if d == "" {
				k.bad("an empty delta")
			}
			it.summary[si] += d
		case "response.reasoning_summary_text.done":
			if got := str(m["text"]); got != it.summary[si] {
				k.bad("text %q, the deltas made %q", got, it.summary[si])
			}
		default:
			var p struct{ Type, Text string }
			_ = json.Unmarshal(m["part"], &p)
			if p.Type != "summary_text" || p.Text != it.summary[si] {
				k.bad("summary part done %+v, the deltas made %q", p, it.summary[si])
			}
		}
	case "response.output_item.done":
		k.itemDone(m)
	case "error":
		e := &ErrorEvent{}
		for _, key := range []string{"code", "message", "param"} {
			v, ok := m[key]
			if !ok {
				k.bad("no %q", key)
				continue
			}
			if kk := kindOf(v); kk != 's' && (kk != '0' || key == "message") {
				k.bad("%s is %s", key, v)
			}
		}
		e.Code, e.Message, e.Param, e.CodeNull = str(m["code"]), str(m["message"]), str(m["param"]), kindOf(m["code"]) == '0'
		var nested struct {
			Type    string           `json:"type"`
			Message string           `json:"message"`
			Code    *json.RawMessage `json:"code"`
		}
		if err := json.Unmarshal(m["error"], &nested); err != nil || nested.Message != e.Message || nested.Type == "" {
			k.bad("error is not {type, code, message, param} with the same message: %s", m["error"])
		}
		e.Type = nested.Type
		if k.sum.Error != nil {
			k.bad("a second error event")
		}
		k.sum.Error = e
	case "response.completed", "response.incomplete", "response.failed":
		k.terminal(typ, m)
	default:
		k.bad("an event type the bridge does not write")
	}
}

func (k *checker) snapshot(raw json.RawMessage) map[string]json.RawMessage {
	r, problems := checkResponseObject(raw)
	for _, p := range problems {
		k.bad("response: %s", p)
	}
	id := str(r["id"])
	if k.respID == "" {
		k.respID = id
		k.sum.ResponseID = id
	} else if id != k.respID {
		k.bad("response id %q, earlier %q", id, k.respID)
	}
	if k.c.Model != "" && str(r["model"]) != k.c.Model {
		k.bad("model %s, want %q", r["model"], k.c.Model)
	}
	k.sum.Status = str(r["status"])
	return r
}

// callFields are the members of a function_call item.
type callFields struct {
	Arguments *string `json:"arguments"`
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
}

// item reads an event's item into it; false (and reported) when it
// cannot.
func (k *checker) item(m map[string]json.RawMessage, it any) bool {
	if err := json.Unmarshal(m["item"], it); err != nil {
		k.bad("item: %v", err)
		return false
	}
	return true
}

func (k *checker) itemAdded(m map[string]json.RawMessage) {
	idx, ok := integer(m["output_index"])
	if !ok || idx != len(k.items) {
		k.bad("output_index %s, %d items so far", m["output_index"], len(k.items))
	}
	var it struct {
		ID      string             `json:"id"`
		Type    string             `json:"type"`
		Status  string             `json:"status"`
		Content *[]json.RawMessage `json:"content"`
		Summary *[]json.RawMessage `json:"summary"`
		callFields
	}
	if !k.item(m, &it) {
		return
	}
	if it.ID == "" || k.byID[it.ID] != nil {
		k.bad("item id %q is empty or not unique", it.ID)
	}
	s := &item{kind: it.Type, id: it.ID, index: idx, callID: it.CallID, name: it.Name}
	switch it.Type {
	case "message":
		if it.Status != "in_progress" || it.Content == nil || len(*it.Content) != 0 {
			k.bad("an added message is not in_progress with empty content")
		}
	case "function_call":
		if it.Status != "in_progress" || it.Arguments == nil || *it.Arguments != "" || it.CallID == "" || it.Name == "" {
			k.bad("an added function_call lacks call_id or name, or is not in_progress with empty arguments")
		}
	case "reasoning":
		if it.Summary == nil || len(*it.Summary) != 0 {
			k.bad("an added reasoning item has a summary")
		}
	default:
		k.bad("item type %q", it.Type)
	}
	k.items = append(k.items, s)
	k.byID[it.ID] = s
}

// itemOf is the open item an event names, checking its output_index and
// kind.
func (k *checker) itemOf(m map[string]json.RawMessage, kind string) *item {
	id := str(m["item_id"])
	it := k.byID[id]
	if it == nil {
		k.bad("item_id %q names no item", id)
		return nil
	}
	if idx, ok := integer(m["output_index"]); !ok || idx != it.index {
		k.bad("output_index %s, item %s is at %d", m["output_index"], id, it.index)
	}
	if it.kind != kind {
		k.bad("item %s is a %s, not a %s", id, it.kind, kind)
	}
	if it.done {
		k.bad("item %s is done", id)
	}
	return it
}

func (k *checker) partOf(it *item, ci int) *partState {
	if ci < 0 || ci >= len(it.parts) {
		k.bad("content_index %d of %d parts", ci, len(it.parts))
		return nil
	}
	p := it.parts[ci]
	if p.done {
		k.bad("part %d is done", ci)
	}
	return p
}

func (k *checker) itemDone(m map[string]json.RawMessage) {
	var it struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Content []struct {
			Type        string           `json:"type"`
			Text        *string          `json:"text"`
			Refusal     *string          `json:"refusal"`
			Annotations *json.RawMessage `json:"annotations"`
		} `json:"content"`
		Summary []struct {
			Type, Text string
		} `json:"summary"`
		EncryptedContent string `json:"encrypted_content"`
		callFields
	}
	if !k.item(m, &it) {
		return
	}
	s := k.byID[it.ID]
	if s == nil {
		k.bad("item %q was not added", it.ID)
		return
	}
	if idx, ok := integer(m["output_index"]); !ok || idx != s.index {
		k.bad("output_index %s, item %s is at %d", m["output_index"], it.ID, s.index)
	}
	if s.done {
		k.bad("item %s done twice", it.ID)
	}
	s.done, s.status, s.json = true, it.Status, m["item"]
	if it.Type != s.kind {
		k.bad("item %s was added as %s, done as %s", it.ID, s.kind, it.Type)
	}
	switch it.Type {
	case "message":
		if it.Status != "completed" && it.Status != "incomplete" {
			k.bad("status %q", it.Status)
		}
		if len(it.Content) != len(s.parts) {
			k.bad("%d content parts, %d were added", len(it.Content), len(s.parts))
			return
		}
		for i, p := range it.Content {
			if !s.parts[i].done {
				k.bad("part %d was not done", i)
			}
			got := ""
			switch {
			case p.Type == "output_text" && p.Text != nil:
				got = *p.Text
				if p.Annotations == nil {
					k.bad("output_text without annotations")
				}
			case p.Type == "refusal" && p.Refusal != nil:
				got = *p.Refusal
			}
			if p.Type != s.parts[i].typ || got != s.parts[i].text.String() {
				k.bad("part %d: %s %q, the deltas made %s %q", i, p.Type, got, s.parts[i].typ, s.parts[i].text.String())
			}
		}
	case "function_call":
		if it.Status != "completed" && it.Status != "incomplete" {
			k.bad("status %q", it.Status)
		}
		if !s.argsDone {
			k.bad("no function_call_arguments.done before the item's done")
		}
		if it.Arguments == nil || *it.Arguments != s.args.String() || it.CallID != s.callID || it.Name != s.name {
			k.bad("done item %s %s(%v), added as %s %s with arguments %q", it.CallID, it.Name, it.Arguments, s.callID, s.name, s.args.String())
		}
	case "reasoning":
		var texts []string
		for _, p := range it.Summary {
			texts = append(texts, p.Text)
		}
		if !slices.Equal(texts, s.summary) {
			k.bad("summary %q, the deltas made %q", texts, s.summary)
		}
		if it.EncryptedContent != "" {
			k.sum.Encrypted = append(k.sum.Encrypted, it.EncryptedContent)
		}
	}
}

func (k *checker) terminal(typ string, m map[string]json.RawMessage) {
	k.ended = true
	k.sum.Terminal = typ
	r := k.snapshot(m["response"])
	st := str(r["status"])
	switch typ {
	case "response.completed":
		if st != "completed" {
			k.bad("status %q", st)
		}
	case "response.incomplete":
		var d struct{ Reason string }
		if st != "incomplete" || json.Unmarshal(r["incomplete_details"], &d) != nil || d.Reason == "" {
			k.bad("status %q, incomplete_details %s", st, r["incomplete_details"])
		}
		k.sum.IncompleteReason = d.Reason
	case "response.failed":
		var e struct{ Code, Message string }
		if st != "failed" && st != "cancelled" || json.Unmarshal(r["error"], &e) != nil || e.Code == "" || e.Message == "" {
			k.bad("status %q, error %s", st, r["error"])
		}
		k.sum.ResponseError = &struct{ Code, Message string }{e.Code, e.Message}
	}
	if typ != "response.failed" && kindOf(r["usage"]) != 'o' {
		k.bad("no usage")
	}
	var out []json.RawMessage
	_ = json.Unmarshal(r["output"], &out)
	done := 0
	for _, it := range k.items {
		if !it.done {
			k.bad("item %s is not done", it.id)
			continue
		}
		if done < len(out) && !bytes.Equal(compact(out[done]), compact(it.json)) {
			k.bad("output[%d] is not the item output_item.done carried", done)
		}
		done++
	}
	if len(out) != done {
		k.bad("output has %d items, %d were done", len(out), done)
	}
	k.sum.Final = m["response"]
	k.sum.Usage = usageOf(r["usage"])
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func usageOf(raw json.RawMessage) *Usage {
	if kindOf(raw) != 'o' {
		return nil
	}
	var u struct {
		Input   int64 `json:"input_tokens"`
		Output  int64 `json:"output_tokens"`
		Total   int64 `json:"total_tokens"`
		Details struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		Out struct {
			Reasoning int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	return &Usage{Input: u.Input, Output: u.Output, Total: u.Total, Cached: u.Details.Cached, Reasoning: u.Out.Reasoning}
}

func (k *checker) summarize() {
	k.sum.Items = len(k.items)
	for _, it := range k.items {
		switch it.kind {
		case "message":
			for _, p := range it.parts {
				if p.typ == "refusal" {
					k.sum.Refusal += p.text.String()
				} else {
					k.sum.Text += p.text.String()
				}
			}
		case "reasoning":
			k.sum.Reasoning += strings.Join(it.summary, "\n\n")
		case "function_call":
			k.sum.Calls = append(k.sum.Calls, ToolCall{OutputIndex: it.index, ItemID: it.id, CallID: it.callID, Name: it.name,
				Args: it.args.String(), Status: it.status})
		}
	}
}

// checkResponseObject checks the members a Response object must have.
func checkResponseObject(raw json.RawMessage) (map[string]json.RawMessage, []string) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, []string{"not a JSON object"}
	}
	var problems []string
	for _, key := range wire.SortedKeys(requiredResponse) {
		v, ok := r[key]
		if !ok {
			problems = append(problems, "no "+key)
			continue
		}
		if !strings.ContainsRune(requiredResponse[key], rune(kindOf(v))) {
			problems = append(problems, fmt.Sprintf("%s is %s", key, v))
		}
	}
	if str(r["object"]) != "response" {
		problems = append(problems, `object is not "response"`)
	}
	var tools []map[string]json.RawMessage
	_ = json.Unmarshal(r["tools"], &tools)
	for i, t := range tools {
		if str(t["type"]) != "function" {
			continue
		}
		for _, key := range []string{"name", "description", "parameters", "strict"} {
			if _, ok := t[key]; !ok {
				problems = append(problems, fmt.Sprintf("tools[%d] has no %s", i, key))
			}
		}
	}
	return r, problems
}

// CheckResponse holds a Response object (a non-streamed answer, or GET's)
// to the members the Open Responses schema requires and well-formed output
// items, and says what it carries.
func CheckResponse(body []byte) (*Summary, []string) {
	r, problems := checkResponseObject(body)
	sum := &Summary{}
	if r == nil {
		return sum, problems
	}
	sum.ResponseID, sum.Status, sum.Final = str(r["id"]), str(r["status"]), body
	sum.Usage = usageOf(r["usage"])
	var e struct{ Code, Message string }
	if kindOf(r["error"]) == 'o' && json.Unmarshal(r["error"], &e) == nil {
		sum.ResponseError = &struct{ Code, Message string }{e.Code, e.Message}
	}
	var d struct{ Reason string }
	if kindOf(r["incomplete_details"]) == 'o' && json.Unmarshal(r["incomplete_details"], &d) == nil {
		sum.IncompleteReason = d.Reason
	}
	var out []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type        string           `json:"type"`
			Text        string           `json:"text"`
			Refusal     string           `json:"refusal"`
			Annotations *json.RawMessage `json:"annotations"`
		} `json:"content"`
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
		EncryptedContent string  `json:"encrypted_content"`
		Arguments        *string `json:"arguments"`
		CallID           string  `json:"call_id"`
		Name             string  `json:"name"`
	}
	if err := json.Unmarshal(r["output"], &out); err != nil {
		return sum, append(problems, "output: "+err.Error())
	}
	ids := map[string]bool{}
	for i, it := range out {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("output[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		if it.ID == "" || ids[it.ID] {
			bad("id %q is empty or not unique", it.ID)
		}
		ids[it.ID] = true
		switch it.Type {
		case "message":
			if it.Role != "assistant" || it.Status == "" {
				bad("role %q status %q", it.Role, it.Status)
			}
			for _, p := range it.Content {
				switch p.Type {
				case "output_text":
					if p.Annotations == nil {
						bad("output_text without annotations")
					}
					sum.Text += p.Text
				case "refusal":
					sum.Refusal += p.Refusal
				default:
					bad("content type %q", p.Type)
				}
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil || it.Status == "" {
				bad("a function_call without call_id, name, arguments or status")
			}
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			sum.Calls = append(sum.Calls, ToolCall{OutputIndex: i, ItemID: it.ID, CallID: it.CallID, Name: it.Name, Args: args, Status: it.Status})
		case "reasoning":
			var texts []string
			for _, s := range it.Summary {
				texts = append(texts, s.Text)
			}
			sum.Reasoning += strings.Join(texts, "\n\n")
			if it.EncryptedContent != "" {
				sum.Encrypted = append(sum.Encrypted, it.EncryptedContent)
			}
		default:
			bad("item type %q", it.Type)
		}
	}
	sum.Items = len(out)
	return sum, problems
}
