package wire

import (
	"net/http"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
)

// StatusMessage is the message of an upstream error whose body said
// nothing: "upstream returned status 503 (Service Unavailable)", or
// "upstream error" for status 0 (an error inside a stream).
func StatusMessage(status int) string {
	if status == 0 {
		return "upstream error"
	}
	m := "upstream returned status " + strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		m += " (" + t + ")"
	}
	return m
}

// FinalError is the error a final that did not succeed stands for; nil for
// completed and input_required. A failed final answers with its own error,
// else with failed (the stream's error event, for a dialect that keeps one),
// else with one made of its reason. The dialects disagree on a cancel, so
// the caller names its code: Anthropic has no cancel status and answers
// CodeInternal, the OpenAI family CodeCanceled (see oaierror.FinalError).
// Each call returns a fresh error for a cancel or an interrupt, so the
// caller may set its own fields on it.
func FinalError(f *bridge.Final, failed *bridge.Error, cancel bridge.Code) *bridge.Error {
	msg := func(def string) string {
		if f.Error != nil && f.Error.Message != "" {
			return f.Error.Message
		}
		if f.Reason != "" {
			return f.Reason
		}
		return def
	}
	switch f.Status {
	case bridge.StatusFailed:
		if f.Error != nil {
			return f.Error
		}
		if failed != nil {
			return failed
		}
		return &bridge.Error{Code: bridge.CodeInternal, Message: msg("run failed")}
	case bridge.StatusCancelled:
		return &bridge.Error{Code: cancel, Message: msg("run cancelled")}
	case bridge.StatusInterrupted:
		return &bridge.Error{Code: bridge.CodeUnavailable, Message: msg("run interrupted")}
	}
	return nil
}

// httpStatus is the HTTP status of each code where the dialects without an
// error table of their own agree (A2A before a JSON-RPC request, ADK).
var httpStatus = map[bridge.Code]int{
	bridge.CodeInvalid:          http.StatusBadRequest,
	bridge.CodeUnauthenticated:  http.StatusUnauthorized,
	bridge.CodePermissionDenied: http.StatusForbidden,
	bridge.CodeNotFound:         http.StatusNotFound,
	bridge.CodeConflict:         http.StatusConflict,
	bridge.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	bridge.CodeRateLimited:      http.StatusTooManyRequests,
	bridge.CodeUnsupported:      http.StatusNotImplemented,
	bridge.CodeUpstream:         http.StatusBadGateway,
	bridge.CodeUnavailable:      http.StatusServiceUnavailable,
	bridge.CodeTimeout:          http.StatusGatewayTimeout,
	bridge.CodeCanceled:         499,
	bridge.CodeInternal:         http.StatusInternalServerError,
}

// HTTPStatus is the plain HTTP status of code; 500 for a code it does not
// know.
func HTTPStatus(code bridge.Code) int {
	if s, ok := httpStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// statusCodes is how those dialects read an upstream's HTTP error status,
// where they agree.
var statusCodes = map[int]bridge.Code{
	http.StatusBadRequest:            bridge.CodeInvalid,
	http.StatusUnprocessableEntity:   bridge.CodeInvalid,
	http.StatusUnauthorized:          bridge.CodeUnauthenticated,
	http.StatusForbidden:             bridge.CodePermissionDenied,
	http.StatusNotFound:              bridge.CodeNotFound,
	http.StatusConflict:              bridge.CodeConflict,
	http.StatusRequestEntityTooLarge: bridge.CodeTooLarge,
	http.StatusTooManyRequests:       bridge.CodeRateLimited,
	http.StatusNotImplemented:        bridge.CodeUnsupported,
	http.StatusServiceUnavailable:    bridge.CodeUnavailable,
	http.StatusGatewayTimeout:        bridge.CodeTimeout,
}

// CodeOfStatus reads an upstream's HTTP error status as a code; ok is false
// for a status it does not name, which each dialect reads its own way.
func CodeOfStatus(status int) (code bridge.Code, ok bool) {
	code, ok = statusCodes[status]
	return code, ok
}

// ErrorOf is the error an error event carries, or an internal error when
// it carries none.
func ErrorOf(err *bridge.Error) *bridge.Error {
	if err == nil {
		return &bridge.Error{Code: bridge.CodeInternal, Message: "internal error"}
	}
	return err
}

// FinalOf is the final a final event carries, or a completed one when it
// carries none.
func FinalOf(f *bridge.Final) *bridge.Final {
	if f == nil {
		return &bridge.Final{Status: bridge.StatusCompleted}
	}
	return f
}

// Row is the first row of a dialect's error table that match picks, or
// the table's last row (internal's, in every dialect's table) when none
// does.
func Row[R any](table []R, match func(R) bool) R {
	for _, r := range table {
		if match(r) {
			return r
		}
	}
	return table[len(table)-1]
}
