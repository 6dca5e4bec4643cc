package responses

import (
	"strings"

	"github.com/valyala/fastjson"

	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// fastEvent decodes the common Responses stream event, a delta (output
// text, refusal, reasoning, function call arguments), with fastjson, as
// encoding/json would decode it into ev. It reports false for anything
// whose encoding/json result it cannot promise to reproduce exactly (see
// wire.FastOK and the key rules of mapping/openai's fastChunk) and for the
// other event types, which are rarer; the caller then decodes with
// encoding/json. FuzzFastEvent holds the two to the same result.
func fastEvent(p *fastjson.Parser, data []byte, ev *wireEvent) bool {
	var seen uint8
	return wire.FastFields(p, data, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "type":
			return wire.Once(&seen, 1) && wire.Str(v, &ev.Type) && strings.HasSuffix(ev.Type, ".delta")
		case "sequence_number":
			return wire.Once(&seen, 2) && wire.IntPtr(v, &ev.SequenceNumber)
		case "output_index":
			return wire.Once(&seen, 4) && wire.Int(v, &ev.OutputIndex)
		case "item_id":
			return wire.Once(&seen, 8) && wire.Str(v, &ev.ItemID)
		case "summary_index":
			return wire.Once(&seen, 16) && wire.Int(v, &ev.SummaryIndex)
		case "content_index":
			return wire.Once(&seen, 32) && wire.Int(v, &ev.ContentIndex)
		case "delta":
			return wire.Once(&seen, 64) && wire.Str(v, &ev.Delta)
		case "response", "item", "arguments", "error":
			return false // not in a delta event: encoding/json decides
		}
		return !wire.FoldsTo(key, "type", "sequence_number", "output_index", "item_id", "summary_index",
			"content_index", "delta", "response", "item", "arguments", "error")
	}) && seen&1 != 0
}
