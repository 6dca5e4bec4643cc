package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// The helpers of the fastjson fast paths (mapping/openai's chunks,
// mapping/anthropic's events): each decodes as encoding/json would into the
// same Go type, or reports false, and the caller then decodes with
// encoding/json. A fuzz test per fast path holds the two to the same result.

// FastOK reports whether data may take a fast path at all: valid JSON
// with neither a control character nor a \u escape (encoding/json's
// replacements and refusals) and valid UTF-8.
func FastOK(data []byte) bool {
	return Plain(data) && utf8.Valid(data) && fastjson.ValidateBytes(data) == nil
}

// FastFields parses data with p when it may take a fast path (FastOK)
// and is a JSON object, and calls field for each of its keys (Fields); it
// reports false when data may not take the fast path or field refused a
// key. The values are valid until p parses again.
func FastFields(p *fastjson.Parser, data []byte, field func(key []byte, v *fastjson.Value) bool) bool {
	if !FastOK(data) {
		return false
	}
	v, err := p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	return Fields(v, field)
}

// Plain reports whether data has neither a control character nor a \u
// escape.
func Plain(data []byte) bool {
	for i, b := range data {
		if b < 0x20 || b == 'u' && i > 0 && data[i-1] == '\\' {
			return false
		}
	}
	return true
}

// Fields calls field for each key of the object v until one reports
// false; null is an object without keys, as encoding/json decodes it into
// a struct. It reports false for any other type, or a key field refused.
func Fields(v *fastjson.Value, field func(key []byte, v *fastjson.Value) bool) bool {
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

// Once marks bit in seen, reporting false when it was set: a repeated key.
func Once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// FoldsTo reports whether key equals one of names but for case: a key
// encoding/json would take for that field.
func FoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) == len(n) && strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// Str decodes a string field as encoding/json does: null leaves it alone.
func Str(v *fastjson.Value, dst *string) bool {
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

// StrPtr decodes a *string field: null is nil.
func StrPtr(v *fastjson.Value, dst **string) bool {
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

// IntPtr decodes a *int or *int64 field: null is nil; a number must be an
// integer that fits the type, as encoding/json requires.
func IntPtr[T int | int64](v *fastjson.Value, dst **T) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		*dst = nil
		return true
	case fastjson.TypeNumber:
		n, err := strconv.ParseInt(v.String(), 10, 64)
		if err != nil || int64(T(n)) != n { // T(n) drops bits where int is 32 bits wide
			return false
		}
		t := T(n)
		*dst = &t
		return true
	}
	return false
}

// Int decodes an int field: null leaves it alone; a number must be an
// Int that fits.
func Int(v *fastjson.Value, dst *int) bool {
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
