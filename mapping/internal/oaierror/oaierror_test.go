package oaierror

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
)

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// TestErrorTable covers every code both ways: EncodeError gives the
// table's status, type and code; DecodeError of that response gives the
// code back. The one exception: an upstream's 500 is, to the bridge, an
// upstream fault, so internal comes back as upstream.
func TestErrorTable(t *testing.T) {
	tests := []struct {
		code   bridge.Code
		status int
		typ    string
		wire   string
		back   bridge.Code
	}{
		{bridge.CodeInvalid, 400, "invalid_request_error", "", bridge.CodeInvalid},
		{bridge.CodeUnauthenticated, 401, "authentication_error", "", bridge.CodeUnauthenticated},
		{bridge.CodePermissionDenied, 403, "permission_error", "", bridge.CodePermissionDenied},
		{bridge.CodeNotFound, 404, "not_found_error", "", bridge.CodeNotFound},
		{bridge.CodeConflict, 409, "invalid_request_error", "conflict", bridge.CodeConflict},
		{bridge.CodeTooLarge, 413, "invalid_request_error", "", bridge.CodeTooLarge},
		{bridge.CodeRateLimited, 429, "rate_limit_error", "", bridge.CodeRateLimited},
		{bridge.CodeUnsupported, 400, "invalid_request_error", "unsupported", bridge.CodeUnsupported},
		{bridge.CodeUpstream, 502, "server_error", "", bridge.CodeUpstream},
		{bridge.CodeUnavailable, 503, "service_unavailable_error", "", bridge.CodeUnavailable},
		{bridge.CodeTimeout, 504, "server_error", "timeout", bridge.CodeTimeout},
		{bridge.CodeCanceled, 499, "invalid_request_error", "cancelled", bridge.CodeCanceled},
		{bridge.CodeInternal, 500, "server_error", "", bridge.CodeUpstream},
	}
	covered := map[bridge.Code]bool{}
	for _, tt := range tests {
		covered[tt.code] = true
		t.Run(string(tt.code), func(t *testing.T) {
			status, body := EncodeError(bridge.Errorf(tt.code, "went <wrong> \"here\""))
			if status != tt.status {
				t.Errorf("status = %d, want %d", status, tt.status)
			}
			var w wireError
			if err := json.Unmarshal(body, &w); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if w.Error.Type != tt.typ || w.Error.Message != `went <wrong> "here"` || w.Error.Param != nil {
				t.Errorf("body = %s", body)
			}
			if (w.Error.Code == nil) != (tt.wire == "") || (w.Error.Code != nil && *w.Error.Code != tt.wire) {
				t.Errorf("code = %v, want %q", w.Error.Code, tt.wire)
			}
			for _, k := range []string{`"message":`, `"type":`, `"param":`, `"code":`} {
				if !strings.Contains(string(body), k) {
					t.Errorf("body lacks %s: %s", k, body)
				}
			}

			back := DecodeError(status, body)
			want := &bridge.Error{Code: tt.back, Message: `went <wrong> "here"`, Dialect: Dialect, Status: tt.status, Type: tt.typ, UpstreamCode: tt.wire}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("DecodeError (-want +got):\n%s", diff)
			}
			// Status 0 (inside a stream): the type and code decide.
			if got := DecodeError(0, body).Code; got != tt.back && !(tt.code == bridge.CodeInvalid || tt.code == bridge.CodeTooLarge) {
				t.Errorf("in-stream code = %s, want %s", got, tt.back)
			}
		})
	}
	for _, c := range bridge.Codes() {
		if !covered[c] {
			t.Errorf("code %s not in the test table", c)
		}
		if rowOf(c).code != c {
			t.Errorf("code %s not in errorTable", c)
		}
	}
}

