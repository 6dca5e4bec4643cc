package a2a

// This file fixes the API of the package; the implementations live in the
// other files of the package.

import (
	"io"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
)

// Dialect is the name of this dialect in the hub.
const Dialect = "a2a"

// DecodeRequest parses a JSON-RPC POST body into requests, batches and
// notifications included (wire -> hub); DecodeSendParams reads the params
// of message/send and message/stream, and HubMessage turns their message
// into the hub's. A malformed body is a JSON-RPC *Error.
//   func DecodeRequest(body []byte) (reqs []Request, batch bool, err *Error)
//   func DecodeSendParams(raw json.RawMessage) (*SendParams, error)

// EncodeSend renders a message/send or message/stream request for an
// upstream agent (hub -> wire), in version v; OutboundMessage builds its
// message from the new input and names what A2A could not carry.
//   func EncodeSend(id string, v Version, m *a2asdk.Message, o SendOptions) []byte
//   func OutboundMessage(input, inline []bridge.Message, contextID string) (*a2asdk.Message, []string)

// DecodeStream reads an upstream agent's SSE stream into events with a
// decoder of profile p (upstream frames -> events). It closes nothing; the
// caller owns r.
//   func DecodeStream(r io.Reader, p Profile) bridge.Stream

// NewStreamEncoder writes events as a client-facing SSE stream of JSON-RPC
// responses (events -> client frames), folding them into tb's task.
//   func NewStreamEncoder(w io.Writer, tb *TaskBuilder, opt StreamOptions) *StreamEncoder

// EncodeError and DecodeError are the two-way error table: a bridge error
// as an HTTP status and a JSON-RPC error response (RPCError gives the error
// object a JSON-RPC response carries), and an upstream's error, in any of
// the shapes agents answer with, as a bridge error.
//   func EncodeError(err *bridge.Error) (status int, body []byte)
//   func DecodeError(status int, body []byte) *bridge.Error

// EncodeHistory renders a history page in the chatkit A2A shape.
//   func EncodeHistory(p *bridge.HistoryPage) ([]byte, error)

var (
	_ func([]byte) ([]Request, bool, *Error)                                       = DecodeRequest
	_ func(string, Version, *a2asdk.Message, SendOptions) []byte                   = EncodeSend
	_ func([]bridge.Message, []bridge.Message, string) (*a2asdk.Message, []string) = OutboundMessage
	_ func(io.Reader, Profile) bridge.Stream                                       = DecodeStream
	_ func(io.Writer, *TaskBuilder, StreamOptions) *StreamEncoder                  = NewStreamEncoder
	_ func(*bridge.Error) (int, []byte)                                            = EncodeError
	_ func(int, []byte) *bridge.Error                                              = DecodeError
	_ func(*bridge.HistoryPage) ([]byte, error)                                    = EncodeHistory
)
