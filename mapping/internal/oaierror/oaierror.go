// Package oaierror is the OpenAI error object, {"error":{message, type,
// param, code}} with its HTTP statuses, both ways: Chat Completions and the
// Responses API answer errors with it alike, so mapping/openai and
// mapping/responses share this one table.
package oaierror

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Dialect is the dialect name decoded errors carry: an error of an OpenAI
// upstream (Chat Completions or Responses) passes its status, type and code
// through to OpenAI clients unchanged.
const Dialect = "openai"

// errorRow is one line of the two-way error table.
type errorRow struct {
	code   bridge.Code
	status int
	typ    string // OpenAI error type
	wire   string // OpenAI error code, "" for null
}

// errorTable maps every bridge code to an HTTP status and an OpenAI error
// type (and, where the type alone is ambiguous, an error code).
var errorTable = []errorRow{
	{bridge.CodeInvalid, http.StatusBadRequest, "invalid_request_error", ""},
	{bridge.CodeUnauthenticated, http.StatusUnauthorized, "authentication_error", ""},
	{bridge.CodePermissionDenied, http.StatusForbidden, "permission_error", ""},
	{bridge.CodeNotFound, http.StatusNotFound, "not_found_error", ""},
	{bridge.CodeConflict, http.StatusConflict, "invalid_request_error", "conflict"},
	{bridge.CodeTooLarge, http.StatusRequestEntityTooLarge, "invalid_request_error", ""},
	{bridge.CodeRateLimited, http.StatusTooManyRequests, "rate_limit_error", ""},
	{bridge.CodeUnsupported, http.StatusBadRequest, "invalid_request_error", "unsupported"},
	{bridge.CodeUpstream, http.StatusBadGateway, "server_error", ""},
	{bridge.CodeUnavailable, http.StatusServiceUnavailable, "service_unavailable_error", ""},
	{bridge.CodeTimeout, http.StatusGatewayTimeout, "server_error", "timeout"},
	{bridge.CodeCanceled, 499, "invalid_request_error", "cancelled"},
	{bridge.CodeInternal, http.StatusInternalServerError, "server_error", ""},
}

// rowOf is c's row; internal's, the last, for a code the table lacks.
func rowOf(c bridge.Code) errorRow {
	return wire.Row(errorTable, func(r errorRow) bool { return r.code == c })
}

// EncodeError renders err as an OpenAI error response: the HTTP status and
// the body {"error":{"message","type","param","code"}}. Status, Type, Param
// and UpstreamCode that err carries from an upstream are passed through
// unchanged; the table fills in what is missing.
func EncodeError(err *bridge.Error) (status int, body []byte) {
	err = wire.ErrorOf(err)
	row := rowOf(err.Code)
	status, typ, code := row.status, row.typ, row.wire
	if err.Dialect != "" && err.Dialect != Dialect {
		// Another dialect's status and types mean nothing to this client.
		return status, errorBody(err.Message, typ, "", code)
	}
	if err.Status >= 400 && err.Status <= 599 {
		status = err.Status
	}
	if err.Type != "" {
		typ = err.Type
	}
	if err.UpstreamCode != "" {
		code = err.UpstreamCode
	}
	return status, errorBody(err.Message, typ, err.Param, code)
}

func errorBody(message, typ, param, code string) []byte {
	w := wire.NewObj()
	w.Str("message", message)
	w.Str("type", typ)
	if param != "" {
		w.Str("param", param)
	} else {
		w.Raw("param", []byte("null"))
	}
	if code != "" {
		w.Str("code", code)
	} else {
		w.Raw("code", []byte("null"))
	}
	out := wire.NewObj()
	out.Raw("error", w.End())
	return out.End()
}

// maxErrorText bounds the message kept from a body that is not an OpenAI
// error object.
const maxErrorText = 512

// DecodeError reads an upstream's error response (a non-2xx status and its
// body) into a *bridge.Error that keeps the upstream's Status, Type, Param
// and code. The Code comes from the status; with status 0 (an error inside
// a stream) it comes from a numeric code, else from the error type.
func DecodeError(status int, body []byte) *bridge.Error {
	e := &bridge.Error{Status: status, Dialect: Dialect}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	parsed := false
	if wire.CheckDepth(body, wire.MaxDepth) == nil && json.Unmarshal(body, &env) == nil && len(env.Error) > 0 && !wire.IsNull(env.Error) {
		parsed = fillError(e, env.Error)
	} else if wire.Kind(body) == '{' && json.Valid(body) && wire.CheckDepth(body, wire.MaxDepth) == nil {
		// A bare error object, as some servers (and `event: error`) send.
		parsed = fillError(e, body)
	}
	if !parsed {
		e.Message = wire.Truncate(strings.TrimSpace(string(body)), maxErrorText)
	}
	if e.Message == "" {
		e.Message = wire.StatusMessage(status)
	}
	e.Code = classify(e.Status, e.Type, e.UpstreamCode)
	return e
}

