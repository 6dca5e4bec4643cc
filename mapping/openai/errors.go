package openai

import (
	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/oaierror"
)

// EncodeError renders err as an OpenAI error response: the HTTP status and
// the body {"error":{"message","type","param","code"}}. Status, Type, Param
// and UpstreamCode that err carries from an upstream are passed through
// unchanged; the table fills in what is missing.
func EncodeError(err *bridge.Error) (status int, body []byte) { return oaierror.EncodeError(err) }

// DecodeError reads an upstream's error response (a non-2xx status and its
// body, or an in-stream error object with status 0) into a *bridge.Error
// keeping the upstream's Status, Type, Param and code.
func DecodeError(status int, body []byte) *bridge.Error { return oaierror.DecodeError(status, body) }
