package responses

import (
	"encoding/json"
	"net/http"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/oaierror"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// The Responses API answers errors with the OpenAI error object Chat
// Completions uses ({"error":{message,type,param,code}}, the same statuses),
// so the HTTP half of the table is mapping/openai's: an error this package
// decodes names the dialect "openai", whose clients get its status, type,
// param and code back unchanged. What only Responses has is the error of a
// failed response (response.error, {code, message}, with its own code
// enum) and the in-stream error event.

// EncodeError renders err as an OpenAI error response: the HTTP status and
// {"error":{"message","type","param","code"}}. Status, Type, Param and
// UpstreamCode err carries from an OpenAI or Responses upstream pass through.
func EncodeError(err *bridge.Error) (status int, body []byte) {
	if err != nil && err.Dialect == Dialect {
		e := *err
		e.Dialect = oaierror.Dialect
		err = &e
	}
	return oaierror.EncodeError(err)
}

// DecodeError reads an upstream's error response (a non-2xx status and its
// body) into a *bridge.Error keeping the upstream's Status, Type, Param and
// code; with status 0 (an in-stream error event) the code comes from the
// error's code or type. A type of "error" (the event's own type, which a
// flat error event carries beside its fields) is not an error type.
func DecodeError(status int, body []byte) *bridge.Error {
	e := oaierror.DecodeError(status, body)
	if e.Type != "error" {
		return e
	}
	// Classify again without the event's type.
	w := wire.NewObj()
	w.Str("message", e.Message)
	if e.Param != "" {
		w.Str("param", e.Param)
	}
	if e.UpstreamCode != "" {
		w.Str("code", e.UpstreamCode)
	}
	env := wire.NewObj()
	env.Raw("error", w.End())
	again := oaierror.DecodeError(status, env.End())
	if status == 0 && again.Code == bridge.CodeUpstream {
		again.Code = codeOfResponseError(again.UpstreamCode)
	}
	return again
}

// responseErrors is the two-way table between bridge codes and the codes
// of a failed response's error object (the SDK's ResponseError code enum).
// The first row of a bridge code is the one it is rendered as.
var responseErrors = []struct {
	code bridge.Code
	wire string
}{
	{bridge.CodeInvalid, "invalid_prompt"},
	{bridge.CodeRateLimited, "rate_limit_exceeded"},
	{bridge.CodeTimeout, "vector_store_timeout"},
	{bridge.CodeUpstream, "server_error"},
	{bridge.CodeInternal, "server_error"},
	{bridge.CodeUnavailable, "server_error"},
}

// responseErrorCode is the code of a failed response's error for err: the
// upstream's own when it is one of the enum's, else the table's.
func responseErrorCode(err *bridge.Error) string {
	if err == nil {
		return "server_error"
	}
	for _, r := range responseErrors {
		if r.wire == err.UpstreamCode {
			return r.wire
		}
	}
	if isImageCode(err.UpstreamCode) {
		return err.UpstreamCode
	}
	for _, r := range responseErrors {
		if r.code == err.Code {
			if r.code == bridge.CodeTimeout {
				break // vector_store_timeout names one cause only
			}
			return r.wire
		}
	}
	return "server_error"
}

// codeOfResponseError is the bridge code of a failed response's error code.
func codeOfResponseError(c string) bridge.Code {
	for _, r := range responseErrors {
		if r.wire == c {
			return r.code
		}
	}
	if isImageCode(c) {
		return bridge.CodeInvalid
	}
	return bridge.CodeUpstream
}

func isImageCode(c string) bool {
	switch c {
	case "invalid_image", "invalid_image_format", "invalid_base64_image", "invalid_image_url",
		"image_too_large", "image_too_small", "image_parse_error", "image_content_policy_violation",
		"invalid_image_mode", "image_file_too_large", "unsupported_image_media_type", "empty_image_file",
		"failed_to_download_image", "image_file_not_found", "data_residency_mismatch", "bio_policy",
		"misalignment_policy_violation":
		return true
	}
	return false
}

// decodeResponseError reads the error of a failed response ({code,
// message}, or null) into a bridge error.
func decodeResponseError(raw json.RawMessage) *bridge.Error {
	e := &bridge.Error{Code: bridge.CodeUpstream, Message: "the upstream response failed", Dialect: oaierror.Dialect}
	var o struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if wire.Kind(raw) == '{' && json.Unmarshal(raw, &o) == nil {
		if o.Message != "" {
			e.Message = wire.Truncate(o.Message, 2048)
		}
		if wire.Kind(o.Code) == '"' {
			e.UpstreamCode, _ = wire.AsString(o.Code, "")
			e.Code = codeOfResponseError(e.UpstreamCode)
		}
	}
	if e.Code == bridge.CodeRateLimited {
		e.Status = http.StatusTooManyRequests
	}
	return e
}

// appendErrorFields appends the members of an error event's payload:
// type, code, message and param, as an error response would carry them.
func appendErrorFields(w *wire.ObjWriter, err *bridge.Error) {
	_, body := EncodeError(err)
	var env struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	w.Str("type", env.Error.Type)
	w.Raw("code", orNull(env.Error.Code))
	w.Str("message", env.Error.Message)
	w.Raw("param", orNull(env.Error.Param))
}

func orNull(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	return raw
}
