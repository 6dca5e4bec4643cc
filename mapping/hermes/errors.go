package hermes

import (
	"encoding/json"
	"net/http"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Hermes' own error codes, the "code" of its error envelope.
const (
	CodeSessionNotFound      = "session_not_found"
	CodeSessionExists        = "session_exists"
	CodeRunNotFound          = "run_not_found"
	CodeRunAlreadyActive     = "run_already_active"
	CodeRunNotAcceptingSteer = "run_not_accepting_steer"
	CodeRunNotActive         = "run_not_active"
	CodeIdempotencyConflict  = "idempotency_key_conflict"
	CodeInvalidRequest       = "invalid_request"
	CodeUnsupportedContent   = "unsupported_content_type"
	codeInvalidAPIKey        = "invalid_api_key"
	codePermissionDenied     = "permission_denied"
	codeNotFound             = "not_found"
	codeConflict             = "conflict"
	codeTooLarge             = "request_too_large"
	codeRateLimited          = "rate_limit_exceeded"
	codeUnsupported          = "unsupported"
	codeUpstream             = "upstream_error"
	codeUnavailable          = "service_unavailable"
	codeTimeout              = "timeout"
	codeCancelled            = "cancelled"
	codeServer               = "server_error"
)

type errorRow struct {
	code   bridge.Code
	status int
	typ    string
	wire   string
}

// errorTable maps every bridge code to a status, an error type and a
// Hermes code; DecodeError reads it backwards.
var errorTable = []errorRow{
	{bridge.CodeInvalid, http.StatusBadRequest, "invalid_request_error", CodeInvalidRequest},
	{bridge.CodeUnauthenticated, http.StatusUnauthorized, "invalid_request_error", codeInvalidAPIKey},
	{bridge.CodePermissionDenied, http.StatusForbidden, "invalid_request_error", codePermissionDenied},
	{bridge.CodeNotFound, http.StatusNotFound, "invalid_request_error", codeNotFound},
	{bridge.CodeConflict, http.StatusConflict, "invalid_request_error", codeConflict},
	{bridge.CodeTooLarge, http.StatusRequestEntityTooLarge, "invalid_request_error", codeTooLarge},
	{bridge.CodeRateLimited, http.StatusTooManyRequests, "rate_limit_error", codeRateLimited},
	{bridge.CodeUnsupported, http.StatusBadRequest, "invalid_request_error", codeUnsupported},
	{bridge.CodeUpstream, http.StatusBadGateway, "server_error", codeUpstream},
	{bridge.CodeUnavailable, http.StatusServiceUnavailable, "server_error", codeUnavailable},
	{bridge.CodeTimeout, http.StatusGatewayTimeout, "server_error", codeTimeout},
	{bridge.CodeCanceled, 499, "invalid_request_error", codeCancelled},
	{bridge.CodeInternal, http.StatusInternalServerError, "server_error", codeServer},
}

// specific maps Hermes' specific codes to bridge codes.
var specific = map[string]bridge.Code{
	CodeSessionNotFound:      bridge.CodeNotFound,
	CodeRunNotFound:          bridge.CodeNotFound,
	CodeSessionExists:        bridge.CodeConflict,
	CodeRunAlreadyActive:     bridge.CodeConflict,
	CodeRunNotAcceptingSteer: bridge.CodeConflict,
	CodeRunNotActive:         bridge.CodeConflict,
	CodeIdempotencyConflict:  bridge.CodeConflict,
	"steer_not_accepted":     bridge.CodeConflict,
	CodeUnsupportedContent:   bridge.CodeUnsupported,
}

func rowOf(c bridge.Code) errorRow {
	for _, r := range errorTable {
		if r.code == c {
			return r
		}
	}
	return errorTable[len(errorTable)-1]
}

func rowOfWire(c string) errorRow {
	for _, r := range errorTable {
		if r.wire == c {
			return r
		}
	}
	return errorTable[0]
}

// Errorf makes an error with a Hermes-specific code (session_not_found,
// run_already_active ...) that EncodeError writes as the envelope's code.
func Errorf(code bridge.Code, hermesCode, format string, args ...any) *bridge.Error {
	e := bridge.Errorf(code, format, args...)
	e.Dialect, e.UpstreamCode = Dialect, hermesCode
	return e
}

// EncodeError renders err as Hermes' (OpenAI-style) error envelope
// {"error":{"message","type","param","code"}} and its status. A Hermes
// code err carries (from Errorf or a Hermes upstream) is kept; errors of
// other dialects get the table's.
func EncodeError(err *bridge.Error) (status int, body []byte) {
	err = wire.ErrorOf(err)
	row := rowOf(err.Code)
	status, typ, code := row.status, row.typ, row.wire
	if err.Dialect == Dialect || err.Dialect == "" {
		if err.UpstreamCode != "" {
			code = err.UpstreamCode
		}
		if err.Dialect == Dialect && err.Status >= 400 && err.Status <= 599 {
			status = err.Status
		}
	}
	w := wire.NewObj()
	w.Str("message", err.Message)
	w.Str("type", typ)
	w.Null("param")
	w.Str("code", code)
	w.B = append(w.B, '}')
	o := wire.NewObj()
	o.Raw("error", w.B)
	o.B = append(o.B, '}')
	return status, o.B
}

// DecodeError reads a Hermes error answer (wire -> hub): the code comes
// from the envelope's code when Hermes names a specific one, else from the
// status. The upstream's status, type and code are kept.
func DecodeError(status int, body []byte) *bridge.Error {
	var env struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	e := &bridge.Error{Dialect: Dialect, Status: status, Code: codeOfStatus(status)}
	if json.Unmarshal(body, &env) == nil {
		e.Message, e.Type = env.Error.Message, env.Error.Type
		var c string
		if json.Unmarshal(env.Error.Code, &c) == nil && c != "" {
			e.UpstreamCode = c
			if bc, ok := specific[c]; ok {
				e.Code = bc
			} else if c == codeUnsupported || c == CodeInvalidRequest {
				e.Code = rowOfWire(c).code
			}
		}
	}
	if e.Message == "" {
		e.Message = wire.Truncate(string(body), 200)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

func codeOfStatus(status int) bridge.Code {
	switch {
	case status == 499:
		return bridge.CodeCanceled
	case status >= 500:
		if status == http.StatusServiceUnavailable {
			return bridge.CodeUnavailable
		}
		if status == http.StatusGatewayTimeout {
			return bridge.CodeTimeout
		}
		return bridge.CodeUpstream
	}
	for _, r := range errorTable {
		if r.status == status {
			return r.code
		}
	}
	return bridge.CodeInvalid
}
