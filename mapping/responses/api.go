package responses

// This file fixes the API of the package; the implementations live in the
// other files of the package.

import (
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of this dialect in the hub.
const Dialect = "responses"

// DecodeRequest parses a create-response body (wire -> hub). Malformed
// input is a *bridge.Error with CodeInvalid naming the field.
//   func DecodeRequest(body []byte) (*Request, error)

// EncodeRequest renders req as a streaming create-response body for an
// upstream (hub -> wire). The second result lists what could not be carried.
//   func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error)

// DecodeStream reads an upstream's typed event stream into events
// (upstream frames -> events). It closes nothing; the caller owns r.
//   func DecodeStream(r io.Reader) bridge.Stream

// NewStreamEncoder writes events as the typed event stream a client reads
// (events -> client frames); NewAccumulator folds them into one Response.
//   func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder
//   func NewAccumulator(opt StreamOptions) *Accumulator

// EncodeError and DecodeError are the two-way error table.
//   func EncodeError(err *bridge.Error) (status int, body []byte)
//   func DecodeError(status int, body []byte) *bridge.Error

var (
	_ func([]byte) (*Request, error)                                 = DecodeRequest
	_ func(*bridge.Request, EncodeOptions) ([]byte, []string, error) = EncodeRequest
	_ func(io.Reader) bridge.Stream                                  = DecodeStream
	_ func(io.Writer, StreamOptions) *StreamEncoder                  = NewStreamEncoder
	_ func(StreamOptions) *Accumulator                               = NewAccumulator
	_ func(*bridge.Error) (int, []byte)                              = EncodeError
	_ func(int, []byte) *bridge.Error                                = DecodeError
)
