package openai

import (
	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// fastChunk decodes the common chat.completion.chunk (text, reasoning and
// refusal deltas, a finish reason) with fastjson: about four times faster
// than encoding/json, and most of the decoder's time. It reports false for
// anything whose encoding/json result it cannot promise to reproduce
// exactly: invalid JSON, \u escapes and invalid UTF-8 (encoding/json's
// replacements), control characters (fastjson lets them into strings,
// encoding/json refuses them; a tab between tokens is valid, but rare
// enough to take the slow path), a field of another type, keys that
// differ from a known one only in case or that repeat (encoding/json
// matches them case-insensitively and keeps the last), and the rarer
// fields (usage, error, tool calls, reasoning objects). The caller then
// decodes with encoding/json; FuzzFastChunk holds the two to the same
// result. The helpers are wire's.
func fastChunk(p *fastjson.Parser, data []byte, c *wireChunk) bool {
	var seen uint8
	return wire.FastFields(p, data, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "id":
			return wire.Once(&seen, 1) && wire.Str(v, &c.ID)
		case "model":
			return wire.Once(&seen, 2) && wire.Str(v, &c.Model)
		case "choices":
			return wire.Once(&seen, 4) && choices(v, &c.Choices)
		case "usage":
			return wire.Once(&seen, 8) && v.Type() == fastjson.TypeNull
		case "error":
			return false // rare, and encoding/json keeps it raw
		}
		return !wire.FoldsTo(key, "id", "model", "choices", "usage", "error")
	})
}

func choices(v *fastjson.Value, dst *[]wireChoice) bool {
	if v.Type() == fastjson.TypeNull {
		*dst = nil
		return true
	}
	arr, err := v.Array()
	if err != nil {
		return false
	}
	out := make([]wireChoice, len(arr))
	for i, e := range arr {
		if !choice(e, &out[i]) {
			return false
		}
	}
	*dst = out
	return true
}

func choice(v *fastjson.Value, ch *wireChoice) bool {
	var seen uint8
	return wire.Fields(v, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "index":
			return wire.Once(&seen, 1) && wire.Int(v, &ch.Index)
		case "delta":
			return wire.Once(&seen, 2) && delta(v, &ch.Delta)
		case "finish_reason":
			return wire.Once(&seen, 4) && wire.StrPtr(v, &ch.FinishReason)
		}
		return !wire.FoldsTo(key, "index", "delta", "finish_reason")
	})
}

func delta(v *fastjson.Value, d *wireDelta) bool {
	var seen uint8
	return wire.Fields(v, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "content":
			return wire.Once(&seen, 1) && wire.StrPtr(v, &d.Content)
		case "refusal":
			return wire.Once(&seen, 2) && wire.StrPtr(v, &d.Refusal)
		case "reasoning_content":
			return wire.Once(&seen, 4) && wire.StrPtr(v, &d.ReasoningContent)
		case "reasoning", "tool_calls", "function_call":
			return false // kept raw or rarer: encoding/json decodes them
		}
		return !wire.FoldsTo(key, "content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call")
	})
}
