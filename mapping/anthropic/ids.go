package anthropic

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Anthropic accepts only tool_use ids that match ^[a-zA-Z0-9_-]+$, and a
// client sends the ids it was shown back in tool_use and tool_result blocks
// (Claude Code, the SDKs' tool runners; a client that moves a transcript to
// the real API). An upstream of another dialect mints ids that need not
// match (an A2A or Hermes id with dots or colons), so a client is shown such
// an id escaped: escapedToolID and the base64url (unpadded) of the id,
// whose alphabet is exactly the allowed one. The escape is undone where the
// client's request is decoded, so the engine and the upstream see the id the
// upstream minted, with no state kept. An id that already matches is shown
// as it is, unless it starts with the prefix, which is escaped too so that
// the mapping stays one-to-one.
const escapedToolID = "toolu_x_"

// WireToolID is the id an Anthropic client is shown for the tool call whose
// id is local.
func WireToolID(local string) string {
	if ValidToolID(local) && !strings.HasPrefix(local, escapedToolID) {
		return local
	}
	return escapedToolID + base64.RawURLEncoding.EncodeToString([]byte(local))
}

// LocalToolID undoes WireToolID for an id a client sent. An id that is not
// an escape (a client's own that only looks like one: not base64url, or
// not text once decoded) is returned as it is.
func LocalToolID(id string) string {
	rest, ok := strings.CutPrefix(id, escapedToolID)
	if !ok {
		return id
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || !utf8.Valid(b) {
		return id
	}
	return string(b)
}

// ValidToolID reports whether id matches ^[a-zA-Z0-9_-]+$.
func ValidToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
