package anthropic

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// TestErrorTableCoversEveryCode: every code has its own row, renders the
// Anthropic error shape, and an upstream error of that status and type
// decodes back to the code (codes Anthropic shares a type with aside).
func TestErrorTableCoversEveryCode(t *testing.T) {
	want := map[bridge.Code]struct {
		status int
		typ    string
		back   bridge.Code
	}{
		bridge.CodeInvalid:          {400, "invalid_request_error", bridge.CodeInvalid},
		bridge.CodeUnauthenticated:  {401, "authentication_error", bridge.CodeUnauthenticated},
		bridge.CodePermissionDenied: {403, "permission_error", bridge.CodePermissionDenied},
		bridge.CodeNotFound:         {404, "not_found_error", bridge.CodeNotFound},
		bridge.CodeConflict:         {409, "conflict_error", bridge.CodeConflict},
		bridge.CodeTooLarge:         {413, "request_too_large", bridge.CodeTooLarge},
		bridge.CodeRateLimited:      {429, "rate_limit_error", bridge.CodeRateLimited},
		bridge.CodeUnsupported:      {400, "invalid_request_error", bridge.CodeInvalid},
		bridge.CodeUpstream:         {502, "api_error", bridge.CodeUpstream},
		bridge.CodeUnavailable:      {529, "overloaded_error", bridge.CodeUnavailable},
		bridge.CodeTimeout:          {504, "timeout_error", bridge.CodeTimeout},
		bridge.CodeCanceled:         {499, "invalid_request_error", bridge.CodeCanceled},
		bridge.CodeInternal:         {500, "api_error", bridge.CodeUpstream},
	}
	if len(errorTable) != len(bridge.Codes()) {
		t.Errorf("the table has %d rows for %d codes", len(errorTable), len(bridge.Codes()))
	}
	for _, c := range bridge.Codes() {
		t.Run(string(c), func(t *testing.T) {
			w, ok := want[c]
			if !ok {
				t.Fatalf("no expectation for %s", c)
			}
			status, body := EncodeError(&bridge.Error{Code: c, Message: "m <&>"})
			var env struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatal(err)
			}
			if status != w.status || env.Type != "error" || env.Error.Type != w.typ || env.Error.Message != "m <&>" {
				t.Errorf("EncodeError = %d %s, want %d %s", status, body, w.status, w.typ)
			}
			back := DecodeError(status, body)
			if back.Code != w.back || back.Type != w.typ || back.Status != status || back.Dialect != Dialect || back.Message != "m <&>" {
				t.Errorf("DecodeError(%d, %s) = %+v, want code %s", status, body, back, w.back)
			}
			// In a stream there is no status: the type decides.
			if s := DecodeError(0, body); s.Code != classifyType(w.typ) {
				t.Errorf("in-stream DecodeError = %s", s.Code)
			}
		})
	}
}

func TestDecodeError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		code   bridge.Code
		typ    string
		msg    string
	}{
		{"overloaded in stream", 0, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, bridge.CodeUnavailable, "overloaded_error", "Overloaded"},
		{"529", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, bridge.CodeUnavailable, "overloaded_error", "Overloaded"},
		{"503 no body", 503, ``, bridge.CodeUnavailable, "", "upstream returned status 503 (Service Unavailable)"},
		{"html 502", 502, `<html>bad gateway</html>`, bridge.CodeUpstream, "", "<html>bad gateway</html>"},
		{"bare object", 400, `{"type":"invalid_request_error","message":"max_tokens: Field required"}`, bridge.CodeInvalid, "invalid_request_error", "max_tokens: Field required"},
		{"billing 402", 402, `{"type":"error","error":{"type":"billing_error","message":"no credit"}}`, bridge.CodePermissionDenied, "billing_error", "no credit"},
		{"string error", 400, `{"error":"nope"}`, bridge.CodeInvalid, "", "nope"},
		{"deep", 400, string(make([]byte, 0)) + `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, bridge.CodeInvalid, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := DecodeError(tt.status, []byte(tt.body))
			if e.Code != tt.code || e.Type != tt.typ || (tt.msg != "" && e.Message != tt.msg) || e.Message == "" {
				t.Errorf("DecodeError = %+v, want code %s type %q message %q", e, tt.code, tt.typ, tt.msg)
			}
		})
	}
}

// TestEncodeErrorOtherDialect: another dialect's status and type mean
// nothing to an Anthropic client; the code decides (an OpenAI 503 is
// overloaded_error 529). Anthropic's own pass through.
func TestEncodeErrorOtherDialect(t *testing.T) {
	status, body := EncodeError(&bridge.Error{Code: bridge.CodeUnavailable, Message: "busy", Dialect: "openai", Status: 503, Type: "server_error"})
	if status != StatusOverloaded || string(body) != `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}` {
		t.Errorf("openai 503: %d %s", status, body)
	}
	status, body = EncodeError(&bridge.Error{Code: bridge.CodeInvalid, Message: "x", Dialect: Dialect, Status: http.StatusUnprocessableEntity, Type: "invalid_request_error"})
	if status != 422 || string(body) != `{"type":"error","error":{"type":"invalid_request_error","message":"x"}}` {
		t.Errorf("anthropic 422: %d %s", status, body)
	}
	status, _ = EncodeError(nil)
	if status != 500 {
		t.Errorf("nil: %d", status)
	}
}