// TestErrorPassthrough: an upstream error keeps its status, type, param
// and code on its way to an OpenAI client.
func TestErrorPassthrough(t *testing.T) {
	up := []byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":"key","code":"invalid_api_key"}}`)
	e := DecodeError(401, up)
	want := &bridge.Error{Code: bridge.CodeUnauthenticated, Message: "Incorrect API key provided", Dialect: Dialect, Status: 401,
		Type: "invalid_request_error", Param: "key", UpstreamCode: "invalid_api_key"}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	status, body := EncodeError(e)
	if status != 401 {
		t.Errorf("status = %d", status)
	}
	var a, b any
	_ = json.Unmarshal(up, &a)
	_ = json.Unmarshal(body, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("body (-upstream +client):\n%s", diff)
	}
}

func TestDecodeError(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	tests := []struct {
		name   string
		status int
		body   string
		want   bridge.Error
	}{
		{"numeric code", 400, `{"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}}`,
			bridge.Error{Code: bridge.CodeInvalid, Message: "bad", Status: 400, Type: "BadRequestError", UpstreamCode: "400"}},
		{"null fields", 429, `{"error":{"message":"slow","type":null,"param":null,"code":null}}`,
			bridge.Error{Code: bridge.CodeRateLimited, Message: "slow", Status: 429}},
		{"422", 422, `{"error":{"message":"unprocessable"}}`,
			bridge.Error{Code: bridge.CodeInvalid, Message: "unprocessable", Status: 422}},
		{"418", 418, `{"error":{"message":"teapot"}}`,
			bridge.Error{Code: bridge.CodeInvalid, Message: "teapot", Status: 418}},
		{"408", 408, ``, bridge.Error{Code: bridge.CodeTimeout, Message: "upstream returned status 408 (Request Timeout)", Status: 408}},
		{"500", 500, `{"error":{"message":"oops","type":"server_error"}}`,
			bridge.Error{Code: bridge.CodeUpstream, Message: "oops", Status: 500, Type: "server_error"}},
		{"529", 529, `{"error":{"message":"overloaded"}}`,
			bridge.Error{Code: bridge.CodeUpstream, Message: "overloaded", Status: 529}},
		{"html", 502, "<html><body>Bad Gateway</body></html>\n",
			bridge.Error{Code: bridge.CodeUpstream, Message: "<html><body>Bad Gateway</body></html>", Status: 502}},
		{"long text", 503, long, bridge.Error{Code: bridge.CodeUnavailable, Message: long[:512], Status: 503}},
		{"error string", 400, `{"error":"plain words"}`, bridge.Error{Code: bridge.CodeInvalid, Message: "plain words", Status: 400}},
		{"bare object", 404, `{"message":"no such model","type":"not_found_error"}`,
			bridge.Error{Code: bridge.CodeNotFound, Message: "no such model", Status: 404, Type: "not_found_error"}},
		{"empty json", 500, `{}`, bridge.Error{Code: bridge.CodeUpstream, Message: "upstream returned status 500 (Internal Server Error)", Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeError(tt.status, []byte(tt.body))
			tt.want.Dialect = Dialect
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(got.Message) > 4*maxErrorText {
				t.Errorf("message of %d bytes", len(got.Message))
			}
		})
	}
	// A cut never splits a character.
	if m := DecodeError(500, []byte("x"+long)).Message; len(m) != 511 {
		t.Errorf("truncated to %d bytes, want 511", len(m))
	}
}

func TestEncodeErrorNil(t *testing.T) {
	status, body := EncodeError(nil)
	if status != 500 || !strings.Contains(string(body), `"server_error"`) {
		t.Errorf("EncodeError(nil) = %d %s", status, body)
	}
}

// TestEncodeErrorOfAnotherDialect: an upstream error of another dialect
// reaches an OpenAI client with OpenAI's status and type for its code, not
// the other dialect's (an Anthropic 529 overloaded_error is a 503 here).
func TestEncodeErrorOfAnotherDialect(t *testing.T) {
	status, body := EncodeError(&bridge.Error{Code: bridge.CodeUnavailable, Message: "Overloaded",
		Dialect: "anthropic", Status: 529, Type: "overloaded_error"})
	if status != 503 {
		t.Errorf("status = %d, want 503", status)
	}
	want := `{"error":{"message":"Overloaded","type":"service_unavailable_error","param":null,"code":null}}`
	if string(body) != want {
		t.Errorf("body = %s\nwant %s", body, want)
	}
}
