package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// errorRow is one line of the two-way error table.
type errorRow struct {
	code   bridge.Code
	status int
	typ    string // Anthropic error type
}

// StatusOverloaded is Anthropic's status for an overloaded API.
const StatusOverloaded = 529

// errorTable maps every bridge code to an HTTP status and an Anthropic
// error type. Anthropic has no type of its own for a conflict, a gateway
// fault or a cancelled request: those take the closest (conflict_error,
// api_error with 502, invalid_request_error with 499).
var errorTable = []errorRow{
	{bridge.CodeInvalid, http.StatusBadRequest, "invalid_request_error"},
	{bridge.CodeUnauthenticated, http.StatusUnauthorized, "authentication_error"},
	{bridge.CodePermissionDenied, http.StatusForbidden, "permission_error"},
	{bridge.CodeNotFound, http.StatusNotFound, "not_found_error"},
	{bridge.CodeConflict, http.StatusConflict, "conflict_error"},
	{bridge.CodeTooLarge, http.StatusRequestEntityTooLarge, "request_too_large"},
	{bridge.CodeRateLimited, http.StatusTooManyRequests, "rate_limit_error"},
	{bridge.CodeUnsupported, http.StatusBadRequest, "invalid_request_error"},
	{bridge.CodeUpstream, http.StatusBadGateway, "api_error"},
	{bridge.CodeUnavailable, StatusOverloaded, "overloaded_error"},
	{bridge.CodeTimeout, http.StatusGatewayTimeout, "timeout_error"},
	{bridge.CodeCanceled, 499, "invalid_request_error"},
	{bridge.CodeInternal, http.StatusInternalServerError, "api_error"},
}

// rowOf is c's row; internal's, the last, for a code the table lacks.
func rowOf(c bridge.Code) errorRow {
	return wire.Row(errorTable, func(r errorRow) bool { return r.code == c })
}

// EncodeError renders err as an Anthropic error response: the HTTP status
// and the body {"type":"error","error":{"type","message"}}. The status and
// type an Anthropic upstream gave are passed through unchanged; another
// dialect's mean nothing to this client, so the table decides from the
// code.
func EncodeError(err *bridge.Error) (status int, body []byte) {
	err = wire.ErrorOf(err)
	row := rowOf(err.Code)
	status, typ := row.status, row.typ
	if err.Dialect == Dialect {
		if err.Status >= 400 && err.Status <= 599 {
			status = err.Status
		}
		if err.Type != "" {
			typ = err.Type
		}
	}
	return status, errorBody(typ, err.Message)
}

func errorBody(typ, message string) []byte {
	e := wire.NewObj()
	e.Str("type", typ)
	e.Str("message", message)
	w := wire.NewObj()
	w.Str("type", "error")
	w.Raw("error", e.End())
	return w.End()
}

// maxErrorText bounds the message kept from a body that is not an
// Anthropic error object.
const maxErrorText = 512

// DecodeError reads an upstream's error response (a non-2xx status and its
// body) into a *bridge.Error that keeps the upstream's Status and Type. The
// Code comes from the status; with status 0 (an `error` event inside a
// stream) it comes from the error type.
func DecodeError(status int, body []byte) *bridge.Error {
	e := &bridge.Error{Status: status, Dialect: Dialect}
	parsed := false
	if wire.CheckDepth(body, wire.MaxDepth) == nil && wire.Kind(body) == '{' {
		var env struct {
			Type  json.RawMessage `json:"type"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &env) == nil {
			switch {
			case wire.Kind(env.Error) == '{':
				parsed = fillError(e, env.Error)
			case wire.Kind(env.Error) == '"':
				e.Message, _ = wire.AsString(env.Error, "")
				parsed = true
			default:
				parsed = fillError(e, body) // a bare error object
			}
		}
	}
	if !parsed {
		e.Message = wire.Truncate(strings.TrimSpace(string(body)), maxErrorText)
	}
	e.Message = wire.Truncate(e.Message, 4*maxErrorText)
	if e.Message == "" {
		e.Message = wire.StatusMessage(status)
	}
	e.Code = classify(e.Status, e.Type)
	return e
}

// fillError reads {type, message} into e; it reports whether either was
// there.
func fillError(e *bridge.Error, raw []byte) bool {
	var o struct {
		Type    json.RawMessage `json:"type"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return false
	}
	if wire.Kind(o.Type) == '"' {
		e.Type, _ = wire.AsString(o.Type, "")
		if e.Type == "error" {
			e.Type = ""
		}
	}
	if wire.Kind(o.Message) == '"' {
		e.Message, _ = wire.AsString(o.Message, "")
	}
	return e.Type != "" || e.Message != ""
}

// classify picks the bridge code of an upstream error: wire's status
// table (wire.CodeOfStatus), but for 402 (billing), 408, 499, 529
// (overloaded) and 501 (which, as any other 5xx, is to the bridge a bad
// gateway); the type decides a 422, another 4xx, and an error inside a
// stream (status 0).
func classify(status int, typ string) bridge.Code {
	switch {
	case status == 0, status == http.StatusUnprocessableEntity:
		return classifyType(typ)
	case status == http.StatusPaymentRequired:
		return bridge.CodePermissionDenied
	case status == http.StatusRequestTimeout:
		return bridge.CodeTimeout
	case status == 499:
		return bridge.CodeCanceled
	case status == StatusOverloaded:
		return bridge.CodeUnavailable
	case status == http.StatusNotImplemented:
		return bridge.CodeUpstream
	}
	if c, ok := wire.CodeOfStatus(status); ok {
		return c
	}
	switch {
	case status >= 500:
		return bridge.CodeUpstream
	case status >= 400:
		return classifyType(typ)
	}
	return bridge.CodeUpstream
}

// classifyType picks a code from the error type alone.
func classifyType(typ string) bridge.Code {
	switch typ {
	case "invalid_request_error":
		return bridge.CodeInvalid
	case "authentication_error":
		return bridge.CodeUnauthenticated
	case "permission_error", "billing_error":
		return bridge.CodePermissionDenied
	case "not_found_error":
		return bridge.CodeNotFound
	case "conflict_error":
		return bridge.CodeConflict
	case "request_too_large":
		return bridge.CodeTooLarge
	case "rate_limit_error":
		return bridge.CodeRateLimited
	case "timeout_error":
		return bridge.CodeTimeout
	case "overloaded_error":
		return bridge.CodeUnavailable
	}
	return bridge.CodeUpstream // api_error and anything unknown
}

// finalError is the error a final that did not succeed stands for in
// Messages (wire.FinalError): Messages has no cancel status, so a cancel
// is CodeInternal.
func finalError(f *bridge.Final, failed *bridge.Error) *bridge.Error {
	return wire.FinalError(f, failed, bridge.CodeInternal)
}
