package responses

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// TestErrorTable: every code renders as an OpenAI error object whose
// status decodes back to the same code (the HTTP table is Chat's); the
// error of a failed response has a code from the SDK's enum.
func TestErrorTable(t *testing.T) {
	for _, c := range bridge.Codes() {
		status, body := EncodeError(&bridge.Error{Code: c, Message: "m"})
		var env struct {
			Error struct{ Message, Type string } `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Error.Type == "" || env.Error.Message != "m" {
			t.Errorf("%s: body %s", c, body)
		}
		back := DecodeError(status, body)
		// An upstream's own 500 is, to the bridge, a bad gateway.
		if back.Code != c && !(c == bridge.CodeInternal && back.Code == bridge.CodeUpstream) {
			t.Errorf("%s: status %d decodes to %s", c, status, back.Code)
		}
		if rc := responseErrorCode(&bridge.Error{Code: c}); rc == "" {
			t.Errorf("%s: no response error code", c)
		}
	}
}

// TestDecodeErrorShapes: an upstream's error response keeps its status,
// type, param and code (dialect openai, which the Chat encoder passes
// through); a flat error event is classified by its code.
func TestDecodeErrorShapes(t *testing.T) {
	e := DecodeError(http.StatusNotFound, []byte(`{"error":{"message":"Previous response with id 'resp_x' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`))
	if e.Code != bridge.CodeNotFound || e.Status != 404 || e.Param != "previous_response_id" || e.UpstreamCode != "previous_response_not_found" || e.Dialect != "openai" {
		t.Errorf("404: %+v", e)
	}
	e = DecodeError(0, []byte(`{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":3}`))
	if e.Code != bridge.CodeRateLimited || e.Type != "" || e.Message != "slow down" {
		t.Errorf("error event: %+v", e)
	}
	e = DecodeError(0, []byte(`{"type":"error","code":"invalid_prompt","message":"bad"}`))
	if e.Code != bridge.CodeInvalid {
		t.Errorf("invalid_prompt: %+v", e)
	}
	e = decodeResponseError(json.RawMessage(`{"code":"rate_limit_exceeded","message":"later"}`))
	if e.Code != bridge.CodeRateLimited || e.Status != 429 || e.Message != "later" {
		t.Errorf("response error: %+v", e)
	}
	if e := decodeResponseError(nil); e.Code != bridge.CodeUpstream || e.Message == "" {
		t.Errorf("null response error: %+v", e)
	}
	// A Responses error passes through to a client of this dialect.
	status, body := EncodeError(&bridge.Error{Code: bridge.CodeNotFound, Dialect: Dialect, Status: 404, Type: "invalid_request_error", Param: "p", UpstreamCode: "c", Message: "m"})
	if status != 404 || string(body) != `{"error":{"message":"m","type":"invalid_request_error","param":"p","code":"c"}}` {
		t.Errorf("pass-through: %d %s", status, body)
	}
}
