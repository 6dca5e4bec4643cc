package a2a

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Version is the A2A protocol version a request speaks, from its
// A2A-Version header.
type Version uint8

const (
	V03 Version = iota // A2A 0.3: the default when A2A-Version is absent
	V10                // A2A 1.0
)

func (v Version) String() string {
	if v == V10 {
		return "1.0"
	}
	return "0.3"
}

// VersionHeader is the HTTP header naming the protocol version (A2A 1.0).
const VersionHeader = "A2A-Version"

// ParseVersion reads an A2A-Version header value: empty or 0.3[.x] is
// V03, 1 or 1.0[.x] is V10; anything else is -32009.
func ParseVersion(h string) (Version, *Error) {
	h = strings.TrimSpace(h)
	switch {
	case h == "", h == "0.3", strings.HasPrefix(h, "0.3."):
		return V03, nil
	case h == "1", h == "1.0", strings.HasPrefix(h, "1.0."):
		return V10, nil
	}
	return V03, &Error{Code: CodeVersionNotSupported,
		Message: "The requested A2A protocol version '" + h + "' is not supported. Supported versions: 0.3, 1.0"}
}

// Op is a method of the protocol, whichever name it came by.
type Op uint8

const (
	OpUnknown Op = iota
	OpSend
	OpStream
	OpGet
	OpCancel
	OpSubscribe
	OpList
	OpPushSet
	OpPushGet
	OpPushList
	OpPushDelete
	OpExtendedCard
)

// methods maps both versions' method names to their operation. The two
// sets do not clash, so one endpoint serves clients of either version.
var methods = map[string]Op{
	// A2A 0.3
	"message/send":                        OpSend,
	"message/stream":                      OpStream,
	"tasks/get":                           OpGet,
	"tasks/cancel":                        OpCancel,
	"tasks/resubscribe":                   OpSubscribe,
	"tasks/pushNotificationConfig/set":    OpPushSet,
	"tasks/pushNotificationConfig/get":    OpPushGet,
	"tasks/pushNotificationConfig/list":   OpPushList,
	"tasks/pushNotificationConfig/delete": OpPushDelete,
	"agent/getAuthenticatedExtendedCard":  OpExtendedCard,
	// A2A 1.0
	"SendMessage":                      OpSend,
	"SendStreamingMessage":             OpStream,
	"GetTask":                          OpGet,
	"CancelTask":                       OpCancel,
	"SubscribeToTask":                  OpSubscribe,
	"ListTasks":                        OpList,
	"CreateTaskPushNotificationConfig": OpPushSet,
	"GetTaskPushNotificationConfig":    OpPushGet,
	"ListTaskPushNotificationConfigs":  OpPushList,
	"DeleteTaskPushNotificationConfig": OpPushDelete,
	"GetExtendedAgentCard":             OpExtendedCard,
}

// LookupMethod returns the operation a method name names.
func LookupMethod(name string) Op { return methods[name] }

// Streaming reports whether the operation answers with an SSE stream.
func (o Op) Streaming() bool { return o == OpStream || o == OpSubscribe }

// MethodName is the method's name in version v, for outbound requests.
func (o Op) MethodName(v Version) string {
	names := [...][2]string{
		OpSend:         {"message/send", "SendMessage"},
		OpStream:       {"message/stream", "SendStreamingMessage"},
		OpGet:          {"tasks/get", "GetTask"},
		OpCancel:       {"tasks/cancel", "CancelTask"},
		OpSubscribe:    {"tasks/resubscribe", "SubscribeToTask"},
		OpList:         {"", "ListTasks"},
		OpPushSet:      {"tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig"},
		OpPushGet:      {"tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig"},
		OpPushList:     {"tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigs"},
		OpPushDelete:   {"tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig"},
		OpExtendedCard: {"agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"},
	}
	if int(o) >= len(names) {
		return ""
	}
	return names[o][v]
}

// Request is one JSON-RPC request of a body. ID is the request's id as
// sent (nil when absent: a notification, which gets no response). Err is
// set when the element is not a valid request; it is answered with Err
// and ID (null when the id itself was unusable).
type Request struct {
	ID     json.RawMessage
	Method string
	Op     Op
	Params json.RawMessage // nil when absent
	Err    *Error
}

// Notification reports whether the request has no id.
func (r *Request) Notification() bool { return r.ID == nil && r.Err == nil }

// MaxBatch bounds the requests of one batch.
const MaxBatch = 32

func decodeRequest(raw []byte) Request {
	bad := func(id json.RawMessage, msg string) Request {
		return Request{ID: id, Err: &Error{Code: CodeInvalidRequest, Message: "Invalid JSON-RPC Request: " + msg}}
	}
	if wire.Kind(raw) != '{' {
		return bad(nil, "not an object.")
	}
	var o object
	if json.Unmarshal(raw, &o) != nil {
		return bad(nil, "not an object.")
	}
	var id json.RawMessage
	if v, ok := o["id"]; ok {
		switch k := wire.Kind(v); {
		case k == '"', k == 'n', k == '-', k >= '0' && k <= '9':
			id = compact(v)
		default:
			return bad(nil, "id must be a string, a number or null.")
		}
	}
	v, ok := o["jsonrpc"]
	if !ok || !bytes.Equal(bytes.TrimSpace(v), []byte(`"2.0"`)) {
		return bad(orNull(id), `jsonrpc must be "2.0".`)
	}
	m, ok := o["method"]
	if !ok || wire.Kind(m) != '"' {
		return bad(orNull(id), "method must be a string.")
	}
	var method string
	if json.Unmarshal(m, &method) != nil || method == "" {
		return bad(orNull(id), "method must be a non-empty string.")
	}
	r := Request{ID: id, Method: method, Op: LookupMethod(method)}
	if p, ok := o["params"]; ok {
		switch wire.Kind(p) {
		case '{', '[':
			r.Params = p
		default:
			return bad(orNull(id), "params must be an object or an array.")
		}
	}
	return r
}

// orNull is id, or the JSON null when id is absent (error responses always
// carry an id).
func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

// AppendResult appends a JSON-RPC success response whose result is the
// JSON value result.
func AppendResult(b []byte, id json.RawMessage, result []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, orNull(id)...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// AppendError appends a JSON-RPC error response in version v's shape: in
// 1.0, A2A errors carry data as a list of google.rpc.ErrorInfo.
func AppendError(b []byte, id json.RawMessage, e *Error, v Version) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, orNull(id)...)
	b = append(b, `,"error":`...)
	b = e.appendJSON(b, v)
	return append(b, '}')
}
