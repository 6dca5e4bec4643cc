package wire

import "encoding/json"

// ResponseFormat renders a request's response_format, which comes in its
// inbound dialect's OpenAI shape, in the shape an upstream takes: Chat
// Completions nests a json_schema format's schema under "json_schema"
// (nested), the Responses API has it flat. text and json_object pass as
// they are. It returns nil for anything else (the caller drops it).
func ResponseFormat(raw json.RawMessage, nested bool) []byte {
	o, err := AsObject(raw, "")
	if err != nil || !json.Valid(raw) {
		return nil
	}
	var typ string
	if t, ok := o["type"]; ok {
		typ, _ = AsString(t, "")
	}
	switch typ {
	case "text", "json_object":
		return Compact(raw)
	case "json_schema":
	default:
		return nil
	}
	inner, isNested := o["json_schema"]
	w := NewObj()
	w.Str("type", "json_schema")
	switch {
	case isNested == nested:
		return Compact(raw)
	case nested: // the flat shape, nested
		keys := make([]string, 0, len(o))
		for k := range o {
			if k != "type" {
				keys = append(keys, k)
			}
		}
		w.Raw("json_schema", RawObject(o, keys))
	default: // the nested shape, flattened
		io, err := AsObject(inner, "")
		if err != nil {
			return nil
		}
		for _, k := range SortedKeys(io) {
			w.Raw(k, Compact(io[k]))
		}
	}
	return w.End()
}
