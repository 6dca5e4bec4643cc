package wire

import (
	"encoding/json"
	"strconv"

	"github.com/bridge-dev/bridge/bridge"
)

// OpaqueDialect names the dialect of o in a note of what was dropped:
// "unknown" when there is no o or it names none.
func OpaqueDialect(o *bridge.Opaque) string {
	if o == nil || o.Dialect == "" {
		return "unknown"
	}
	return o.Dialect
}

// OpaquePart names an opaque part in a note of what was dropped: its
// dialect and, when its data says, the type that dialect gave it
// (`opaque openai part "hologram"`), so a part of a type no dialect knows
// is named, not merely counted.
func OpaquePart(o *bridge.Opaque) string {
	s := "opaque " + OpaqueDialect(o) + " part"
	if o == nil || Kind(o.Data) != '{' {
		return s
	}
	var v struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(o.Data, &v) == nil && v.Type != "" && len(v.Type) <= 64 {
		s += " " + strconv.Quote(v.Type)
	}
	return s
}
