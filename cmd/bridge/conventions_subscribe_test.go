package main

// The subscribe capability: a session channel (GET
// /v1/sessions/{s}/events?format=<the adapter's dialect>) and run requests
// that only ask to be accepted (Prefer: respond-async).

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

type convHeadersKey struct{}

// withConvHeaders makes the requests convSend sends under ctx carry h too;
// a 202 then answers openStream (an accepted run).
func withConvHeaders(ctx context.Context, h map[string]string) context.Context {
	return context.WithValue(ctx, convHeadersKey{}, h)
}

func convHeaders(ctx context.Context) map[string]string {
	h, _ := ctx.Value(convHeadersKey{}).(map[string]string)
	return h
}

// channelRun is one run as a channel carried it.
type channelRun struct {
	start, end sseFrame
	frames     []sseFrame // the dialect's own, between
	info       struct {
		RunID       string `json:"run_id"`
		ClientRunID string `json:"client_run_id"`
		SessionID   string `json:"session_id"`
		Status      string `json:"status"`
	}
}

// readChannelRun reads one run off the channel: its start frame, its
// frames, its end frame. Frames before the start are returned in pre.
func readChannelRun(t *testing.T, ch *convStream) *channelRun {
	t.Helper()
	cr := &channelRun{}
	for {
		f, ok := ch.next()
		if !ok {
			t.Fatalf("the channel ended before a run's end frame: %v\n%s", ch.err, rawOf(ch.frames))
		}
		switch f.event {
		case "bridge.run.started":
			if cr.start.event != "" {
				t.Fatalf("a second start frame before the run's end: %s", f.raw)
			}
			cr.start = f
			decodeJSON(t, "start frame", []byte(f.data), &cr.info)
		case "bridge.run.ended":
			if cr.start.event == "" {
				t.Fatalf("an end frame without a start: %s", f.raw)
			}
			cr.end = f
			var end struct {
				RunID  string `json:"run_id"`
				Status string `json:"status"`
			}
			decodeJSON(t, "end frame", []byte(f.data), &end)
			if end.RunID != cr.info.RunID {
				t.Fatalf("end frame of run %s inside run %s", end.RunID, cr.info.RunID)
			}
			cr.info.Status = end.Status
			return cr
		default:
			if cr.start.event == "" {
				t.Fatalf("a frame before any run's start frame: %s", f.raw)
			}
			cr.frames = append(cr.frames, f)
		}
	}
}

// acceptedRun sends a turn in accepted mode with local id, and returns
// the run id and the local id the bridge took.
func acceptedRun(ctx context.Context, t *testing.T, a convAdapter, c *chain, s *convSession, sid, prompt, local string) (run, client string) {
	t.Helper()
	return acceptedTurn(ctx, t, a, c, s, sid, prompt, local, turnOpts{})
}

// acceptedTurn is acceptedRun with the turn's options (a regenerate, an
// edit).
func acceptedTurn(ctx context.Context, t *testing.T, a convAdapter, c *chain, s *convSession, sid, prompt, local string, o turnOpts) (run, client string) {
	t.Helper()
	st := a.start(withConvHeaders(ctx, map[string]string{"Prefer": "respond-async", "X-Client-Run-Id": local}), t, c, s, prompt, o)
	if st.resp.StatusCode != http.StatusAccepted {
		t.Fatalf("accepted run: status %d", st.resp.StatusCode)
	}
	b, _ := io.ReadAll(st.resp.Body)
	var acc struct {
		RunID       string `json:"run_id"`
		SessionID   string `json:"session_id"`
		ClientRunID string `json:"client_run_id"`
	}
	decodeJSON(t, "accepted answer", b, &acc)
	if acc.RunID == "" || acc.SessionID != sid {
		t.Fatalf("accepted answer %s, want a run of session %s", b, sid)
	}
	return acc.RunID, acc.ClientRunID
}

func openChannel(ctx context.Context, t *testing.T, a convAdapter, c *chain, sid, last string) *convStream {
	t.Helper()
	h := map[string]string{"Accept": "text/event-stream"}
	if last != "" {
		h["Last-Event-ID"] = last
	}
	return openStream(ctx, t, "GET", c.front+"/v1/sessions/"+sid+"/events?format="+a.name(), nil, h)
}

