// Package scrub takes credentials out of text: the upstream keys the
// bridge holds, and any value shaped like a credential header's. The
// outbound side scrubs what an upstream's errors quote (outbound.
// Credentials); the inspector scrubs the upstream wires it records
// (inbound/ui.Recorder). Both sides import it, so neither imports the
// other.
package scrub

import (
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces a credential in scrubbed text.
const Redacted = "[redacted]"

// minSecret is the shortest key Scrub replaces literally: a shorter one
// would mangle ordinary words, and is not a real key anyway.
const minSecret = 4

// Keys is a set of keys to keep out of text. It is immutable once made,
// so safe for concurrent use. A nil *Keys scrubs only what is shaped like
// a credential.
type Keys struct {
	secrets []string
}

// New returns the set of secrets (blank and shorter than four bytes are
// left out, repeats kept once).
func New(secrets ...string) *Keys {
	k := &Keys{}
	for _, s := range secrets {
		if s = strings.TrimSpace(s); len(s) >= minSecret && !slices.Contains(k.secrets, s) {
			k.secrets = append(k.secrets, s)
		}
	}
	// Longest first, so a key that contains another is replaced whole.
	slices.SortFunc(k.secrets, func(a, b string) int { return len(b) - len(a) })
	return k
}

var (
	// headerValue is a credential header or parameter and its value, in the
	// forms text quotes them: `Authorization: Bearer x`, `"x-api-key":"x"`,
	// `api_key=x`.
	headerValue = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key|access[-_]token)(\\?["']?\s*[:=]\s*\\?["']?)((?:bearer|basic|token)\s+)?[^\s"'\\,;&}\]]+`)
	// bearerToken is a bearer token quoted without its header name.
	bearerToken = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]{4,}`)
)

// Scrub returns s with every key of k, and every value shaped like an
// Authorization, X-Api-Key or api-key value, replaced by Redacted.
func (k *Keys) Scrub(s string) string {
	if s == "" {
		return s
	}
	if k != nil {
		for _, sec := range k.secrets {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	s = headerValue.ReplaceAllString(s, "${1}${2}${3}"+Redacted)
	return bearerToken.ReplaceAllString(s, "${1} "+Redacted)
}
