package main

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestReplicasSessionChannel: a session channel subscribed on replica b
// carries the runs replica a drives in the session as a's own channel
// does: each run from its start frame to its end frame, every frame, in
// order, none twice; two runs one after the other, the second started
// while b's channel waits. b's channel reads the database unsignalled
// (its poll, its keep-alive) only once an hour here, so nothing but the
// notifications of a's commits can have woken it (before they named the
// session, it waited for that poll: a second). Then a run on each replica
// at once: both channels carry the session's frames in one order.
func TestReplicasSessionChannel(t *testing.T) {
	cfg := defaultConfig()
	cfg.DB = pgtest.Schema(t)
	cfg.EchoDelay = 10 * time.Millisecond
	cfg.Subscribe.Poll = time.Hour
	cfg.Subscribe.KeepAlive = time.Hour // a keep-alive reads the database too
	a := "http://" + startMain(t, cfg).Addr()
	b := "http://" + startMain(t, cfg).Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const sid = "chanwake"
	// From the session's start: neither channel can miss the first run
	// for having opened late.
	onA := openStream(ctx, t, "GET", a+"/v1/sessions/"+sid+"/events?format=openai&from=start", nil, nil)
	onB := openStream(ctx, t, "GET", b+"/v1/sessions/"+sid+"/events?format=openai&from=start", nil, nil)
	seen := map[string]bool{}
	for i, text := range []string{strings.Repeat("first run ", 20), strings.Repeat("the second run ", 15)} {
		resp := convSend(ctx, t, "POST", a+"/v1/chat/completions",
			`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+strings.TrimSpace(text)+`"}]}`,
			map[string]string{"Content-Type": "application/json", "X-Session-Id": sid})
		run := resp.Header.Get("X-Run-Id")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || run == "" {
			t.Fatalf("run %d on a: %d, run %q", i+1, resp.StatusCode, run)
		}
		want, got := readChannelRun(t, onA), readChannelRun(t, onB)
		if want.info.RunID != run || got.info.RunID != run || want.info.Status != "completed" {
			t.Fatalf("run %d (%s): a's channel carried %+v, b's %+v", i+1, run, want.info, got.info)
		}
		wantFrames := append(append([]sseFrame{want.start}, want.frames...), want.end)
		gotFrames := append(append([]sseFrame{got.start}, got.frames...), got.end)
		if len(want.frames) < 10 || rawOf(gotFrames) != rawOf(wantFrames) {
			t.Fatalf("run %d: b's channel carried (%d frames):\n%s\na's (%d frames):\n%s",
				i+1, len(gotFrames), rawOf(gotFrames), len(wantFrames), rawOf(wantFrames))
		}
		for _, f := range gotFrames {
			if !f.hasID {
				continue
			}
			if seen[f.id] {
				t.Fatalf("run %d: frame id %s twice", i+1, f.id)
			}
			seen[f.id] = true
		}
	}

	// Two runs at once, one on each replica: each channel has its own
	// replica's commits woken here and the other's signalled, in between;
	// both carry the session's frames in one order, its commit order.
	var wg sync.WaitGroup
	runs := make([]string, 2)
	for i, base := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each its own words: a request whose messages the session
			// holds already (the other's, committed first) adds nothing
			// to it (a 400).
			resp := convSend(ctx, t, "POST", base+"/v1/chat/completions",
				`{"model":"echo","stream":true,"messages":[{"role":"user","content":"`+strings.TrimSpace(strings.Repeat("at once "+string(rune('a'+i))+" ", 12))+`"}]}`,
				map[string]string{"Content-Type": "application/json", "X-Session-Id": sid})
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			runs[i] = resp.Status + " " + resp.Header.Get("X-Run-Id")
			if resp.StatusCode != 200 {
				runs[i] += " " + string(body)
			}
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if !strings.HasPrefix(r, "200 ") {
			t.Fatalf("the run on %s: %s", []string{"a", "b"}[i], r)
		}
	}
	both := func(name string, ch *convStream) []sseFrame {
		var frames []sseFrame
		for ends := 0; ends < 2; {
			f, ok := ch.next()
			if !ok {
				t.Fatalf("%s's channel ended before both runs' ends (runs on a, b: %q): %v\n%s", name, runs, ch.err, rawOf(frames))
			}
			frames = append(frames, f)
			if f.event == "bridge.run.ended" {
				ends++
			}
		}
		return frames
	}
	want, got := both("a", onA), both("b", onB)
	if rawOf(got) != rawOf(want) {
		t.Fatalf("two runs at once: b's channel carried (%d frames):\n%s\na's (%d frames):\n%s", len(got), rawOf(got), len(want), rawOf(want))
	}
	for _, f := range got {
		if f.hasID && seen[f.id] {
			t.Fatalf("two runs at once: frame id %s twice", f.id)
		}
		seen[f.id] = true
	}
}
