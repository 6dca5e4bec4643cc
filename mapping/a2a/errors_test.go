package a2a

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

var allRPCCodes = []int{
	CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams, CodeInternalError, CodeServerError,
	CodeTaskNotFound, CodeTaskNotCancelable, CodePushNotSupported, CodeUnsupportedOperation, CodeContentTypeNotSupported,
	CodeInvalidAgentResponse, CodeExtendedCardNotConfigured, CodeExtensionSupportRequired, CodeVersionNotSupported,
}

// TestErrorTableHubToWire: every bridge code has a JSON-RPC code, and a
// bridge on the other side reads the same bridge code back.
func TestErrorTableHubToWire(t *testing.T) {
	for _, c := range bridge.Codes() {
		t.Run(string(c), func(t *testing.T) {
			e := RPCError(&bridge.Error{Code: c, Message: "m " + string(c), RetryAfter: 2 * time.Second})
			if e.Code > -32000 || e.Code < -32768 {
				t.Fatalf("code %d is not a JSON-RPC error code", e.Code)
			}
			if _, ok := toRPC[c]; !ok {
				t.Errorf("no table entry")
			}
			for _, v := range []Version{V03, V10} {
				body := AppendError(nil, json.RawMessage(`1`), e, v)
				back := DecodeError(200, body)
				if back.Code != c || back.Message != "m "+string(c) || back.UpstreamCode != strconv.Itoa(e.Code) {
					t.Errorf("v%s: %s decodes as %+v", v, body, back)
				}
			}
		})
	}
	// A Go error never shows its text.
	e := RPCError(errors.New("open /secret: permission denied"))
	if e.Code != CodeInternalError || e.Message != "internal error" {
		t.Errorf("a Go error encodes as %+v", e)
	}
	// An A2A upstream's error keeps its code.
	e = RPCError(&bridge.Error{Code: bridge.CodeNotFound, Message: "Task not found: x", Dialect: Dialect, UpstreamCode: "-32001"})
	if e.Code != CodeTaskNotFound || e.Message != "Task not found: x" || e.BridgeCode != "" {
		t.Errorf("an A2A error passes through as %+v", e)
	}
}

// TestEncodeError: an error answered before any JSON-RPC request has an
// HTTP status for its code (500 for codes the table leaves out) and a
// JSON-RPC error body that reads back as the same code.
func TestEncodeError(t *testing.T) {
	for _, c := range bridge.Codes() {
		st, body := EncodeError(&bridge.Error{Code: c, Message: "m"})
		if want := wire.HTTPStatus(c); c != bridge.CodeCanceled && st != want || c == bridge.CodeCanceled && st != 500 {
			t.Errorf("%s: status %d", c, st)
		}
		if back := DecodeError(st, body); back.Code != c || back.Message != "m" {
			t.Errorf("%s: %s decodes as %+v", c, body, back)
		}
	}
}

// TestErrorTableWireToHub: every JSON-RPC code maps to a bridge code, and
// a code outside the table is an upstream fault.
func TestErrorTableWireToHub(t *testing.T) {
	for _, code := range allRPCCodes {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			want, ok := fromRPC[code]
			if !ok {
				t.Fatalf("no table entry")
			}
			body := []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":` + strconv.Itoa(code) + `,"message":"x"}}`)
			got := DecodeError(200, body)
			if got.Code != want || got.Dialect != Dialect || got.UpstreamCode != strconv.Itoa(code) || got.Status != 0 {
				t.Errorf("got %+v, want code %s", got, want)
			}
		})
	}
	if got := DecodeError(200, []byte(`{"error":{"code":-32050,"message":"x"}}`)); got.Code != bridge.CodeUpstream {
		t.Errorf("an unknown server error decodes as %s", got.Code)
	}
}

// TestDecodeErrorShapes: the shapes servers answer errors in.
func TestDecodeErrorShapes(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		code   bridge.Code
		msg    string
	}{
		{"a2a-js parse error, HTTP 400", 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload."}}`, bridge.CodeInvalid, "Invalid JSON payload."},
		{"a2a-go data", 200, `{"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"task not found","data":{"error":"x: task not found"}}}`, bridge.CodeNotFound, "task not found"},
		{"1.0 ErrorInfo data", 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"nope","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org"}]}}`, bridge.CodeConflict, "nope"},
		{"a bare error object", 500, `{"code":-32603,"message":"boom"}`, bridge.CodeUpstream, "boom"},
		{"1.0 REST error", 404, `{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[]}}`, bridge.CodeNotFound, "Task not found"},
		{"plain text 503", 503, `overloaded`, bridge.CodeUnavailable, "overloaded"},
		{"HTML 502", 502, `<html><body>Bad gateway</body></html>`, bridge.CodeUpstream, "upstream agent answered 502 Bad Gateway"},
		{"401", 401, ``, bridge.CodeUnauthenticated, "upstream agent answered 401 Unauthorized"},
		{"429", 429, `{}`, bridge.CodeRateLimited, "upstream agent answered 429 Too Many Requests"},
		{"a bridge's rate limit", 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"slow down","data":{"bridgeCode":"rate_limited","retryAfterSeconds":3}}}`, bridge.CodeRateLimited, "slow down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DecodeError(c.status, []byte(c.body))
			if got.Code != c.code || got.Message != c.msg || got.Dialect != Dialect {
				t.Errorf("got %+v, want %s %q", got, c.code, c.msg)
			}
		})
	}
	if got := DecodeError(200, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m","data":{"bridgeCode":"rate_limited","retryAfterSeconds":3}}}`)); got.RetryAfter != 3*time.Second {
		t.Errorf("retry after %v", got.RetryAfter)
	}
}
