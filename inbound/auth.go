package inbound

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
)

// Key is one inbound API key: the principal it authenticates, and the
// dialects it may use (none: all). An admin key may also read every
// principal's runs in the inspector (inbound/ui).
type Key struct {
	Principal string
	Dialects  []string
	Admin     bool
	hash      [sha256.Size]byte
}

// Keys is the set of inbound keys. Only hashes are kept; a presented key is
// hashed and compared with every known hash in constant time. The zero
// value (no keys) lets every request in as the principal "".
type Keys struct {
	keys []Key
}

// AddKey adds a plain key (from BRIDGE_API_KEY or BRIDGE_API_KEYS).
func (k *Keys) AddKey(principal, key string, dialects ...string) {
	k.keys = append(k.keys, Key{Principal: principal, Dialects: dialects, hash: sha256.Sum256([]byte(key))})
}

// AddAdminKey adds a plain admin key (BRIDGE_ADMIN_KEY).
func (k *Keys) AddAdminKey(principal, key string) {
	k.keys = append(k.keys, Key{Principal: principal, Admin: true, hash: sha256.Sum256([]byte(key))})
}

// AddAdminHash is AddHash for an admin key (a config key with admin:
// true).
func (k *Keys) AddAdminHash(principal, hexHash string, dialects ...string) error {
	if err := k.AddHash(principal, hexHash, dialects...); err != nil {
		return err
	}
	k.keys[len(k.keys)-1].Admin = true
	return nil
}

// Lookup returns the key r presents: CodeUnauthenticated when it presents
// none or an unknown one. With no keys configured it is an error too: the
// caller decides what an open bridge allows.
func (k *Keys) Lookup(r *http.Request) (Key, error) {
	presented := PresentedKey(r)
	if presented == "" {
		return Key{}, bridge.Errorf(bridge.CodeUnauthenticated, "no API key: send Authorization: Bearer <key>")
	}
	if !k.Enabled() {
		return Key{}, bridge.Errorf(bridge.CodeUnauthenticated, "invalid API key")
	}
	key, ok := k.lookup(presented)
	if !ok {
		return Key{}, bridge.Errorf(bridge.CodeUnauthenticated, "invalid API key")
	}
	return key, nil
}

// AddHash adds a key given as the hex SHA-256 of its value (how the config
// file holds keys).
func (k *Keys) AddHash(principal, hexHash string, dialects ...string) error {
	b, err := hex.DecodeString(strings.TrimPrefix(hexHash, "sha256:"))
	if err != nil || len(b) != sha256.Size {
		return fmt.Errorf("key %s: want the hex SHA-256 of the key", principal)
	}
	key := Key{Principal: principal, Dialects: dialects}
	copy(key.hash[:], b)
	k.keys = append(k.keys, key)
	return nil
}

// Enabled reports whether any key is configured.
func (k *Keys) Enabled() bool { return k != nil && len(k.keys) > 0 }

// HashKey returns the config-file form of a key: its hex SHA-256.
func HashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// lookup finds the key's entry, comparing against every hash so the time
// taken does not depend on which key matched or how much of it.
func (k *Keys) lookup(presented string) (Key, bool) {
	h := sha256.Sum256([]byte(presented))
	var found Key
	ok := 0
	for _, key := range k.keys {
		if subtle.ConstantTimeCompare(h[:], key.hash[:]) == 1 {
			found, ok = key, 1
		}
	}
	return found, ok == 1
}

// PresentedKey returns the key a request carries: a bearer token, or the
// x-api-key header (Anthropic's way; its SDKs use either).
func PresentedKey(r *http.Request) string {
	if v := r.Header.Get("Authorization"); v != "" {
		if t, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		if t, ok := strings.CutPrefix(v, "bearer "); ok {
			return strings.TrimSpace(t)
		}
	}
	return r.Header.Get("X-Api-Key")
}

// Authenticate wraps h: with keys configured, a request must present one
// that may use dialect ("" for the run API, open to every key), else it gets a 401 (or 403 for a key limited to
// other dialects) in the dialect's own error shape through writeError. The
// principal of the key rides in the request context (bridge.WithPrincipal),
// which scopes every session and run.
func (k *Keys) Authenticate(dialect string, writeError func(http.ResponseWriter, error), h http.Handler) http.Handler {
	if !k.Enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError := writeError
		if r.ContentLength != 0 {
			// A refusal closes the connection rather than read (Go
			// drains an unread body before it answers) a body that may
			// never come; a request that passes is unchanged.
			writeError = closing(writeError)
		}
		presented := PresentedKey(r)
		if presented == "" {
			writeError(w, bridge.Errorf(bridge.CodeUnauthenticated, "no API key: send Authorization: Bearer <key>"))
			return
		}
		key, ok := k.lookup(presented)
		if !ok {
			writeError(w, bridge.Errorf(bridge.CodeUnauthenticated, "invalid API key"))
			return
		}
		if dialect != "" && len(key.Dialects) > 0 && !slices.Contains(key.Dialects, dialect) {
			writeError(w, bridge.Errorf(bridge.CodePermissionDenied, "this API key may not use the %s endpoints", dialect))
			return
		}
		h.ServeHTTP(w, r.WithContext(bridge.WithPrincipal(r.Context(), key.Principal)))
	})
}

// closing is writeError that asks for the connection to be closed after
// the answer.
func closing(writeError func(http.ResponseWriter, error)) func(http.ResponseWriter, error) {
	return func(w http.ResponseWriter, err error) {
		w.Header().Set("Connection", "close")
		writeError(w, err)
	}
}
