package outbound

import (
	"net/http"
	"sync/atomic"
)

// HeaderReplaceFrom names, on a run request, the run the request discards
// with every later one of its session (a regenerate, an edit).
const HeaderReplaceFrom = "X-Replace-From"

// HeaderDiscards is set on every response of a bridge: it takes
// X-Replace-From. A client of one (an A2A, ADK or Hermes upstream that is
// another bridge) learns from it that the upstream discards turns itself.
const HeaderDiscards = "X-Bridge-Discards"

// DiscardSignal records whether an upstream has said it takes
// X-Replace-From; embedded in a client, it makes the client a
// bridge.Discarder. The zero value has not heard so. Safe for concurrent
// use.
type DiscardSignal struct{ yes atomic.Bool }

// Note reads a response of the upstream.
func (d *DiscardSignal) Note(resp *http.Response) {
	if resp != nil && resp.Header.Get(HeaderDiscards) == HeaderReplaceFrom {
		d.yes.Store(true)
	}
}

// Discards implements bridge.Discarder.
func (d *DiscardSignal) Discards() bool { return d.yes.Load() }

// AdvertiseDiscards sets HeaderDiscards on every response of h.
func AdvertiseDiscards(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderDiscards, HeaderReplaceFrom)
		h.ServeHTTP(w, r)
	})
}
