package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// JSON-RPC 2.0 and A2A error codes.
const (
	CodeParseError                = -32700
	CodeInvalidRequest            = -32600
	CodeMethodNotFound            = -32601
	CodeInvalidParams             = -32602
	CodeInternalError             = -32603
	CodeServerError               = -32000 // implementation-defined server errors: -32000..-32099
	CodeTaskNotFound              = -32001
	CodeTaskNotCancelable         = -32002
	CodePushNotSupported          = -32003
	CodeUnsupportedOperation      = -32004
	CodeContentTypeNotSupported   = -32005
	CodeInvalidAgentResponse      = -32006
	CodeExtendedCardNotConfigured = -32007
	CodeExtensionSupportRequired  = -32008 // A2A 1.0
	CodeVersionNotSupported       = -32009 // A2A 1.0
)

// Error is a JSON-RPC error object. BridgeCode, when set, is the bridge
// code the error came from; it rides in data so a bridge on the other side
// gets it back exactly.
type Error struct {
	Code       int
	Message    string
	BridgeCode bridge.Code
	RetryAfter time.Duration
}

func (e *Error) Error() string { return "jsonrpc error " + strconv.Itoa(e.Code) + ": " + e.Message }

// reasons are the google.rpc.ErrorInfo reasons of A2A 1.0.
var reasons = map[int]string{
	CodeInvalidParams:             "INVALID_PARAMS",
	CodeTaskNotFound:              "TASK_NOT_FOUND",
	CodeTaskNotCancelable:         "TASK_NOT_CANCELABLE",
	CodePushNotSupported:          "PUSH_NOTIFICATION_NOT_SUPPORTED",
	CodeUnsupportedOperation:      "UNSUPPORTED_OPERATION",
	CodeContentTypeNotSupported:   "CONTENT_TYPE_NOT_SUPPORTED",
	CodeInvalidAgentResponse:      "INVALID_AGENT_RESPONSE",
	CodeExtendedCardNotConfigured: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
	CodeExtensionSupportRequired:  "EXTENSION_SUPPORT_REQUIRED",
	CodeVersionNotSupported:       "VERSION_NOT_SUPPORTED",
}

