package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Content block types.
const (
	blockText     = "text"
	blockThinking = "thinking"
	blockRedacted = "redacted_thinking"
	blockToolUse  = "tool_use"
	blockRaw      = "" // a whole block carried opaquely (server tools)
)

// opKind is what an op does to a content block.
type opKind uint8

const (
	opStart opKind = iota
	opDelta
	opStop
)

// op is one step of the content block sequence: a block starts, gets a
// delta, or stops. Strings point into the events; an op lives until the
// next add.
type op struct {
	kind  opKind
	index int
	block string // opStart: the block type
	delta string // opDelta: text_delta, thinking_delta, signature_delta, input_json_delta
	text  string // opDelta: the delta's text; opStart of redacted_thinking: its data
	id    string // opStart of tool_use
	name  string
	raw   []byte // opStart of a raw block
}

// toolOut is one tool call of the current model step, as the client sees it.
type toolOut struct {
	hub    int    // the hub's tool-call index
	id     string // its id, to tell a later call with the same index apart
	name   string
	block  int // its block index, -1 until opened
	closed bool
	args   []byte // argument text written so far
	scan   jsonScan
	done   bool // tool_call_done seen
}

// complete reports whether the call's arguments are whole: its done event
// came, or the text written so far is a complete JSON object.
func (t *toolOut) complete() bool { return t.done || t.scan.complete() }

// builder turns hub events into the Messages content block sequence, the
// part the stream encoder and the accumulator share. Its rules:
//
//   - one block is open at a time, and blocks never interleave: a block
//     stops before the next one starts, and indices go 0, 1, 2 ...;
//   - no block is opened empty: a text block starts at the first non-empty
//     text, a thinking block at the first reasoning text or signature;
//   - thinking never goes inside a text block: reasoning closes the open
//     block and opens a thinking block; a signature closes its thinking
//     block (the next reasoning opens a new one); encrypted reasoning is a
//     redacted_thinking block of its own;
//   - tool calls are tool_use blocks. Parallel calls whose fragments
//     interleave are serialized: while the open tool block's arguments are
//     not yet a complete JSON object, events that need another block wait,
//     in order, and follow as soon as they are (or the call is done). So a
//     sequential upstream streams every fragment at once and an
//     interleaving one delays only what it must;
//   - message_done, a new model step (message_started) and the end close
//     the open block and release whatever waited.
type builder struct {
	next     int // the next block index
	open     int // the open block's index, -1 when none
	openType string
	openTool *toolOut
	sealed   bool // the open thinking block has its signature
	tools    []*toolOut
	steps    int // message_started events seen
	queue    []bridge.Event
	ops      []op
	dropped  []string
}

func newBuilder() builder { return builder{open: -1} }

func (b *builder) drop(s string) { b.dropped = wire.AddDropped(b.dropped, s) }

// add folds one event in and returns the ops it makes (valid until the next
// call).
func (b *builder) add(ev *bridge.Event) []op {
	b.ops = b.ops[:0]
	if ev.Opaque != nil && ev.Opaque.Dialect != Dialect {
		b.drop("opaque:" + wire.OpaqueDialect(ev.Opaque))
	}
	switch ev.Kind {
	case bridge.KindMessageDone:
		b.flush()
		b.closeOpen()
		return b.ops
	case bridge.KindMessageStarted:
		b.steps++
		if b.steps > 1 {
			// A later model step of the same run: its tool indices start
			// again at 0.
			b.flush()
			b.closeOpen()
			b.tools = b.tools[:0]
		}
		return b.ops
	}
	if len(b.queue) > 0 || b.blocked(ev) {
		if !b.forOpenTool(ev) {
			b.queue = append(b.queue, *ev)
			return b.ops
		}
	}
	b.apply(ev)
	b.drain()
	return b.ops
}

// finish releases what waited and closes the open block.
func (b *builder) finish() []op {
	b.ops = b.ops[:0]
	b.flush()
	b.closeOpen()
	return b.ops
}

