package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// fastEvent decodes the common Messages stream event, a content_block_delta
// (text, thinking, signature or tool input), with fastjson, as
// encoding/json would decode it into ev. It reports false for anything
// whose encoding/json result it cannot promise to reproduce exactly (see
// wire.FastOK and the key rules of mapping/openai's fastChunk) and for the
// other event types, which are rarer (a few per stream); the caller then
// decodes with encoding/json. FuzzFastEvent holds the two to the same
// result.
func fastEvent(p *fastjson.Parser, data []byte, ev *wireEvent) bool {
	var seen uint8
	return wire.FastFields(p, data, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "type":
			if !wire.Once(&seen, 1) || !wire.Str(v, &ev.Type) {
				return false
			}
			return ev.Type == "content_block_delta"
		case "index":
			return wire.Once(&seen, 2) && wire.IntPtr(v, &ev.Index)
		case "delta":
			return wire.Once(&seen, 4) && deltaPtr(v, &ev.Delta)
		case "message", "content_block", "usage":
			return false // not in a delta event: encoding/json decides
		}
		return !wire.FoldsTo(key, "type", "index", "delta", "message", "content_block", "usage")
	}) && seen&1 != 0
}

// deltaPtr decodes a *wireDelta field: null is nil, an object a new delta.
func deltaPtr(v *fastjson.Value, dst **wireDelta) bool {
	if v.Type() == fastjson.TypeNull {
		*dst = nil
		return true
	}
	if v.Type() != fastjson.TypeObject {
		return false
	}
	d := &wireDelta{}
	var seen uint8
	ok := wire.Fields(v, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "type":
			return wire.Once(&seen, 1) && wire.Str(v, &d.Type)
		case "text":
			return wire.Once(&seen, 2) && wire.Str(v, &d.Text)
		case "partial_json":
			return wire.Once(&seen, 4) && wire.Str(v, &d.PartialJSON)
		case "thinking":
			return wire.Once(&seen, 8) && wire.Str(v, &d.Thinking)
		case "signature":
			return wire.Once(&seen, 16) && wire.Str(v, &d.Signature)
		case "stop_reason":
			return wire.Once(&seen, 32) && wire.StrPtr(v, &d.StopReason)
		}
		return !wire.FoldsTo(key, "type", "text", "partial_json", "thinking", "signature", "stop_reason")
	})
	if !ok {
		return false
	}
	*dst = d
	return true
}
