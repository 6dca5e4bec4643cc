package a2a

import (
	"io"

	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// MaxEvent bounds one SSE event an upstream agent sends (the a2a-v1
// client's cap).
const MaxEvent = 4 << 20

// SSEEvent is one dispatched server-sent event; its ID is the last id:
// seen (SSE ids persist across events).
type SSEEvent = wire.SSEEvent

// SSEReader reads an upstream agent's server-sent events. It is not safe
// for concurrent use.
type SSEReader = wire.SSEReader

// NewSSEReader reads r: the SSE spec's last event id, events up to
// MaxEvent, errors that name the upstream agent.
func NewSSEReader(r io.Reader) *SSEReader {
	return wire.NewSSEReaderOptions(r, wire.SSEOptions{MaxEvent: MaxEvent, KeepID: true, Who: "upstream agent"})
}
