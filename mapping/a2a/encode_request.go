package a2a

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// outputModes are the modes the bridge asks an upstream agent for.
var outputModes = []string{"text/plain", "application/json"}

// SendOptions shape a message/send or message/stream request.
type SendOptions struct {
	// Stream asks for message/stream.
	Stream bool
	// NoWait asks the agent to answer a message/send at once, not when
	// the task ends (0.3's blocking false, 1.0's returnImmediately).
	NoWait bool
	// Tools are the client's tools, sent in params.metadata under
	// MetaTools (the bridge's extension: a bridge upstream offers them to
	// its model; other agents ignore them).
	Tools []bridge.Tool
}

// MetaTools is the params.metadata key of the client's tools.
const MetaTools = "bridge.tools"

// EncodeSend renders a message/send or message/stream request (hub ->
// wire) with JSON-RPC id id, in version v's method names and shapes.
func EncodeSend(id string, v Version, m *a2asdk.Message, o SendOptions) []byte {
	op := OpSend
	if o.Stream {
		op = OpStream
	}
	b := append(make([]byte, 0, 512), `{"jsonrpc":"2.0","id":`...)
	b = wire.AppendString(b, id)
	b = append(b, `,"method":`...)
	b = wire.AppendString(b, op.MethodName(v))
	b = append(b, `,"params":{"message":`...)
	b = AppendMessage(b, m, v)
	if len(o.Tools) > 0 {
		if tools, err := json.Marshal(o.Tools); err == nil {
			b = append(b, `,"metadata":{"`+MetaTools+`":`...)
			b = append(append(b, tools...), '}')
		}
	}
	b = append(b, `,"configuration":{"acceptedOutputModes":["text/plain","application/json"]`...)
	switch {
	case v == V03:
		b = append(b, `,"blocking":`...)
		b = strconv.AppendBool(b, !o.NoWait)
	case o.NoWait:
		b = append(b, `,"returnImmediately":true`...)
	}
	return append(b, "}}}"...)
}

// EncodeTaskRequest renders a request whose params are {id} (tasks/get,
// tasks/cancel, tasks/resubscribe and their 1.0 names).
func EncodeTaskRequest(id string, op Op, v Version, taskID string) []byte {
	b := append(make([]byte, 0, 160), `{"jsonrpc":"2.0","id":`...)
	b = wire.AppendString(b, id)
	b = append(b, `,"method":`...)
	b = wire.AppendString(b, op.MethodName(v))
	b = append(b, `,"params":{"id":`...)
	b = wire.AppendString(b, taskID)
	return append(b, "}}"...)
}

// SplitInput splits a transcript into what an upstream context may already
// hold (everything up to the last assistant message) and the new input
// after it.
func SplitInput(msgs []bridge.Message) (prefix, input []bridge.Message) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == bridge.RoleAssistant {
			return msgs[:i+1], msgs[i+1:]
		}
	}
	return nil, msgs
}

// TranscriptKey fingerprints a transcript: a hash chained over each
// message's role, text, tool calls and tool-call id (not ids, times or
// reasoning), so a client's resent history and the bridge's record of it
// give the same key. "" for no messages.
func TranscriptKey(msgs []bridge.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	h := sha256.New()
	for i := range msgs {
		m := &msgs[i]
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		for j := range m.Parts {
			switch p := &m.Parts[j]; p.Type {
			case bridge.PartText, bridge.PartRefusal:
				h.Write([]byte(p.Text))
			case bridge.PartData:
				h.Write(compact(p.JSON))
			case bridge.PartImage, bridge.PartFile, bridge.PartAudio:
				h.Write([]byte(p.URL))
				h.Write([]byte(p.Data))
			}
		}
		h.Write([]byte{0})
		for _, tc := range m.ToolCalls {
			h.Write([]byte(tc.ID + "\x00" + tc.Name + "\x00" + tc.Arguments + "\x00"))
		}
		h.Write([]byte(m.ToolCallID))
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// OutboundMessage builds the user message sent to an upstream agent (hub
// -> wire): the parts of the new input (tool results as ADK
// function_response data parts, system text marked as such), after the
// earlier turns carried as one text part when a new context must hold them
// (inline). The second result names what A2A could not carry.
func OutboundMessage(input, inline []bridge.Message, contextID string) (*a2asdk.Message, []string) {
	m := &a2asdk.Message{ID: a2asdk.NewMessageID(), Role: a2asdk.MessageRoleUser, ContextID: contextID}
	var dropped []string
	if len(inline) > 0 {
		m.Parts = append(m.Parts, a2asdk.TextPart{Text: renderTranscript(inline)})
	}
	for i := range input {
		msg := &input[i]
		switch msg.Role {
		case bridge.RoleTool:
			tr := &bridge.ToolResult{CallID: msg.ToolCallID, Name: msg.Name, Content: msg.Parts, IsError: msg.IsError}
			m.Parts = append(m.Parts, toolResultPart(tr))
			continue
		case bridge.RoleSystem, bridge.RoleDeveloper:
			m.Parts = append(m.Parts, a2asdk.TextPart{Text: "[" + string(msg.Role) + "] " + msg.Text()})
			continue
		}
		for j := range msg.Parts {
			p, ok := SDKPart(&msg.Parts[j])
			if !ok {
				dropped = appendUnique(dropped, "a2a:"+string(msg.Parts[j].Type)+" part")
				continue
			}
			if msg.Parts[j].Type == bridge.PartReasoning {
				continue
			}
			m.Parts = append(m.Parts, p)
		}
	}
	if len(m.Parts) == 0 {
		m.Parts = append(m.Parts, a2asdk.TextPart{Text: ""})
	}
	return m, dropped
}

// renderTranscript writes earlier turns as text for a new context.
func renderTranscript(msgs []bridge.Message) string {
	var b strings.Builder
	b.WriteString("[conversation so far]\n")
	for i := range msgs {
		m := &msgs[i]
		if t := m.Text(); t != "" {
			b.WriteString(string(m.Role) + ": " + t + "\n")
		}
		for _, tc := range m.ToolCalls {
			b.WriteString(string(m.Role) + " called " + tc.Name + "(" + tc.Arguments + ")\n")
		}
	}
	b.WriteString("[end of conversation so far]")
	return b.String()
}
