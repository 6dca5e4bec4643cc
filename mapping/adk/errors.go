package adk

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Status is the HTTP status the api_server answers an error code with.
// ADK-JS answers an existing session id with 400, so CodeConflict does too.
func Status(c bridge.Code) int {
	if c == bridge.CodeConflict {
		return http.StatusBadRequest
	}
	return wire.HTTPStatus(c)
}

// codeOfStatus maps an upstream HTTP status to a code.
func codeOfStatus(s int) bridge.Code {
	if c, ok := wire.CodeOfStatus(s); ok {
		return c
	}
	switch {
	case s == http.StatusRequestTimeout:
		return bridge.CodeTimeout
	case s == 499:
		return bridge.CodeCanceled
	case s >= 500:
		return bridge.CodeUpstream
	}
	return bridge.CodeInvalid
}

// EncodeError renders err as the api_server does: {"error": "..."} with
// its status.
func EncodeError(err *bridge.Error) (status int, body []byte) {
	msg := err.Message
	if msg == "" {
		msg = string(err.Code)
	}
	b := wire.NewObj()
	b.Str("error", msg)
	return Status(err.Code), b.End()
}

// DecodeError reads an api_server error answer: {"error": "..."} (ADK-JS),
// {"detail": "..."} (Python's FastAPI), or anything else (express's HTML
// page for malformed JSON), by its status.
func DecodeError(status int, body []byte) *bridge.Error {
	e := &bridge.Error{Code: codeOfStatus(status), Status: status, Dialect: Dialect}
	var o struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &o) == nil {
		for _, raw := range []json.RawMessage{o.Error, o.Detail} {
			if len(raw) == 0 || wire.IsNull(raw) {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(wire.Compact(raw))
			}
			e.Message = s
			break
		}
	}
	if e.Message == "" {
		e.Message = "the ADK api_server answered HTTP " + strconv.Itoa(status)
		if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "<") {
			e.Message += " (an HTML error page)"
		}
	}
	return e
}
