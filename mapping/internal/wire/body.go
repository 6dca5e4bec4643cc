package wire

import (
	"bytes"
	"encoding/json"

	"github.com/bridge-dev/bridge/bridge"
)

// DecodeBody parses a request body that must be one JSON object, decoded
// one level deep. An empty body, nesting deeper than MaxDepth, invalid
// JSON and a value other than an object are each a *bridge.Error with
// CodeInvalid naming "request body".
func DecodeBody(body []byte) (Object, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, bridge.Errorf(bridge.CodeInvalid, "request body: empty")
	}
	if err := CheckDepth(body, MaxDepth); err != nil {
		return nil, err
	}
	if Kind(body) != '{' {
		if !json.Valid(body) {
			return nil, SyntaxErr("request body", json.Unmarshal(body, new(any)))
		}
		return nil, TypeErr("request body", "object", body)
	}
	var top Object
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, SyntaxErr("request body", err)
	}
	return top, nil
}

// AddExtra keeps the top-level field k of a request verbatim in
// req.Extra, which then belongs to dialect: only an upstream of that
// dialect gets it back.
func AddExtra(req *bridge.Request, dialect, k string, v json.RawMessage) {
	if req.Extra == nil {
		req.Extra = map[string]json.RawMessage{}
		req.ExtraDialect = dialect
	}
	req.Extra[k] = v
}
