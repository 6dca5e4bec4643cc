package openai

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
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
// fields (usage, error, tool calls, reasoning objects). The caller then decodes with
// encoding/json; FuzzFastChunk holds the two to the same result.
func fastChunk(p *fastjson.Parser, data []byte, c *wireChunk) bool {
	if !plain(data) || !utf8.Valid(data) || fastjson.ValidateBytes(data) != nil {
		return false
	}
	v, err := p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	var seen uint8
	return fields(v, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "id":
			return once(&seen, 1) && str(v, &c.ID)
		case "model":
			return once(&seen, 2) && str(v, &c.Model)
		case "choices":
			return once(&seen, 4) && choices(v, &c.Choices)
		case "usage":
			return once(&seen, 8) && v.Type() == fastjson.TypeNull
		case "error":
			return false // rare, and encoding/json keeps it raw
		}
		return !foldsTo(key, "id", "model", "choices", "usage", "error")
	})
}

// plain reports whether data has neither a control character nor a \u
// escape.
func plain(data []byte) bool {
	for i, b := range data {
		if b < 0x20 || b == 'u' && i > 0 && data[i-1] == '\\' {
			return false
		}
	}
	return true
}

// fields calls field for each key of the object v until one reports
// false; null is an object without keys, as encoding/json decodes it into
// a struct. It reports false for any other type, or a key field refused.
func fields(v *fastjson.Value, field func(key []byte, v *fastjson.Value) bool) bool {
	if v.Type() == fastjson.TypeNull {
		return true
	}
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok := true
	o.Visit(func(key []byte, v *fastjson.Value) {
		ok = ok && field(key, v)
	})
	return ok
}

// once marks bit in seen, reporting false when it was set: a repeated key.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// foldsTo reports whether key equals one of names but for case: a key
// encoding/json would take for that field.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) == len(n) && strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// str decodes a string field as encoding/json does: null leaves it alone.
func str(v *fastjson.Value, dst *string) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		*dst = string(b)
		return true
	}
	return false
}

// strPtr decodes a *string field: null is nil.
func strPtr(v *fastjson.Value, dst **string) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		*dst = nil
		return true
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		s := string(b)
		*dst = &s
		return true
	}
	return false
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
	return fields(v, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "index":
			return once(&seen, 1) && integer(v, &ch.Index)
		case "delta":
			return once(&seen, 2) && delta(v, &ch.Delta)
		case "finish_reason":
			return once(&seen, 4) && strPtr(v, &ch.FinishReason)
		}
		return !foldsTo(key, "index", "delta", "finish_reason")
	})
}

// integer decodes an int field: null leaves it alone; a number must be an
// integer that fits.
func integer(v *fastjson.Value, dst *int) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeNumber:
		n, err := strconv.Atoi(v.String())
		if err != nil {
			return false
		}
		*dst = n
		return true
	}
	return false
}

func delta(v *fastjson.Value, d *wireDelta) bool {
	var seen uint8
	return fields(v, func(key []byte, v *fastjson.Value) bool {
		switch string(key) {
		case "content":
			return once(&seen, 1) && strPtr(v, &d.Content)
		case "refusal":
			return once(&seen, 2) && strPtr(v, &d.Refusal)
		case "reasoning_content":
			return once(&seen, 4) && strPtr(v, &d.ReasoningContent)
		case "reasoning", "tool_calls", "function_call":
			return false // kept raw or rarer: encoding/json decodes them
		}
		return !foldsTo(key, "content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call")
	})
}
