package adk

// This file fixes the API of the package; the implementations live in the
// other files of the package.

import (
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of this dialect in the hub.
const Dialect = "adk"

// DecodeRequest parses a /run or /run_sse body (wire -> hub), in camelCase
// or snake_case; HubMessages turns its newMessage into the hub's.
//   func DecodeRequest(body []byte) (*RunRequest, error)

// EncodeRequest renders req's new input as a streaming run_sse body for an
// upstream session (hub -> wire). The second result lists what could not be
// carried. NewMessage, SplitInput and TranscriptKey are its pieces, for a
// client that picks the upstream session from the transcript.
//   func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error)

// DecodeStream reads an upstream's run_sse stream into events (upstream
// frames -> events); a StreamDecoder reads a resumed run across
// connections. It closes nothing; the caller owns r.
//   func DecodeStream(r io.Reader) bridge.Stream

// NewStreamEncoder turns events into ADK events for a client (events ->
// client frames); AppendSSE writes one as an SSE frame.
//   func NewStreamEncoder(opt StreamOptions) *StreamEncoder

// EncodeError and DecodeError are the two-way error table.
//   func EncodeError(err *bridge.Error) (status int, body []byte)
//   func DecodeError(status int, body []byte) *bridge.Error

var (
	_ func([]byte) (*RunRequest, error)                              = DecodeRequest
	_ func(*bridge.Request, EncodeOptions) ([]byte, []string, error) = EncodeRequest
	_ func(io.Reader) bridge.Stream                                  = DecodeStream
	_ func(StreamOptions) *StreamEncoder                             = NewStreamEncoder
	_ func(*bridge.Error) (int, []byte)                              = EncodeError
	_ func(int, []byte) *bridge.Error                                = DecodeError
)
