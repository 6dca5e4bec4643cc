package openai

// This file fixes the API of the package; the implementations live in the
// other files of the package.

import (
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of this dialect in the hub.
const Dialect = "openai"

// DecodeRequest parses a Chat Completions request body (wire -> hub).
// Malformed input is a *bridge.Error with CodeInvalid naming the field.
// Unknown top-level fields go to Request.Extra (ExtraDialect "openai");
// unknown message fields to Message.Opaque.
//   func DecodeRequest(body []byte) (*bridge.Request, error)

// EncodeRequest renders req as a Chat Completions request body for an
// upstream (hub -> wire). It always asks for a stream with usage
// (stream: true, stream_options.include_usage: true): the bridge streams
// every upstream call. The second result lists what could not be carried.
//   func EncodeRequest(req *bridge.Request) (body []byte, dropped []string, err error)

// DecodeStream reads an upstream's SSE stream of chat.completion.chunk
// objects into events (upstream frames -> events). It closes nothing; the
// caller owns r.
//   func DecodeStream(r io.Reader) bridge.Stream

// NewStreamEncoder writes events as a client-facing SSE stream
// (events -> client frames).
//   func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder

// EncodeError and DecodeError are the two-way error table: a bridge error
// as an OpenAI status and error body, and an upstream's error response as a
// bridge error.
//   func EncodeError(err *bridge.Error) (status int, body []byte)
//   func DecodeError(status int, body []byte) *bridge.Error

// NewAccumulator folds events into one non-streaming chat.completion.
//   func NewAccumulator(opt StreamOptions) *Accumulator

// EncodeHistory renders a history page in the chatkit OpenAI shape.
//   func EncodeHistory(p *bridge.HistoryPage) ([]byte, error)

var (
	_ func([]byte) (*bridge.Request, error)           = DecodeRequest
	_ func(*bridge.Request) ([]byte, []string, error) = EncodeRequest
	_ func(io.Reader) bridge.Stream                   = DecodeStream
	_ func(io.Writer, StreamOptions) *StreamEncoder   = NewStreamEncoder
	_ func(*bridge.Error) (int, []byte)               = EncodeError
	_ func(int, []byte) *bridge.Error                 = DecodeError
	_ func(StreamOptions) *Accumulator                = NewAccumulator
	_ func(*bridge.HistoryPage) ([]byte, error)       = EncodeHistory
)
