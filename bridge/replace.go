package bridge

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// ParamReplaceFrom names the request field of Request.ReplaceFrom (the
// X-Replace-From header) in the errors about it.
const ParamReplaceFrom = "X-Replace-From"

// Discarder is implemented by upstreams that may discard turns
// themselves: another bridge, which takes X-Replace-From. Discards reports
// whether the upstream has said it does (a bridge's responses say so). A
// discard over such an upstream keeps the session's upstream context and
// names the upstream's run in Request.DiscardUpstream, so the upstream's
// model gets the kept transcript as it was; over any other upstream the
// context is forgotten and a fresh one gets the kept transcript.
type Discarder interface {
	Discards() bool
}

// discarderOf finds up's Discarder, under any middleware with an Unwrap
// method.
func discarderOf(up Upstream) (Discarder, bool) {
	for up != nil {
		if d, ok := up.(Discarder); ok {
			return d, true
		}
		u, ok := up.(interface{ Unwrap() Upstream })
		if !ok {
			return nil, false
		}
		up = u.Unwrap()
	}
	return nil, false
}

// discard is what a regenerate or an edit discards: the session's runs
// from the first one discarded on.
type discard struct {
	from string
	runs []*Run // from and every later run of the session, newest first
}

// replaceTarget finds the run a request's ReplaceFrom names: one of the
// caller's, in force, and in the request's session when it names one
// (another principal's run, or another session's, is not found).
func (e *Engine) replaceTarget(ctx context.Context, id, session string) (*Run, error) {
	r, err := e.Run(ctx, id)
	switch {
	case ErrorCode(err) == CodeNotFound:
		return nil, &Error{Code: CodeNotFound, Param: ParamReplaceFrom, Message: fmt.Sprintf("run %q not found", id)}
	case err != nil:
		return nil, err
	case session != "" && r.SessionID != session:
		return nil, &Error{Code: CodeNotFound, Param: ParamReplaceFrom,
			Message: fmt.Sprintf("run %q not found in session %q", id, session)}
	case r.Superseded:
		return nil, &Error{Code: CodeConflict, Param: ParamReplaceFrom, Message: fmt.Sprintf("run %q was already replaced", id)}
	}
	return r, nil
}

// splitInput returns the messages req adds to the session's stored
// transcript (in force), the whole transcript to send upstream, and what
// the request discards, if anything.
//
// A request with ReplaceFrom discards that run and every later one: its
// input follows the transcript kept before them. A full transcript
// (stateless dialects) adds its suffix when it extends the kept one; one
// that diverges from it, or stops short of it, is an edit or a regenerate
// at the point where it diverges: the run that stored message belongs to
// is discarded with every later one, and the request adds what follows the
// transcript kept before them. No message is ever stored twice.
func (e *Engine) splitInput(ctx context.Context, session string, stored []Message, req *Request) (input, transcript []Message, d *discard, err error) {
	kept := stored
	var runs []*Run // the session's runs, newest first, read once needed
	discardFrom := func(from string) error {
		if runs == nil {
			all, err := e.store.ListRuns(ctx, RunFilter{SessionID: session, Principal: PrincipalFromContext(ctx)})
			if err != nil {
				return fmt.Errorf("list runs session=%s: %w", session, err)
			}
			runs = all
		}
		i := slices.IndexFunc(runs, func(r *Run) bool { return r.ID == from })
		if i < 0 {
			return &Error{Code: CodeNotFound, Param: ParamReplaceFrom, Message: fmt.Sprintf("run %q not found in session %q", from, session)}
		}
		if d != nil && len(d.runs) > i {
			return nil // already discarded from an earlier run
		}
		d = &discard{from: from, runs: runs[:i+1]}
		kept = slices.DeleteFunc(slices.Clone(kept), func(m Message) bool {
			return slices.ContainsFunc(d.runs, func(r *Run) bool { return r.ID == m.RunID })
		})
		return nil
	}
	if req.ReplaceFrom != "" {
		if err := discardFrom(req.ReplaceFrom); err != nil {
			return nil, nil, nil, err
		}
	}
	if !req.Full {
		transcript = make([]Message, 0, len(kept)+len(req.Messages))
		transcript = append(append(transcript, kept...), req.Messages...)
		return slices.Clone(req.Messages), transcript, d, nil
	}
	// Each round discards at least one more run: it ends.
	for {
		n := 0
		for n < len(kept) && n < len(req.Messages) && sameMessage(&kept[n], &req.Messages[n]) {
			n++
		}
		if n == len(kept) {
			return slices.Clone(req.Messages[n:]), req.Messages, d, nil
		}
		if kept[n].RunID == "" {
			// A message of no run cannot be discarded: the request's
			// transcript stands on its own.
			return slices.Clone(req.Messages), req.Messages, d, nil
		}
		if err := discardFrom(kept[n].RunID); err != nil {
			return nil, nil, nil, err
		}
	}
}

// supersede carries out a discard: the runs still running are cancelled
// (their final events committed), then marked superseded with their
// messages. Over an upstream that discards turns itself, and served them
// all, it returns the upstream's id of the first run discarded (for
// Request.DiscardUpstream); else the upstream contexts that hold their
// turns are forgotten, so the next upstream call starts a fresh context
// that gets the kept transcript whole.
func (e *Engine) supersede(ctx context.Context, session string, d *discard, up Upstream, now time.Time) (upstreamRun string, err error) {
	from := d.runs[len(d.runs)-1]
	if dc, ok := discarderOf(up); ok && dc.Discards() && from.UpstreamRunID != "" &&
		!slices.ContainsFunc(d.runs, func(r *Run) bool { return r.Upstream != up.Name() }) {
		upstreamRun = from.UpstreamRunID
	}
	scopes := []string{up.Name()}
	for _, r := range d.runs {
		if lr := e.liveRun(r.ID); lr != nil {
			if _, err := e.Abort(ctx, r.ID); err != nil {
				return "", err
			}
		}
		if r.Upstream != "" && !slices.Contains(scopes, r.Upstream) {
			scopes = append(scopes, r.Upstream)
		}
	}
	ids, err := e.store.Supersede(ctx, d.from, now)
	if err != nil {
		return "", fmt.Errorf("supersede session=%s from=%s: %w", session, d.from, err)
	}
	e.log.Info("runs superseded", "session", session, "from", d.from, "runs", ids, "upstream_run", upstreamRun)
	if upstreamRun != "" {
		return upstreamRun, nil // the upstream discards them in its context
	}
	for _, scope := range scopes {
		// An empty remote is no mapping: the session's upstream context
		// (a Hermes session, a Responses chain) is made afresh.
		if _, err := e.store.RemoteID(ctx, IDSession, scope, session); err != nil {
			continue
		}
		if err := e.store.PutID(ctx, IDMapping{Kind: IDSession, Scope: scope, Local: session}); err != nil {
			return "", fmt.Errorf("forget upstream context session=%s upstream=%s: %w", session, scope, err)
		}
	}
	return "", nil
}

// sameMessage reports whether a message a client resent is the stored one.
// A stored assistant message may hold tool calls the client never saw (an
// agent upstream's own tool activity, which a Chat Completions client is
// not shown): a resent message without tool calls matches it without them.
func sameMessage(stored, sent *Message) bool {
	if stored.Fingerprint() == sent.Fingerprint() {
		return true
	}
	if len(stored.ToolCalls) == 0 || len(sent.ToolCalls) > 0 {
		return false
	}
	bare := *stored
	bare.ToolCalls = nil
	return bare.Fingerprint() == sent.Fingerprint()
}
