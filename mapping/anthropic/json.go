package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/bridge"
)

// maxDepth is the deepest JSON nesting a decoder accepts.
const maxDepth = 64

// checkDepth rejects JSON nested deeper than max levels of objects and
// arrays. It only counts brackets outside strings; validity is left to the
// parser that runs after it.
func checkDepth(b []byte, max int) error {
	depth := 0
	inStr, esc := false, false
	for _, c := range b {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > max {
				return bridge.Errorf(bridge.CodeInvalid, "request body: JSON nested deeper than %d levels", max)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// jsonKind returns the first byte of a JSON value: '{', '[', '"', 't', 'f',
// 'n' or a digit/minus for numbers; 0 for empty input.
func jsonKind(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func isNull(raw []byte) bool { return jsonKind(raw) == 'n' }

func kindName(raw []byte) string {
	switch jsonKind(raw) {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case 0:
		return "nothing"
	}
	return "number"
}

func typeErr(path, want string, raw []byte) *bridge.Error {
	return bridge.Errorf(bridge.CodeInvalid, "%s: expected %s, got %s", path, want, kindName(raw))
}

// syntaxErr renders a parse error of the whole body.
func syntaxErr(what string, err error) *bridge.Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return bridge.Errorf(bridge.CodeInvalid, "%s: invalid JSON at offset %d: %s", what, se.Offset, se.Error())
	}
	return bridge.Errorf(bridge.CodeInvalid, "%s: invalid JSON", what)
}

// object is a JSON object decoded one level deep. Decoding into a map keeps
// it independent of key order and case-sensitive.
type object map[string]json.RawMessage

func asObject(raw []byte, path string) (object, error) {
	if jsonKind(raw) != '{' {
		return nil, typeErr(path, "object", raw)
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, typeErr(path, "object", raw)
	}
	if o == nil {
		o = object{}
	}
	return o, nil
}

func asArray(raw []byte, path string) ([]json.RawMessage, error) {
	if jsonKind(raw) != '[' {
		return nil, typeErr(path, "array", raw)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, typeErr(path, "array", raw)
	}
	return a, nil
}

func asString(raw []byte, path string) (string, error) {
	if jsonKind(raw) != '"' {
		return "", typeErr(path, "string", raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", typeErr(path, "string", raw)
	}
	return s, nil
}

func asBool(raw []byte, path string) (bool, error) {
	var v bool
	if k := jsonKind(raw); k != 't' && k != 'f' {
		return false, typeErr(path, "boolean", raw)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, typeErr(path, "boolean", raw)
	}
	return v, nil
}

func asInt(raw []byte, path string) (int64, error) {
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil || !isNumber(raw) {
		return 0, bridge.Errorf(bridge.CodeInvalid, "%s: expected integer, got %s", path, kindName(raw))
	}
	return v, nil
}

func asFloat(raw []byte, path string) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || !isNumber(raw) {
		return 0, typeErr(path, "number", raw)
	}
	return v, nil
}

func isNumber(raw []byte) bool {
	k := jsonKind(raw)
	return k == '-' || (k >= '0' && k <= '9')
}

// compact returns raw without insignificant space, so values kept raw
// compare equal after a round trip. It does not escape HTML.
func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rawObject renders the given keys of o as one compact JSON object with
// sorted keys (deterministic, so it compares equal after a round trip).
func rawObject(o object, keys []string) json.RawMessage {
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = append(b, compact(o[k])...)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. It escapes like encoding/json
// without HTML escaping: quotes, backslashes, control characters, U+2028 and
// U+2029; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// objWriter appends the members of one JSON object, remembering the keys it
// wrote so opaque data merged afterwards cannot duplicate one.
type objWriter struct {
	b    []byte
	keys []string
}

func (w *objWriter) key(k string) {
	if len(w.keys) > 0 {
		w.b = append(w.b, ',')
	}
	w.keys = append(w.keys, k)
	w.b = appendString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *objWriter) has(k string) bool { return slices.Contains(w.keys, k) }

func (w *objWriter) str(k, v string) {
	w.key(k)
	w.b = appendString(w.b, v)
}

func (w *objWriter) raw(k string, v []byte) {
	w.key(k)
	w.b = append(w.b, v...)
}

func (w *objWriter) int(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *objWriter) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *objWriter) float(k string, v float64) {
	w.key(k)
	f, err := json.Marshal(v)
	if err != nil { // NaN or Inf: not JSON
		f = []byte("null")
	}
	w.b = append(w.b, f...)
}

// merge appends the members of the JSON object data whose keys were not
// written yet. It reports false when data is not an object.
func (w *objWriter) merge(data []byte) bool {
	o, err := asObject(data, "")
	if err != nil {
		return false
	}
	for _, k := range sortedKeys(o) {
		if w.has(k) || !json.Valid(o[k]) {
			continue
		}
		w.raw(k, compact(o[k]))
	}
	return true
}

// newObj starts an object.
func newObj() *objWriter { return &objWriter{b: append(make([]byte, 0, 128), '{')} }

// end closes the object and returns its bytes.
func (w *objWriter) end() []byte { return append(w.b, '}') }
