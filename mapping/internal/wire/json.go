package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/bridge"
)

// MaxDepth is the deepest JSON nesting a decoder accepts.
const MaxDepth = 64

var openBrace, openBracket = []byte{'{'}, []byte{'['}

// CheckDepth rejects JSON nested deeper than max levels of objects and
// arrays. It only counts brackets outside strings; validity is left to the
// parser that runs after it.
func CheckDepth(b []byte, max int) error {
	// Fewer opening brackets than max anywhere (a vectorized count): the
	// nesting cannot be deeper, whatever the strings hold.
	if bytes.Count(b, openBrace)+bytes.Count(b, openBracket) <= max {
		return nil
	}
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

// Kind returns the first byte of a JSON value: '{', '[', '"', 't', 'f',
// 'n' or a digit/minus for numbers; 0 for empty input.
func Kind(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// IsNull reports whether raw is JSON null.
func IsNull(raw []byte) bool { return Kind(raw) == 'n' }

// IsNumber reports whether raw starts like a JSON number.
func IsNumber(raw []byte) bool {
	k := Kind(raw)
	return k == '-' || (k >= '0' && k <= '9')
}

// KindName names the JSON type of raw, for error messages.
func KindName(raw []byte) string {
	switch Kind(raw) {
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

// TypeErr is the error of a field of the wrong JSON type.
func TypeErr(path, want string, raw []byte) *bridge.Error {
	return bridge.Errorf(bridge.CodeInvalid, "%s: expected %s, got %s", path, want, KindName(raw))
}

// SyntaxErr renders a parse error of a whole body in the bridge's own
// words: encoding/json's text ("invalid character 'h' looking for
// beginning of value") is Go's, and Go's error text never reaches a
// client (issue 15).
func SyntaxErr(what string, err error) *bridge.Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return bridge.Errorf(bridge.CodeInvalid, "%s: invalid JSON at offset %d: %s", what, se.Offset, syntaxProblem(se.Error()))
	}
	return bridge.Errorf(bridge.CodeInvalid, "%s: invalid JSON", what)
}

// syntaxProblem says what encoding/json's syntax error msg found, without
// its wording.
func syntaxProblem(msg string) string {
	switch {
	case strings.Contains(msg, "unexpected end"):
		return "the document ends early"
	case strings.Contains(msg, "after top-level value"):
		return "more text after the document"
	case strings.HasPrefix(msg, "invalid character "):
		ch, _, _ := strings.Cut(strings.TrimPrefix(msg, "invalid character "), " ")
		return "unexpected character " + ch
	}
	return "not a JSON document"
}

// Object is a JSON object decoded one level deep. Decoding into a map keeps
// it independent of key order and case-sensitive.
type Object map[string]json.RawMessage

// AsObject decodes raw as an object; path names it in errors.
func AsObject(raw []byte, path string) (Object, error) {
	if Kind(raw) != '{' {
		return nil, TypeErr(path, "object", raw)
	}
	var o Object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, TypeErr(path, "object", raw)
	}
	if o == nil {
		o = Object{}
	}
	return o, nil
}

// AsArray decodes raw as an array of raw values.
func AsArray(raw []byte, path string) ([]json.RawMessage, error) {
	if Kind(raw) != '[' {
		return nil, TypeErr(path, "array", raw)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, TypeErr(path, "array", raw)
	}
	return a, nil
}

// AsString decodes raw as a string.
func AsString(raw []byte, path string) (string, error) {
	if Kind(raw) != '"' {
		return "", TypeErr(path, "string", raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", TypeErr(path, "string", raw)
	}
	return s, nil
}

// AsBool decodes raw as a boolean.
func AsBool(raw []byte, path string) (bool, error) {
	var v bool
	if k := Kind(raw); k != 't' && k != 'f' {
		return false, TypeErr(path, "boolean", raw)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, TypeErr(path, "boolean", raw)
	}
	return v, nil
}

// AsInt decodes raw as an integer.
func AsInt(raw []byte, path string) (int64, error) {
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil || !IsNumber(raw) {
		return 0, bridge.Errorf(bridge.CodeInvalid, "%s: expected integer, got %s", path, KindName(raw))
	}
	return v, nil
}

// AsFloat decodes raw as a number.
func AsFloat(raw []byte, path string) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || !IsNumber(raw) {
		return 0, TypeErr(path, "number", raw)
	}
	return v, nil
}

// Join appends key to a JSON path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// ReqString reads the required string o[key].
func ReqString(o Object, key, path string) (string, error) {
	raw, ok := o[key]
	if !ok || IsNull(raw) {
		return "", bridge.Errorf(bridge.CodeInvalid, "%s: required", Join(path, key))
	}
	return AsString(raw, Join(path, key))
}

// OptString reads o[key] into dst when present and not null.
func OptString(o Object, path, key string, dst *string) error {
	return opt(o, path, key, AsString, func(v string) { *dst = v })
}

// OptBool reads o[key] into dst when present and not null.
func OptBool(o Object, path, key string, dst **bool) error {
	return opt(o, path, key, AsBool, func(v bool) { *dst = &v })
}

// OptInt reads o[key] into dst when present and not null.
func OptInt(o Object, path, key string, dst **int64) error {
	return opt(o, path, key, AsInt, func(v int64) { *dst = &v })
}

// OptFloat reads o[key] into dst when present and not null.
func OptFloat(o Object, path, key string, dst **float64) error {
	return opt(o, path, key, AsFloat, func(v float64) { *dst = &v })
}

// opt reads o[key] with as and hands the value to set, when the key is
// present and not null.
func opt[T any](o Object, path, key string, as func([]byte, string) (T, error), set func(T)) error {
	raw, ok := o[key]
	if !ok || IsNull(raw) {
		return nil
	}
	v, err := as(raw, Join(path, key))
	if err != nil {
		return err
	}
	set(v)
	return nil
}

// OptObject reads o[key] as an object: nil, and no error, when it is
// absent or null.
func OptObject(o Object, path, key string) (Object, error) {
	raw, ok := o[key]
	if !ok || IsNull(raw) {
		return nil, nil
	}
	return AsObject(raw, Join(path, key))
}

// OptArray reads o[key] as an array: nil, and no error, when it is absent
// or null (an empty array is not nil).
func OptArray(o Object, path, key string) ([]json.RawMessage, error) {
	raw, ok := o[key]
	if !ok || IsNull(raw) {
		return nil, nil
	}
	return AsArray(raw, Join(path, key))
}

// OptStringMap reads o[key], an object of strings, into dst when present
// and not null; an empty object leaves dst nil.
func OptStringMap(o Object, path, key string, dst *map[string]string) error {
	raw, ok := o[key]
	if !ok || IsNull(raw) {
		return nil
	}
	path = Join(path, key)
	m, err := AsObject(raw, path)
	if err != nil {
		return err
	}
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range SortedKeys(m) {
		s, err := AsString(m[k], path+"."+k)
		if err != nil {
			return err
		}
		out[k] = s
	}
	*dst = out
	return nil
}

// Rest renders the members of o whose keys are not in known as one
// compact object (see RawObject), or nil when there are none: what a
// decoder keeps of fields the hub has no place for.
func Rest(o Object, known ...string) json.RawMessage {
	var keys []string
	for k := range o {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return RawObject(o, keys)
}

// Compact returns raw without insignificant space, so values kept raw
// compare equal after a round trip. It does not escape HTML.
func Compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}

// CompactText is raw, compacted (Compact), as the text of a string: JSON
// kept as text (tool-call arguments sent as an object) whose strings hold
// bytes that are not UTF-8 has each such byte replaced by U+FFFD, as
// encoding/json does when it decodes a string, and as this package's
// writer does when it encodes one. So the text is what it will be after it
// has been sent on as a JSON string and read back.
func CompactText(raw []byte) string {
	c := Compact(raw)
	if utf8.Valid(c) {
		return string(c)
	}
	var b strings.Builder
	b.Grow(len(c) + 8)
	for i := 0; i < len(c); {
		r, size := utf8.DecodeRune(c[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.Write(c[i : i+size])
		}
		i += size
	}
	return b.String()
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// RawObject renders the given keys of o as one compact JSON object with
// sorted keys (deterministic, so it compares equal after a round trip).
func RawObject(o Object, keys []string) json.RawMessage {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		b = append(b, Compact(o[k])...)
	}
	return append(b, '}')
}

// Truncate cuts s to at most n bytes on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. It escapes like encoding/json
// without HTML escaping: quotes, backslashes, control characters, U+2028 and
// U+2029; invalid UTF-8 becomes U+FFFD.
func AppendString(b []byte, s string) []byte {
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

// AppendCount appends a token count, 0 when it was not reported.
func AppendCount(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, '0')
	}
	return strconv.AppendInt(b, *n, 10)
}

// TokenDetails are the details of an OpenAI usage's counts, as Chat
// Completions (prompt_ and completion_tokens_details) and the Responses API
// (input_ and output_tokens_details) send them: the input's cached and
// cache-write tokens, the output's reasoning tokens.
type TokenDetails struct {
	CachedTokens     *int64 `json:"cached_tokens"`
	CacheWriteTokens *int64 `json:"cache_write_tokens"`
	ReasoningTokens  *int64 `json:"reasoning_tokens"`
}

// ObjWriter appends the members of one JSON object, remembering the keys
// it wrote so data merged afterwards cannot duplicate one. B is the object
// so far; a caller may append a value to it right after Key.
type ObjWriter struct {
	B    []byte
	keys []string
}

// NewObj starts an object.
func NewObj() *ObjWriter { return &ObjWriter{B: append(make([]byte, 0, 128), '{')} }

// Key writes a member's key (and the comma before it).
func (w *ObjWriter) Key(k string) {
	if len(w.keys) > 0 {
		w.B = append(w.B, ',')
	}
	w.keys = append(w.keys, k)
	w.B = AppendString(w.B, k)
	w.B = append(w.B, ':')
}

// Has reports whether key k was written.
func (w *ObjWriter) Has(k string) bool { return slices.Contains(w.keys, k) }

// Str writes a string member.
func (w *ObjWriter) Str(k, v string) {
	w.Key(k)
	w.B = AppendString(w.B, v)
}

// Raw writes a member whose value is JSON text.
func (w *ObjWriter) Raw(k string, v []byte) {
	w.Key(k)
	w.B = append(w.B, v...)
}

// Strings writes a member whose value is an array of strings.
func (w *ObjWriter) Strings(k string, v []string) {
	w.Key(k)
	w.B = append(w.B, '[')
	for i, s := range v {
		if i > 0 {
			w.B = append(w.B, ',')
		}
		w.B = AppendString(w.B, s)
	}
	w.B = append(w.B, ']')
}

// StrMap writes a member whose value is an object of strings, its keys
// sorted.
func (w *ObjWriter) StrMap(k string, m map[string]string) {
	o := NewObj()
	for _, key := range SortedKeys(m) {
		o.Str(key, m[key])
	}
	w.Raw(k, o.End())
}

// Array writes a member whose value is an array of n elements, elem(i)
// giving element i's JSON.
func (w *ObjWriter) Array(k string, n int, elem func(i int) []byte) {
	w.Key(k)
	w.B = append(w.B, '[')
	for i := range n {
		if i > 0 {
			w.B = append(w.B, ',')
		}
		w.B = append(w.B, elem(i)...)
	}
	w.B = append(w.B, ']')
}

// JoinArray joins JSON values into one array.
func JoinArray[T ~[]byte](items []T) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// Null writes a null member.
func (w *ObjWriter) Null(k string) { w.Raw(k, []byte("null")) }

// Int writes an integer member.
func (w *ObjWriter) Int(k string, v int64) {
	w.Key(k)
	w.B = strconv.AppendInt(w.B, v, 10)
}

// Bool writes a boolean member.
func (w *ObjWriter) Bool(k string, v bool) {
	w.Key(k)
	w.B = strconv.AppendBool(w.B, v)
}

// Float writes a number member (null for NaN and infinities).
func (w *ObjWriter) Float(k string, v float64) {
	w.Key(k)
	f, err := json.Marshal(v)
	if err != nil {
		f = []byte("null")
	}
	w.B = append(w.B, f...)
}

// Merge appends the members of the JSON object data whose keys were not
// written yet. It reports false when data is not an object.
func (w *ObjWriter) Merge(data []byte) bool {
	o, err := AsObject(data, "")
	if err != nil {
		return false
	}
	for _, k := range SortedKeys(o) {
		if w.Has(k) || !json.Valid(o[k]) {
			continue
		}
		w.Raw(k, Compact(o[k]))
	}
	return true
}

// End closes the object and returns its bytes.
func (w *ObjWriter) End() []byte { return append(w.B, '}') }
