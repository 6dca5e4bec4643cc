package main

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// TestSubscribeAcceptedCommands: with a channel open, regenerate, edit and
// resume accept Prefer: respond-async as a run does (OpenAI-compatible
// adapter): each answers 202 naming its run, and the output arrives on
// the channel, the first frame of a new run naming the client's local run
// id. A regenerate (X-Replace-From the run) and an edit (X-Replace-From
// with another prompt) are new runs; an accepted resume names the run it
// resumes and streams nothing, the run's answer going on on the channel.
func TestSubscribeAcceptedCommands(t *testing.T) {
	m := newConvModel(t)
	c := &chain{upstream: "openai", front: convBridge(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()}), model: m}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	a := openaiAdapter{}
	sid := convID("commands")
	s := a.session(ctx, t, c, sid)
	ch := openChannel(ctx, t, a, c, sid, "")

	check := func(what, run, local, prompt string) {
		t.Helper()
		cr := readChannelRun(t, ch)
		if cr.info.RunID != run || cr.info.ClientRunID != local || cr.info.Status != string(bridge.StatusCompleted) {
			t.Fatalf("%s: the channel's run %+v, want run %s with client_run_id %s, completed", what, cr.info, run, local)
		}
		if got, want := a.answer(cr.frames), c.answer(prompt, 1); got != want {
			t.Errorf("%s: answer %q on the channel, want %q", what, got, want)
		}
	}
	q1 := sayPrompt("first " + sid)
	r1, _ := acceptedRun(ctx, t, a, c, s, sid, q1, "local-run")
	check("run", r1, "local-run", q1)

	r2, _ := acceptedTurn(ctx, t, a, c, s, sid, q1, "local-regenerate", turnOpts{replaceFrom: r1, transcript: []msg{}})
	if r2 == r1 {
		t.Fatalf("the regenerate is run %s again, want a new run", r1)
	}
	check("regenerate", r2, "local-regenerate", q1)

	q3 := sayPrompt("edited " + sid)
	r3, _ := acceptedTurn(ctx, t, a, c, s, sid, q3, "local-edit", turnOpts{replaceFrom: r2, transcript: []msg{}})
	if r3 == r2 || r3 == r1 {
		t.Fatalf("the edit is run %s, want a new run", r3)
	}
	check("edit", r3, "local-edit", q3)
	s.transcript = nil
	s.record(q3, c.answer(q3, 1))

	acceptedResume(ctx, t, a, c, s, sid, ch)
}

// acceptedResume: a slow run, seen on the channel up to a few words; its
// resume, accepted (Prefer: respond-async), answers 202 naming it and the
// client's local run id, and streams nothing; the rest of the run comes
// on the channel, with no gap and no duplicate.
func acceptedResume(ctx context.Context, t *testing.T, a convAdapter, c *chain, s *convSession, sid string, ch *convStream) {
	t.Helper()
	q := sayPrompt(convSlowAnswer(sid, 30))
	run, local := acceptedRun(ctx, t, a, c, s, sid, q, "local-slow")
	n := len(ch.frames)
	if !ch.until(func(f []sseFrame) bool { return len(f) > n+1 && wordCount(a.answer(f[n+1:])) >= 3 }) {
		t.Fatalf("the channel ended before run %s's third word", run)
	}
	last := ch.frames[len(ch.frames)-1]
	for i := len(ch.frames) - 1; i > n && !last.hasID; i-- {
		last = ch.frames[i]
	}
	st := a.resume(withConvHeaders(ctx, map[string]string{"Prefer": "respond-async"}), t, c, s, run, last.id)
	b, _ := io.ReadAll(st.resp.Body)
	var acc struct {
		RunID       string `json:"run_id"`
		ClientRunID string `json:"client_run_id"`
	}
	if st.resp.StatusCode != http.StatusAccepted {
		t.Fatalf("accepted resume of %s: %d %s, want 202", run, st.resp.StatusCode, b)
	}
	decodeJSON(t, "accepted resume", b, &acc)
	if acc.RunID != run || acc.ClientRunID != local {
		t.Errorf("accepted resume answered %s, want run %s, client_run_id %s", b, run, local)
	}
	tail := readChannelRunTail(t, ch)
	whole := append(append([]sseFrame(nil), ch.frames[n+1:len(ch.frames)-len(tail)-1]...), tail...)
	if got, want := a.answer(whole), c.answer(q, 1); got != want {
		t.Errorf("run %s on the channel across its accepted resume: %q, want %q", run, got, want)
	}
	seen := map[string]bool{}
	for _, f := range whole {
		if f.hasID && seen[f.id] {
			t.Errorf("frame %s twice on the channel", f.id)
		}
		seen[f.id] = true
	}
}

// TestSubscribeAcceptedResume: each chatkit adapter's own resume (A2A
// tasks/resubscribe, ADK run_sse with lastEventId, Hermes' GET
// chat/stream) is accepted as the run API's is (acceptedResume).
func TestSubscribeAcceptedResume(t *testing.T) {
	m := newConvModel(t)
	c := &chain{upstream: "openai", front: convBridge(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()}), model: m}
	for _, a := range []convAdapter{a2aAdapter{}, adkAdapter{}, hermesAdapter{}} {
		t.Run(a.name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
			defer cancel()
			s, sid := subscribeSession(ctx, t, a, c, convID("resume-"+a.name()))
			acceptedResume(ctx, t, a, c, s, sid, openChannel(ctx, t, a, c, sid, ""))
		})
	}
}
