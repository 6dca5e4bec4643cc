package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// channelLog is what a channel carried, frame by frame, told apart by run.
type channelLog struct {
	frames []sseFrame
	runOf  []string // the run of each frame
}

// runOfFrame is the run a channel frame belongs to: its id's, or, for a
// start or end frame, the run its data names.
func runOfFrame(t *testing.T, f sseFrame) string {
	t.Helper()
	if f.event == "bridge.run.started" || f.event == "bridge.run.ended" {
		var v struct {
			RunID string `json:"run_id"`
		}
		decodeJSON(t, f.event, []byte(f.data), &v)
		return v.RunID
	}
	run, _, _, ok := bridge.ParseFrameID(f.id)
	if !ok {
		t.Fatalf("a frame of the channel without a run's frame id: %s", f.raw)
	}
	return run
}

func (l *channelLog) add(t *testing.T, fs ...sseFrame) {
	t.Helper()
	for _, f := range fs {
		l.frames = append(l.frames, f)
		l.runOf = append(l.runOf, runOfFrame(t, f))
	}
}

// of returns run's own frames (not its start and end frames).
func (l *channelLog) of(run string) []sseFrame {
	var out []sseFrame
	for i, f := range l.frames {
		if l.runOf[i] == run && !strings.HasPrefix(f.event, "bridge.run.") {
			out = append(out, f)
		}
	}
	return out
}

func (l *channelLog) count(event, run string) int {
	n := 0
	for i, f := range l.frames {
		if f.event == event && l.runOf[i] == run {
			n++
		}
	}
	return n
}

// TestSubscribeOverlap: two runs of one session that overlap come on its
// channel interleaved, in the order their events were committed (the
// store's SessionEvents), each between its start and end frame and each
// decoding to its whole answer; a channel cut while both run resumes from
// its last id with no gap and no duplicate, and without a second start
// frame for either.
func TestSubscribeOverlap(t *testing.T) {
	m := newConvModel(t)
	main := convMain(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()})
	c := &chain{upstream: "openai", front: "http://" + main.Addr(), model: m}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	a := a2aAdapter{}
	sid := convID("overlap")
	s := a.session(ctx, t, c, sid)
	ch := openChannel(ctx, t, a, c, sid, "")

	pa, pb := sayPrompt(convSlowAnswer("first", 40)), sayPrompt(convSlowAnswer("second", 40))
	runA, _ := acceptedRun(ctx, t, a, c, s, sid, pa, convID("local"))
	runB, _ := acceptedRun(ctx, t, a, c, s, sid, pb, convID("local"))

	// Read until both have a few words out, then cut.
	var log channelLog
	words := func(run string) int { return wordCount(a.answer(log.of(run))) }
	for i := 0; i < 10000 && (words(runA) < 8 || words(runB) < 8); i++ {
		f, ok := ch.next()
		if !ok {
			t.Fatalf("the channel ended: %v\n%s", ch.err, rawOf(log.frames))
		}
		log.add(t, f)
	}
	if log.count("bridge.run.ended", runA)+log.count("bridge.run.ended", runB) > 0 {
		t.Fatalf("a run ended before both had 8 words out; the runs did not overlap:\n%s", rawOf(log.frames))
	}
	ch.close()
	last := log.frames[len(log.frames)-1]
	ch = openChannel(ctx, t, a, c, sid, last.id)
	for i := 0; i < 10000 && (log.count("bridge.run.ended", runA) == 0 || log.count("bridge.run.ended", runB) == 0); i++ {
		f, ok := ch.next()
		if !ok {
			t.Fatalf("the resumed channel ended: %v\n%s", ch.err, rawOf(log.frames))
		}
		log.add(t, f)
	}
	ch.close()

	for _, r := range []struct{ run, prompt string }{{runA, pa}, {runB, pb}} {
		if got, want := a.answer(log.of(r.run)), c.answer(r.prompt, 1); got != want {
			t.Errorf("run %s across the cut at %s: answer %q, want %q", r.run, last.id, got, want)
		}
		if n, m := log.count("bridge.run.started", r.run), log.count("bridge.run.ended", r.run); n != 1 || m != 1 {
			t.Errorf("run %s: %d start frames and %d end frames, want one each", r.run, n, m)
		}
	}
	seen := map[string]bool{}
	for _, f := range log.frames {
		if f.hasID && seen[f.id] {
			t.Errorf("frame %s twice across the cut at %s", f.id, last.id)
		}
		seen[f.id] = true
	}
	// Interleaved: the channel goes from one run to the other and back.
	switches := 0
	for i := 1; i < len(log.runOf); i++ {
		if log.runOf[i] != log.runOf[i-1] {
			switches++
		}
	}
	if switches < 3 {
		t.Errorf("the channel switched runs %d times; two overlapping runs should interleave", switches)
	}
	// In commit order: the events the frames render come in the order the
	// store committed them.
	run, err := main.Store().Run(ctx, runA)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := main.Store().SessionEvents(ctx, run.Principal, run.SessionID, bridge.SessionPos{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	order := map[string]int{}
	for i, ev := range committed {
		order[ev.ID()] = i
	}
	prev, prevID := -1, ""
	for _, f := range log.frames {
		r, seq, _, ok := bridge.ParseFrameID(f.id)
		if !ok || strings.HasPrefix(f.event, "bridge.run.") {
			continue
		}
		i, ok := order[bridge.EventID(r, seq)]
		if !ok {
			t.Fatalf("frame %s renders no event of the session", f.id)
		}
		if i < prev {
			t.Fatalf("frame %s (the session's event %d) after %s (its event %d): not in commit order", f.id, i, prevID, prev)
		}
		prev, prevID = i, f.id
	}
}
