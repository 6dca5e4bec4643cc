package wire

import "github.com/bridge-dev/bridge/bridge"

// OpaqueDialect names the dialect of o in a note of what was dropped:
// "unknown" when there is no o or it names none.
func OpaqueDialect(o *bridge.Opaque) string {
	if o == nil || o.Dialect == "" {
		return "unknown"
	}
	return o.Dialect
}
