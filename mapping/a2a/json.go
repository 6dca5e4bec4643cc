package a2a

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// maxDepth is the deepest JSON nesting a decoder accepts (checked by
// wire.CheckDepth).
const maxDepth = 64

func isNull(raw []byte) bool { return wire.IsNull(raw) }

// invalid is a params error naming the field: -32602 on the wire.
func invalid(format string, args ...any) *bridge.Error {
	return bridge.Errorf(bridge.CodeInvalid, format, args...)
}

// object is a JSON object decoded one level deep (wire.Object).
type object = wire.Object

func asInt(raw []byte, path string) (int, error) {
	k := wire.Kind(raw)
	var v int64
	if (k != '-' && (k < '0' || k > '9')) || json.Unmarshal(raw, &v) != nil || v > 1<<31 || v < -(1<<31) {
		return 0, invalid("%s: expected integer, got %s", path, wire.KindName(raw))
	}
	return int(v), nil
}

// asStrings reads an array of strings.
func asStrings(raw []byte, path string) ([]string, error) {
	a, err := wire.AsArray(raw, path)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(a))
	for i, r := range a {
		s, err := wire.AsString(r, path+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// asMap decodes a JSON object into map[string]any, numbers kept exact.
func asMap(raw []byte, path string) (map[string]any, error) {
	if wire.Kind(raw) != '{' {
		return nil, wire.TypeErr(path, "object", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, wire.TypeErr(path, "object", raw)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// optMap reads an optional metadata-like object: absent or null is nil.
func optMap(o object, key, path string) (map[string]any, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil, nil
	}
	return asMap(raw, path+"."+key)
}

// optString reads an optional string member: absent or null is "".
func optString(o object, key, path string) (string, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return "", nil
	}
	return wire.AsString(raw, path+"."+key)
}

// compact returns raw without insignificant space.
func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}

// appendJSON appends v marshalled by encoding/json (metadata and other
// free-form values), or null when it cannot be.
func appendJSON(b []byte, v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, out...)
}
