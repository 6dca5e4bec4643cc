package outbound

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashToolCallID is the id a ToolCallMinter gives a tool call whose own id
// its upstream would refuse: prefix and 24 hex digits of the id's SHA-256,
// so the same id always mints the same one (the engine keeps the pair, and
// a retry or a fallback mints it again alike) and two ids collide only as
// SHA-256 does.
func HashToolCallID(prefix, local string) string {
	h := sha256.Sum256([]byte(local))
	return prefix + hex.EncodeToString(h[:12])
}

// BoundToolCallID is local when an upstream that takes ids of at most max
// bytes accepts it, and otherwise (empty, or longer) "call_" and its hash
// (HashToolCallID): the ToolCallMinter of the OpenAI APIs, which refuse a
// longer id with a 400 (string_above_max_length).
func BoundToolCallID(local string, max int) string {
	if local != "" && len(local) <= max {
		return local
	}
	return HashToolCallID("call_", local)
}