// fillError reads {message,type,param,code} (or a bare string) into e.
func fillError(e *bridge.Error, raw []byte) bool {
	if wire.Kind(raw) == '"' {
		s, err := wire.AsString(raw, "")
		e.Message = wire.Truncate(s, 4*maxErrorText)
		return err == nil
	}
	var o struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Param   json.RawMessage `json:"param"`
		Code    json.RawMessage `json:"code"`
	}
	if wire.Kind(raw) != '{' || json.Unmarshal(raw, &o) != nil {
		return false
	}
	e.Message = wire.Truncate(scalarText(o.Message), 4*maxErrorText)
	e.Type = scalarText(o.Type)
	e.Param = scalarText(o.Param)
	e.UpstreamCode = scalarText(o.Code)
	if e.Status == 0 && wire.IsNumber(o.Code) {
		if n, err := strconv.Atoi(e.UpstreamCode); err == nil && n >= 400 && n <= 599 {
			e.Status = n
		}
	}
	return true
}

// scalarText is the text of a string or number, "" for anything else.
func scalarText(raw json.RawMessage) string {
	switch {
	case wire.Kind(raw) == '"':
		s, _ := wire.AsString(raw, "")
		return s
	case wire.IsNumber(raw):
		return string(wire.Compact(raw))
	}
	return ""
}

// classify picks the bridge code of an upstream error: wire's status
// table (wire.CodeOfStatus), but for a 400 whose code says unsupported,
// 408, 499 and 501 (which, as any other 5xx, is to the bridge a bad
// gateway).
func classify(status int, typ, code string) bridge.Code {
	switch {
	case status == 0:
		return classifyType(typ, code)
	case status == http.StatusBadRequest && code == "unsupported":
		return bridge.CodeUnsupported
	case status == http.StatusRequestTimeout:
		return bridge.CodeTimeout
	case status == 499:
		return bridge.CodeCanceled
	case status == http.StatusNotImplemented:
		return bridge.CodeUpstream
	}
	if c, ok := wire.CodeOfStatus(status); ok {
		return c
	}
	if status >= 500 {
		return bridge.CodeUpstream
	}
	return bridge.CodeInvalid
}

// classifyType picks a code from the error type and code alone.
func classifyType(typ, code string) bridge.Code {
	switch code {
	case "timeout":
		return bridge.CodeTimeout
	case "cancelled", "run_cancelled":
		return bridge.CodeCanceled
	case "conflict":
		return bridge.CodeConflict
	case "unsupported":
		return bridge.CodeUnsupported
	case "rate_limit_exceeded", "insufficient_quota":
		return bridge.CodeRateLimited
	case "context_length_exceeded":
		return bridge.CodeInvalid
	}
	switch typ {
	case "invalid_request_error", "BadRequestError":
		return bridge.CodeInvalid
	case "authentication_error":
		return bridge.CodeUnauthenticated
	case "permission_error":
		return bridge.CodePermissionDenied
	case "not_found_error":
		return bridge.CodeNotFound
	case "rate_limit_error", "insufficient_quota", "tokens", "requests":
		return bridge.CodeRateLimited
	case "service_unavailable_error", "overloaded_error":
		return bridge.CodeUnavailable
	}
	return bridge.CodeUpstream
}

// FinalError is the error a final that did not succeed stands for in Chat
// Completions and the Responses API (wire.FinalError): a cancel is
// CodeCanceled, and a cancel or an interrupt carries the server_error type
// with run_cancelled or run_interrupted as its code.
func FinalError(f *bridge.Final, failed *bridge.Error) *bridge.Error {
	err := wire.FinalError(f, failed, bridge.CodeCanceled)
	switch f.Status {
	case bridge.StatusCancelled:
		err.Type, err.UpstreamCode = "server_error", "run_cancelled"
	case bridge.StatusInterrupted:
		err.Type, err.UpstreamCode = "server_error", "run_interrupted"
	}
	return err
}
