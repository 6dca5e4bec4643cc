package anthropic

import "github.com/bridge-dev/bridge/mapping/internal/wire"

// object is a decoded JSON object whose values are still raw.
type object = wire.Object
