package hermes

import (
	"net/http"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/hermes"
)

// HeaderIdempotencyKey and HeaderReplayed are POST /v1/runs' headers.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotency-Replayed"
)

func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '!' || k[i] > '~' {
			return false
		}
	}
	return true
}

// createRun is POST /v1/runs: a turn started without a stream (202); its
// frames are at GET /v1/runs/{id}/events. With Idempotency-Key, a retry
// of the same body answers the run it made (Idempotency-Replayed: true);
// another body with the key is a 409. The store holds a key once
// (bridge.IdempotencyKeyed): of two replicas that get a key at once, the
// one whose run is refused answers with the other's.
func (h *Handler) createRun(w http.ResponseWriter, r *http.Request) {
	tr, body, err := h.decodeTurn(w, r)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	key := r.Header.Get(HeaderIdempotencyKey)
	if key != "" && !validKey(key) {
		h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "Idempotency-Key: 1 to 255 visible ASCII characters"))
		return
	}
	ctx := r.Context()
	principal := bridge.PrincipalFromContext(ctx)
	var ie *idemEntry
	if key != "" {
		h.mu.Lock()
		ie = h.idem[sessionKey{principal, key}]
		if ie == nil {
			ie = &idemEntry{}
			h.idem[sessionKey{principal, key}] = ie
		}
		h.mu.Unlock()
		ie.mu.Lock() // one request per key at a time: a concurrent retry waits, then replays
		defer ie.mu.Unlock()
		var prior *bridge.Run
		if ie.runID != "" {
			prior, _ = h.cfg.Engine.Run(ctx, ie.runID)
		} else if h.cfg.Runs != nil {
			if pr, err := h.cfg.Runs.RunByClientID(ctx, principal, key); err == nil && pr.Principal == principal {
				prior = pr
			}
		}
		if prior != nil {
			h.replay(w, r, key, body, prior)
			return
		}
	}
	var (
		s    *session
		made bool // this request registered s
	)
	if tr.SessionID != "" {
		s, err = h.lookup(ctx, tr.SessionID)
		if err != nil && bridge.ErrorCode(err) == bridge.CodeNotFound {
			if !validID(tr.SessionID) {
				h.WriteError(w, wire.Errorf(bridge.CodeInvalid, wire.CodeInvalidRequest, "session_id: at most 256 visible characters"))
				return
			}
			s = &session{id: tr.SessionID, created: h.cfg.Now().UTC()}
			if err = h.register(ctx, s); err == nil {
				made = true
			} else if bridge.ErrorCode(err) == bridge.CodeConflict {
				s, err = h.lookup(ctx, tr.SessionID)
			}
		}
		if err != nil {
			h.WriteError(w, err)
			return
		}
	} else {
		s = &session{id: bridge.NewID("sess_"), created: h.cfg.Now().UTC()}
		if err := h.register(ctx, s); err != nil {
			h.WriteError(w, err)
			return
		}
		made = true
	}
	run, err := h.startTurn(ctx, s, tr, body, key)
	if err != nil {
		if made {
			h.unregister(ctx, s) // a refused run leaves no session behind
		}
		if key != "" && h.cfg.Runs != nil && bridge.ErrorCode(err) == bridge.CodeConflict {
			// Another replica made a run with the key meanwhile (the store
			// holds a key once): this request is its retry.
			if prior, perr := h.cfg.Runs.RunByClientID(ctx, principal, key); perr == nil && prior.Principal == principal {
				h.replay(w, r, key, body, prior)
				return
			}
		}
		h.WriteError(w, err)
		return
	}
	if ie != nil {
		h.mu.Lock()
		ie.runID = run.ID // for the requests waiting on ie.mu
		if h.cfg.Runs != nil {
			// The store finds the run by its key from now on: the entry
			// only had to serialize the requests racing to create it.
			delete(h.idem, sessionKey{principal, key})
		}
		h.mu.Unlock()
	}
	w.Header().Set(HeaderSessionID, s.id)
	writeJSON(w, http.StatusAccepted, wire.EncodeAccepted(run, false))
}

// replay answers a request whose Idempotency-Key made prior: prior again
// (Idempotency-Replayed: true) if its body is the one that made it, else a
// 409.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, key string, body []byte, prior *bridge.Run) {
	ctx := r.Context()
	if renderOf(prior).BodySHA256 != bodyHash(body) {
		h.WriteError(w, wire.Errorf(bridge.CodeConflict, wire.CodeIdempotencyConflict,
			"Idempotency-Key %q was used with a different request body", key))
		return
	}
	if live, err := h.cfg.Engine.Run(ctx, prior.ID); err == nil {
		prior = live
	}
	if h.cfg.Runs != nil {
		h.mu.Lock()
		delete(h.idem, sessionKey{bridge.PrincipalFromContext(ctx), key})
		h.mu.Unlock()
	}
	w.Header().Set(HeaderReplayed, "true")
	writeJSON(w, http.StatusAccepted, wire.EncodeAccepted(prior, true))
}