func (e *Error) appendJSON(b []byte, v Version) []byte {
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(e.Code), 10)
	b = append(b, `,"message":`...)
	b = wire.AppendString(b, e.Message)
	switch {
	case v == V10 && reasons[e.Code] != "":
		b = append(b, `,"data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":`...)
		b = wire.AppendString(b, reasons[e.Code])
		b = append(b, `,"domain":"a2a-protocol.org"`...)
		if e.BridgeCode != "" {
			b = append(b, `,"metadata":{"bridgeCode":`...)
			b = wire.AppendString(b, string(e.BridgeCode))
			b = append(b, '}')
		}
		b = append(b, "}]"...)
	case e.BridgeCode != "":
		b = append(b, `,"data":{"bridgeCode":`...)
		b = wire.AppendString(b, string(e.BridgeCode))
		if e.RetryAfter > 0 {
			b = append(b, `,"retryAfterSeconds":`...)
			b = strconv.AppendInt(b, int64((e.RetryAfter+time.Second-1)/time.Second), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// toRPC is the hub -> JSON-RPC half of the error table.
var toRPC = map[bridge.Code]int{
	bridge.CodeInvalid:          CodeInvalidParams,
	bridge.CodeUnauthenticated:  CodeServerError,
	bridge.CodePermissionDenied: CodeServerError,
	bridge.CodeNotFound:         CodeTaskNotFound,
	bridge.CodeConflict:         CodeInvalidRequest,
	bridge.CodeTooLarge:         CodeInvalidRequest,
	bridge.CodeRateLimited:      CodeServerError,
	bridge.CodeUnsupported:      CodeUnsupportedOperation,
	bridge.CodeUpstream:         CodeInternalError,
	bridge.CodeUnavailable:      CodeServerError,
	bridge.CodeTimeout:          CodeInternalError,
	bridge.CodeCanceled:         CodeInternalError,
	bridge.CodeInternal:         CodeInternalError,
}

// fromRPC is the JSON-RPC -> hub half of the error table. Codes it does
// not list are CodeUpstream.
var fromRPC = map[int]bridge.Code{
	CodeParseError:                bridge.CodeInvalid,
	CodeInvalidRequest:            bridge.CodeInvalid,
	CodeMethodNotFound:            bridge.CodeUnsupported,
	CodeInvalidParams:             bridge.CodeInvalid,
	CodeInternalError:             bridge.CodeUpstream,
	CodeServerError:               bridge.CodeUpstream,
	CodeTaskNotFound:              bridge.CodeNotFound,
	CodeTaskNotCancelable:         bridge.CodeConflict,
	CodePushNotSupported:          bridge.CodeUnsupported,
	CodeUnsupportedOperation:      bridge.CodeUnsupported,
	CodeContentTypeNotSupported:   bridge.CodeUnsupported,
	CodeInvalidAgentResponse:      bridge.CodeUpstream,
	CodeExtendedCardNotConfigured: bridge.CodeUnsupported,
	CodeExtensionSupportRequired:  bridge.CodeUnsupported,
	CodeVersionNotSupported:       bridge.CodeUnsupported,
}

// EncodeError renders err as the answer to a request no JSON-RPC request
// was read from (authentication, the run API; hub -> wire): an HTTP status
// for its code (a cancel is 500: no A2A client knows 499) and a JSON-RPC
// error response with id null (RPCError's object, in 0.3's shape). The
// errors of a request go in a JSON-RPC response, HTTP 200.
func EncodeError(err *bridge.Error) (status int, body []byte) {
	status = wire.HTTPStatus(err.Code)
	if err.Code == bridge.CodeCanceled {
		status = http.StatusInternalServerError
	}
	return status, AppendError(nil, nil, RPCError(err), V03)
}

// RPCError renders a hub error as a JSON-RPC error object (hub -> wire). An
// error that came from an A2A upstream keeps its code and message; any
// other gets its code from the table, with the bridge code in data where
// the JSON-RPC code alone would lose it. Go errors that are not
// *bridge.Error become -32603 "internal error", never their text.
func RPCError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	be := bridge.AsError(err)
	if be.Dialect == Dialect {
		if c, err := strconv.Atoi(be.UpstreamCode); err == nil && c < 0 {
			return &Error{Code: c, Message: be.Message, RetryAfter: be.RetryAfter}
		}
	}
	code, ok := toRPC[be.Code]
	if !ok {
		code = CodeInternalError
	}
	e := &Error{Code: code, Message: be.Message, RetryAfter: be.RetryAfter}
	if e.Message == "" {
		e.Message = string(be.Code)
	}
	if fromRPC[code] != be.Code {
		e.BridgeCode = be.Code
	}
	return e
}

// DecodeError reads an A2A upstream's error (wire -> hub) in any of the
// shapes servers use: a JSON-RPC response with an error member (HTTP 200,
// or 400/500 from @a2a-js/sdk), a bare JSON-RPC error object, a 1.0 REST
// error {"error":{"code":<http>,"status","message"}}, or any other body
// with an HTTP status. status is the HTTP status (0 or 200 when the error
// came inside a 200 response or stream).
func DecodeError(status int, body []byte) *bridge.Error {
	e := &bridge.Error{Dialect: Dialect}
	if status != 0 && status != http.StatusOK {
		e.Status = status
	}
	o, err := wire.AsObject(body, "")
	if err == nil {
		if raw, ok := o["error"]; ok {
			if eo, err := wire.AsObject(raw, ""); err == nil {
				o = eo
			}
		}
		var code int
		if c, ok := o["code"]; ok && json.Unmarshal(c, &code) == nil && code != 0 {
			msg, _ := optString(o, "message", "")
			if code < 0 { // a JSON-RPC code
				e.Code = rpcCode(code, o)
				e.UpstreamCode = strconv.Itoa(code)
				e.Message = orDefault(msg, "upstream agent error "+strconv.Itoa(code))
				if ra := retryAfterData(o); ra > 0 {
					e.RetryAfter = ra
				}
				return e
			}
			// A REST error: code is the HTTP status.
			if e.Status == 0 {
				e.Status = code
			}
			e.Code = statusCode(e.Status)
			e.UpstreamCode, _ = optString(o, "status", "")
			e.Message = orDefault(msg, http.StatusText(e.Status))
			return e
		}
	}
	e.Code = statusCode(e.Status)
	text := strings.TrimSpace(string(bytes.ToValidUTF8(body, nil)))
	if err == nil || len(text) > 200 || strings.HasPrefix(text, "<") {
		// JSON without an error in it, an HTML error page or a long dump
		// says nothing useful.
		text = ""
	}
	switch {
	case text != "":
		e.Message = text
	case e.Status != 0:
		e.Message = "upstream agent answered " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
	default:
		e.Message = "upstream agent sent an error the bridge cannot read"
	}
	return e
}

// rpcCode maps a JSON-RPC code to a bridge code, preferring the bridge
// code a bridge upstream put in data.
func rpcCode(code int, o object) bridge.Code {
	if d, ok := o["data"]; ok {
		var data struct {
			BridgeCode bridge.Code `json:"bridgeCode"`
		}
		if json.Unmarshal(d, &data) == nil && toRPC[data.BridgeCode] != 0 {
			return data.BridgeCode
		}
		var infos []struct {
			Metadata struct {
				BridgeCode bridge.Code `json:"bridgeCode"`
			} `json:"metadata"`
		}
		if json.Unmarshal(d, &infos) == nil && len(infos) > 0 && toRPC[infos[0].Metadata.BridgeCode] != 0 {
			return infos[0].Metadata.BridgeCode
		}
	}
	if c, ok := fromRPC[code]; ok {
		return c
	}
	return bridge.CodeUpstream
}

func retryAfterData(o object) time.Duration {
	var data struct {
		RetryAfter int64 `json:"retryAfterSeconds"`
	}
	if d, ok := o["data"]; ok && json.Unmarshal(d, &data) == nil && data.RetryAfter > 0 {
		return time.Duration(data.RetryAfter) * time.Second
	}
	return 0
}

// statusCode maps an HTTP status of an upstream's error to a bridge code.
func statusCode(status int) bridge.Code {
	if c, ok := wire.CodeOfStatus(status); ok {
		return c
	}
	if status == http.StatusUnsupportedMediaType {
		return bridge.CodeUnsupported
	}
	return bridge.CodeUpstream
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Errors the endpoint answers, by name.

// ErrTaskNotFound is -32001 for task id.
func ErrTaskNotFound(id string) *Error {
	return &Error{Code: CodeTaskNotFound, Message: "Task not found: " + id}
}

// ErrTaskNotCancelable is -32002 for a task in a final state.
func ErrTaskNotCancelable(id, state string) *Error {
	return &Error{Code: CodeTaskNotCancelable, Message: "Task not cancelable: " + id + " is " + state}
}

// ErrMethodNotFound is -32601 for method.
func ErrMethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + method}
}

// ErrInvalidParams is -32602 with message.
func ErrInvalidParams(message string) *Error {
	return &Error{Code: CodeInvalidParams, Message: message}
}

// ErrPushNotSupported is -32003.
func ErrPushNotSupported() *Error {
	return &Error{Code: CodePushNotSupported, Message: "Push notifications are not supported by this agent."}
}

// ErrUnsupportedOperation is -32004 with message.
func ErrUnsupportedOperation(message string) *Error {
	return &Error{Code: CodeUnsupportedOperation, Message: message}
}

// ErrContentType is -32005 with message.
func ErrContentType(message string) *Error {
	return &Error{Code: CodeContentTypeNotSupported, Message: message}
}

// ErrExtendedCard is -32007.
func ErrExtendedCard() *Error {
	return &Error{Code: CodeExtendedCardNotConfigured, Message: "This agent has no authenticated extended card."}
}
