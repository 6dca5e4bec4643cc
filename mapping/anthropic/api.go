package anthropic

// This file fixes the API of the package; the implementations live in the
// other files of the package.

import (
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of this dialect in the hub.
const Dialect = "anthropic"

// DecodeRequest parses a Messages request body (wire -> hub); max_tokens is
// required. DecodeCountTokens parses a count_tokens body.
//   func DecodeRequest(body []byte) (*bridge.Request, error)
//   func DecodeCountTokens(body []byte) (*bridge.Request, error)

// EncodeRequest renders req as a streaming Messages request body for an
// upstream (hub -> wire); max_tokens comes from the request or opt.
// EncodeCountTokens renders a count_tokens body. The second result lists
// what could not be carried.
//   func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error)
//   func EncodeCountTokens(req *bridge.Request) (body []byte, dropped []string, err error)

// DecodeStream reads an upstream's named-event SSE stream into events
// (upstream frames -> events). It closes nothing; the caller owns r.
//   func DecodeStream(r io.Reader) bridge.Stream

// NewStreamEncoder writes events as a client-facing SSE stream
// (events -> client frames); NewAccumulator folds them into one message.
//   func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder
//   func NewAccumulator(opt StreamOptions) *Accumulator

// EncodeError and DecodeError are the two-way error table.
//   func EncodeError(err *bridge.Error) (status int, body []byte)
//   func DecodeError(status int, body []byte) *bridge.Error

// EstimateInputTokens answers count_tokens without a tokenizer.
//   func EstimateInputTokens(req *bridge.Request) int64

var (
	_ func([]byte) (*bridge.Request, error)                          = DecodeRequest
	_ func([]byte) (*bridge.Request, error)                          = DecodeCountTokens
	_ func(*bridge.Request, EncodeOptions) ([]byte, []string, error) = EncodeRequest
	_ func(*bridge.Request) ([]byte, []string, error)                = EncodeCountTokens
	_ func(io.Reader) bridge.Stream                                  = DecodeStream
	_ func(io.Writer, StreamOptions) *StreamEncoder                  = NewStreamEncoder
	_ func(StreamOptions) *Accumulator                               = NewAccumulator
	_ func(*bridge.Error) (int, []byte)                              = EncodeError
	_ func(int, []byte) *bridge.Error                                = DecodeError
	_ func(*bridge.Request) int64                                    = EstimateInputTokens
)
