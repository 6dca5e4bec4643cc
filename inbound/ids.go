package inbound

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/bridge"
)

// MaxIDLen is the longest id a client may give (a session, a client run
// id, an idempotency key, an A2A contextId, a path segment).
const MaxIDLen = 256

// ValidID reports whether id may be a client-given id: at most MaxIDLen
// bytes of UTF-8, every character printable (no control characters, no
// NUL, CR or LF that could come back in a header or a log line). The empty
// string is "not given" and is valid.
func ValidID(id string) bool {
	if len(id) > MaxIDLen || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// CheckID is ValidID as the bridge error a client gets (CodeInvalid,
// naming what the id is).
func CheckID(what, id string) error {
	if ValidID(id) {
		return nil
	}
	return bridge.Errorf(bridge.CodeInvalid, "%s: at most %d bytes of printable characters, no control characters", what, MaxIDLen)
}

// idHeaders are the request headers that carry client-given ids.
var idHeaders = []string{HeaderSessionID, HeaderClientRunID, "Idempotency-Key", "Last-Event-ID", "X-Replace-From"}

// CheckIDs wraps a dialect's handler h: a request whose path wildcards
// (the route pattern's {name} segments) or id headers hold an id ValidID
// refuses gets a 400 in the dialect's shape (writeError) before h runs.
// Ids inside a body are each dialect's to check (CheckID).
func CheckIDs(writeError func(http.ResponseWriter, error), h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range wildcards(r.Pattern) {
			if err := CheckID(name, r.PathValue(name)); err != nil {
				writeError(w, err)
				return
			}
		}
		for _, name := range idHeaders {
			if err := CheckID(name, r.Header.Get(name)); err != nil {
				writeError(w, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// wildcards lists the wildcard names of a ServeMux pattern
// ("POST /v1/runs/{run}/steer": run).
func wildcards(pattern string) []string {
	var out []string
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			return out
		}
		name := strings.TrimSuffix(pattern[i+1:i+j], "...")
		if name != "$" {
			out = append(out, name)
		}
		pattern = pattern[i+j+1:]
	}
}