// drain applies the waiting events that no longer need to wait. The
// waiting events of the open tool block go first, in their order (they
// were only held because another block was open), so the queue never holds
// an event of the open tool and an event for it that arrives later can be
// applied at once.
func (b *builder) drain() {
	for {
		b.pullOpenTool()
		if len(b.queue) == 0 || b.blocked(&b.queue[0]) {
			break
		}
		ev := b.queue[0]
		b.queue = b.queue[1:]
		b.apply(&ev)
	}
	if len(b.queue) == 0 {
		b.queue = b.queue[:0:0]
	}
}

// pullOpenTool applies and removes the waiting events of the open tool.
func (b *builder) pullOpenTool() {
	for b.openTool != nil {
		j := -1
		for i := range b.queue {
			if b.forOpenTool(&b.queue[i]) {
				j = i
				break
			}
		}
		if j < 0 {
			return
		}
		ev := b.queue[j]
		b.queue = append(b.queue[:j], b.queue[j+1:]...)
		b.apply(&ev)
	}
}

// flush applies every waiting event, whatever the open block.
func (b *builder) flush() {
	for len(b.queue) > 0 {
		ev := b.queue[0]
		b.queue = b.queue[1:]
		b.apply(&ev)
	}
	b.queue = b.queue[:0:0]
}

// forOpenTool reports whether ev continues the open tool block.
func (b *builder) forOpenTool(ev *bridge.Event) bool {
	t := b.openTool
	if t == nil || ev.ToolCall == nil || ev.Source == bridge.SourceAgent {
		return false
	}
	switch ev.Kind {
	case bridge.KindToolCallDelta, bridge.KindToolCallDone:
		return b.lookup(ev.ToolCall.Index) == t
	case bridge.KindToolCallStarted:
		return b.lookup(ev.ToolCall.Index) == t && (ev.ToolCall.ID == "" || ev.ToolCall.ID == t.id)
	}
	return false
}

// blocked reports whether ev needs a block other than the open one while
// the open tool block's arguments are incomplete.
func (b *builder) blocked(ev *bridge.Event) bool {
	t := b.openTool
	if t == nil || t.complete() {
		return false
	}
	switch ev.Kind {
	case bridge.KindTextDelta:
		return ev.Text != ""
	case bridge.KindReasoningDelta:
		return ev.Text != "" || ev.Signature != "" || ev.Encrypted != ""
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta, bridge.KindToolCallDone:
		return ev.Source != bridge.SourceAgent && !b.forOpenTool(ev)
	case bridge.KindArtifact:
		return rawBlocks(ev) != nil
	}
	return false
}

func (b *builder) lookup(hub int) *toolOut {
	for i := len(b.tools) - 1; i >= 0; i-- {
		if b.tools[i].hub == hub {
			return b.tools[i]
		}
	}
	return nil
}

func (b *builder) apply(ev *bridge.Event) {
	switch ev.Kind {
	case bridge.KindTextDelta:
		if ev.Text == "" {
			return
		}
		if b.openType != blockText {
			b.startBlock(op{block: blockText})
		}
		b.deltaOp("text_delta", ev.Text)
	case bridge.KindReasoningDelta:
		if ev.Text != "" {
			if b.openType != blockThinking || b.sealed {
				b.startBlock(op{block: blockThinking})
			}
			b.deltaOp("thinking_delta", ev.Text)
		}
		if ev.Signature != "" {
			if b.openType != blockThinking || b.sealed {
				b.startBlock(op{block: blockThinking})
			}
			b.deltaOp("signature_delta", ev.Signature)
			b.sealed = true
			b.closeOpen() // the signature comes last in its block
		}
		if ev.Encrypted != "" {
			b.startBlock(op{block: blockRedacted, text: ev.Encrypted})
			b.closeOpen()
		}
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta, bridge.KindToolCallDone:
		if ev.Source == bridge.SourceAgent {
			b.drop("agent_tool_call")
			return
		}
		b.toolCall(ev)
	case bridge.KindArtifact:
		raws := rawBlocks(ev)
		if raws == nil {
			b.drop("artifact")
			return
		}
		for _, raw := range raws {
			b.startBlock(op{block: blockRaw, raw: raw})
			b.closeOpen()
		}
	case bridge.KindToolResult, bridge.KindStateUpdate:
		b.drop(string(ev.Kind))
	}
	// run_started, usage, user_message, error and final are the caller's.
}

