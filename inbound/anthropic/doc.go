// Package anthropic serves the Anthropic Messages API over whatever
// upstream the engine routes the model to: POST /v1/messages (stream and
// non-stream) and POST /v1/messages/count_tokens.
//
// Requests authenticate with x-api-key or Authorization: Bearer (the
// Anthropic SDKs send either; inbound.Keys checks them) and may send any
// anthropic-version. max_tokens is required, as the real API requires it.
// X-Session-Id joins a session (and makes the run outlive a dropped
// connection), X-Client-Run-Id names the client's own run id; the answer
// names its run and session in X-Run-Id and X-Session-Id, and what the
// translations could not carry in X-Bridge-Dropped (a trailer on streams).
//
// A stream holds its first frame until the upstream has answered, so a
// failure before the upstream's first byte is an ordinary error response
// with Anthropic's status and type (overloaded_error 529 for an
// unavailable upstream). After that every frame carries the event id of
// the event it renders (SSE id:, which the SDKs ignore and the run API's
// resume uses), a ping follows every PingInterval of silence, and a
// failure is an `error` event.
package anthropic