// subscribeSession makes the adapter's session tag, and returns it with
// the bridge's session its channel is of: tag, or for ADK the create
// answer's X-Session-Id.
func subscribeSession(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) (*convSession, string) {
	t.Helper()
	if a.name() != "adk" {
		return a.session(ctx, t, c, tag), tag
	}
	resp := convSend(ctx, t, "POST", c.front+"/apps/"+convModelName+"/users/"+convADKUser+"/sessions/"+url.PathEscape(tag), map[string]any{}, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("X-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("create ADK session: %d, X-Session-Id %q", resp.StatusCode, sid)
	}
	return &convSession{id: tag, app: convModelName}, sid
}

func caseSubscribe(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s, sid := subscribeSession(ctx, t, a, c, tag)
	// 1. subscribe.
	ch := openChannel(ctx, t, a, c, sid, "")

	// 2. an accepted run with a local id: its first frame names it.
	turn := 0
	checkRun := func(cr *channelRun, run, prompt string) {
		t.Helper()
		turn++
		if cr.info.RunID != run || cr.info.SessionID != sid {
			t.Fatalf("channel run %+v, want run %s of session %s", cr.info, run, sid)
		}
		if cr.info.Status != string(bridge.StatusCompleted) {
			t.Errorf("run %s ended %s on the channel, want completed", run, cr.info.Status)
		}
		if got, want := a.answer(cr.frames), c.answer(prompt, turn); got != want {
			t.Errorf("run %s on the channel: answer %q, want %q\n%s", run, got, want, rawOf(cr.frames))
		}
		for _, f := range cr.frames {
			if f.hasID && !strings.HasPrefix(f.id, run+":") {
				t.Errorf("frame id %q is not one of run %s", f.id, run)
			}
		}
		s.record(prompt, c.answer(prompt, turn))
	}
	local := convID("local")
	p1 := sayPrompt("first " + tag)
	run1, client := acceptedRun(ctx, t, a, c, s, sid, p1, local)
	if a.name() != "a2a" && client != local {
		t.Errorf("accepted answer: client_run_id %q, want %q", client, local)
	}
	if a.name() == "a2a" && !strings.HasPrefix(client, "msg-") { // its own field: message.messageId
		t.Errorf("accepted answer: client_run_id %q, want the message's messageId", client)
	}
	cr1 := readChannelRun(t, ch)
	if len(ch.frames) == 0 || ch.frames[0].event != "bridge.run.started" || cr1.info.ClientRunID != client {
		t.Fatalf("first frame of the run: %s, want run.started with client_run_id %q", cr1.start.raw, client)
	}
	checkRun(cr1, run1, p1)

	// 3. two runs in a row, in order, each between its start and end.
	p2, p3 := sayPrompt("second "+tag), sayPrompt("third "+tag)
	run2, _ := acceptedRun(ctx, t, a, c, s, sid, p2, convID("local"))
	checkRun(readChannelRun(t, ch), run2, p2)
	run3, _ := acceptedRun(ctx, t, a, c, s, sid, p3, convID("local"))
	checkRun(readChannelRun(t, ch), run3, p3)

	// 4. cut the channel mid-run, resume from its last id.
	p4 := sayPrompt(convSlowAnswer(tag, 30))
	run4, _ := acceptedRun(ctx, t, a, c, s, sid, p4, convID("local"))
	n := len(ch.frames)
	if !ch.until(func(f []sseFrame) bool { return len(f) > n+1 && wordCount(a.answer(f[n+1:])) >= 3 }) {
		t.Fatalf("the channel ended before run %s's third word", run4)
	}
	head := ch.frames[n:]
	ch.close()
	last := head[len(head)-1]
	for i := len(head) - 1; i >= 0 && !last.hasID; i-- {
		last = head[i]
	}
	ch = openChannel(ctx, t, a, c, sid, last.id)
	tail := readChannelRunTail(t, ch)
	whole := append(append([]sseFrame(nil), head[1:]...), tail...)
	if got, want := a.answer(whole), c.answer(p4, turn+1); got != want {
		t.Errorf("cut at %s and resumed: answer %q, want %q\nhead:\n%s\ntail:\n%s", last.id, got, want, rawOf(head), rawOf(tail))
	}
	seen := map[string]bool{}
	for _, f := range whole {
		if f.hasID && seen[f.id] {
			t.Errorf("frame %s twice across the cut", f.id)
		}
		seen[f.id] = true
	}
	turn++
	s.record(p4, c.answer(p4, turn))

	// 5. another client's run of the session shows on the channel.
	p5 := sayPrompt("other client " + tag)
	other := a.start(ctx, t, c, s, p5, turnOpts{})
	otherFrames := other.all(t)
	checkRun(readChannelRun(t, ch), a.runOf(&convStream{resp: other.resp, frames: otherFrames}), p5)
}

// readChannelRunTail reads a resumed channel up to the end frame of the
// run it resumed in, and returns that run's frames.
func readChannelRunTail(t *testing.T, ch *convStream) []sseFrame {
	t.Helper()
	var out []sseFrame
	for {
		f, ok := ch.next()
		if !ok {
			t.Fatalf("the resumed channel ended before the run's end frame: %v\n%s", ch.err, rawOf(ch.frames))
		}
		switch f.event {
		case "bridge.run.started":
			t.Fatalf("a start frame again after the resume: %s", f.raw)
		case "bridge.run.ended":
			return out
		}
		out = append(out, f)
	}
}

// TestSubscribeForeignPrincipal: session ids are per principal, so the
// channel another principal opens on the same id is a channel of its own
// (empty, waiting for its first run, as for any id not yet used): it gets
// nothing of the first principal's runs, those before it opened or after.
func TestSubscribeForeignPrincipal(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "sub-key-one,sub-key-two")
	m := newConvModel(t)
	front := convBridge(t, Upstream{Name: "model", Dialect: "openai", URL: m.baseURL()})
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	sid := convID("foreign")
	one := map[string]string{"Authorization": "Bearer sub-key-one", "X-Session-Id": sid}
	turn := func(text string) string {
		t.Helper()
		body := map[string]any{"model": convModelName, "stream": false, "messages": []any{map[string]any{"role": "user", "content": sayPrompt(text)}}}
		resp := convSend(ctx, t, "POST", front+"/v1/chat/completions", body, one)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("run: %d", resp.StatusCode)
		}
		return resp.Header.Get("X-Run-Id")
	}
	first := turn("mine")
	formats := []string{"openai", "a2a", "adk", "hermes"}
	theirs := make([]*convStream, len(formats))
	var wg sync.WaitGroup
	for i, format := range formats {
		theirs[i] = openStream(ctx, t, "GET", front+"/v1/sessions/"+sid+"/events?format="+format, nil, map[string]string{"Authorization": "Bearer sub-key-two"})
		wg.Go(func() { theirs[i].until(func([]sseFrame) bool { return false }) }) // reads until closed
	}
	// Its owner's channel carries the next run; the other principal's carry nothing.
	mine := openStream(ctx, t, "GET", front+"/v1/sessions/"+sid+"/events?format=openai", nil, map[string]string{"Authorization": "Bearer sub-key-one"})
	second := turn("again")
	if !mine.until(func(fs []sseFrame) bool { return strings.Contains(rawOf(fs), second) }) {
		t.Fatalf("the owner's channel never carried run %s: %v\n%s", second, mine.err, rawOf(mine.frames))
	}
	mine.close()
	time.Sleep(200 * time.Millisecond) // time for a leak to arrive
	for _, ch := range theirs {
		ch.close()
	}
	wg.Wait()
	for i, ch := range theirs {
		if raw := rawOf(ch.frames); strings.Contains(raw, first) || strings.Contains(raw, second) || strings.Contains(raw, "run_") {
			t.Errorf("%s: another principal's channel of the same id carried the owner's runs:\n%s", formats[i], raw)
		}
	}
}