// rawBlocks returns the anthropic blocks an artifact carries whole (from an
// Anthropic upstream's server tools), nil when it is not such an artifact.
func rawBlocks(ev *bridge.Event) [][]byte {
	a := ev.Artifact
	if a == nil || ev.Source != bridge.SourceAgent || len(a.Parts) == 0 {
		return nil
	}
	out := make([][]byte, 0, len(a.Parts))
	for i := range a.Parts {
		p := &a.Parts[i]
		if p.Type != bridge.PartOpaque || p.Opaque == nil || p.Opaque.Dialect != Dialect ||
			wire.Kind(p.Opaque.Data) != '{' || !json.Valid(p.Opaque.Data) {
			return nil
		}
		out = append(out, p.Opaque.Data)
	}
	return out
}

func (b *builder) toolCall(ev *bridge.Event) {
	tc := ev.ToolCall
	if tc == nil {
		return
	}
	t := b.lookup(tc.Index)
	if t != nil && t.id != "" && tc.ID != "" && tc.ID != t.id {
		t = nil // the same index with another id: a new call
	}
	if t != nil && ev.Kind == bridge.KindToolCallStarted && t.block >= 0 {
		return // a repeated start
	}
	if t == nil {
		t = &toolOut{hub: tc.Index, id: tc.ID, name: tc.Name, block: -1}
		b.tools = append(b.tools, t)
	}
	if t.id == "" {
		t.id = tc.ID
	}
	if t.name == "" {
		t.name = tc.Name
	}
	if t.block < 0 {
		b.startBlock(op{block: blockToolUse, id: WireToolID(t.id), name: t.name})
		t.block = b.open
		b.openTool = t
	}
	var frag string
	switch ev.Kind {
	case bridge.KindToolCallStarted, bridge.KindToolCallDelta:
		frag = tc.Arguments
	case bridge.KindToolCallDone:
		// Write what the deltas left out, when the complete text extends
		// them; "{}" for a call without arguments is the start's input.
		if len(tc.Arguments) > len(t.args) && strings.HasPrefix(tc.Arguments, string(t.args)) &&
			!(len(t.args) == 0 && tc.Arguments == "{}") {
			frag = tc.Arguments[len(t.args):]
		}
	}
	if frag != "" {
		if t.closed {
			if strings.TrimSpace(frag) != "" {
				b.drop("tool_call.arguments after its block stopped")
			}
		} else {
			t.args = append(t.args, frag...)
			t.scan.feed(frag)
			b.ops = append(b.ops, op{kind: opDelta, index: t.block, delta: "input_json_delta", text: frag})
		}
	}
	if ev.Kind == bridge.KindToolCallDone {
		t.done = true
		if b.openTool == t {
			b.closeOpen()
		}
	}
}

// startBlock closes the open block and opens o's.
func (b *builder) startBlock(o op) {
	b.closeOpen()
	o.kind, o.index = opStart, b.next
	b.next++
	b.open, b.openType, b.sealed = o.index, o.block, false
	b.ops = append(b.ops, o)
}

func (b *builder) deltaOp(typ, text string) {
	b.ops = append(b.ops, op{kind: opDelta, index: b.open, delta: typ, text: text})
}

func (b *builder) closeOpen() {
	if b.open < 0 {
		return
	}
	b.ops = append(b.ops, op{kind: opStop, index: b.open})
	if b.openTool != nil {
		b.openTool.closed = true
		b.openTool = nil
	}
	b.open, b.openType, b.sealed = -1, "", false
}

// jsonScan follows JSON text fragment by fragment far enough to tell when
// an object is complete.
type jsonScan struct {
	depth         int
	started, done bool
	inStr, esc    bool
	bad           bool // not an object, or text after its end
}

func (s *jsonScan) feed(p string) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.bad {
			return
		}
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			}
			continue
		}
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		switch {
		case space:
		case s.done:
			s.bad = true
		case !s.started:
			if c != '{' {
				s.bad = true
				return
			}
			s.started, s.depth = true, 1
		case c == '"':
			s.inStr = true
		case c == '{' || c == '[':
			s.depth++
		case c == '}' || c == ']':
			s.depth--
			if s.depth == 0 {
				s.done = true
			}
		}
	}
}

func (s *jsonScan) complete() bool { return s.done && !s.bad }
