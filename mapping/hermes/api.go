package hermes

// This file fixes the API of the package; the implementations live in the
// other files of the package.

import (
	"io"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of this dialect in the hub.
const Dialect = "hermes"

// DecodeRequest parses a session chat body (wire -> hub). Malformed input
// is a *bridge.Error with CodeInvalid naming the field.
//   func DecodeRequest(body []byte) (*TurnRequest, error)

// EncodeRequest renders req as a session chat body for an upstream (hub ->
// wire), as far as the server takes it. The second result lists what could
// not be carried.
//   func EncodeRequest(req *bridge.Request, opt EncodeOptions) (body []byte, dropped []string, err error)

// DecodeStream reads an upstream's session stream into events (upstream
// frames -> events); a StreamDecoder reads a resumed stream on. It closes
// nothing; the caller owns r.
//   func DecodeStream(r io.Reader) bridge.Stream

// NewStreamEncoder writes events as a client-facing session stream
// (events -> client frames).
//   func NewStreamEncoder(w io.Writer, opt StreamOptions) *StreamEncoder

// EncodeError and DecodeError are the two-way error table.
//   func EncodeError(err *bridge.Error) (status int, body []byte)
//   func DecodeError(status int, body []byte) *bridge.Error

// EncodeHistory renders a history page in the Hermes or chatkit Hermes
// shape.
//   func EncodeHistory(p *bridge.HistoryPage, opt HistoryOptions) ([]byte, error)

var (
	_ func([]byte) (*TurnRequest, error)                             = DecodeRequest
	_ func(*bridge.Request, EncodeOptions) ([]byte, []string, error) = EncodeRequest
	_ func(io.Reader) bridge.Stream                                  = DecodeStream
	_ func(io.Writer, StreamOptions) *StreamEncoder                  = NewStreamEncoder
	_ func(*bridge.Error) (int, []byte)                              = EncodeError
	_ func(int, []byte) *bridge.Error                                = DecodeError
	_ func(*bridge.HistoryPage, HistoryOptions) ([]byte, error)      = EncodeHistory
)
