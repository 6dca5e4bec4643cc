package main

// What the dialects' client drivers share: the first steps of observing a
// recorded response (a driver's send), a raw streamed request read frame
// by frame (a driver's open), a run's replay read to its end (a driver's
// events), and the report of a stream validator's findings. What a dialect
// sends, and how its stream is validated, stays with its driver.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// recorded is the response the recording client saw: an observation of
// its status, header, run and X-Session-Id, and its body.
func recorded(t *testing.T, rec *capture) (*observation, []byte) {
	t.Helper()
	status, header, body := rec.snapshot()
	if header == nil {
		t.Fatalf("no response was recorded")
	}
	return &observation{status: status, header: header, runID: header.Get("X-Run-Id"), sessionID: header.Get("X-Session-Id")}, body
}

// observeErrorResponse puts an error response into obs.err: its JSON body,
// as the dialect's parse reads it, and its status.
func observeErrorResponse(t *testing.T, obs *observation, body []byte, parse func([]byte) (*wireError, error)) {
	t.Helper()
	if ct := obs.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error response Content-Type %q, want application/json", ct)
	}
	e, err := parse(body)
	if err != nil {
		t.Errorf("error response: %v: %s", err, body)
		e = &wireError{}
	}
	e.status = obs.status
	obs.err = e
}

// bodyFrames reads the frames of a whole stream body, at most n (0 for
// any number).
func bodyFrames(t *testing.T, body []byte, n int) []frame {
	t.Helper()
	frames, err := readFrames(bufio.NewReader(bytes.NewReader(body)), n)
	if err != nil {
		t.Errorf("stream: %v", err)
	}
	return frames
}

// streamBody is params, an SDK's request parameters, as a JSON body with
// "stream": true.
func streamBody(t *testing.T, params any) []byte {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	body["stream"] = true
	raw, _ = json.Marshal(body)
	return raw
}

// postStream POSTs the JSON body to path, with header (name, value pairs)
// and, when session is set, X-Session-Id; it reads the answer as liveSSE
// does, passing over the frames skip names.
func postStream(ctx context.Context, t *testing.T, b *bridgeUT, path string, body []byte, session string, skip func(frame) bool, header ...string) (*liveStream, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if session != "" {
		req.Header.Set("X-Session-Id", session)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("POST %s: %v", path, err)
	}
	return liveSSE(t, "POST "+path, resp, cancel, skip)
}

// liveSSE begins reading resp, the answer to the streamed request what
// that cancel aborts, frame by frame. It fails t unless the status is 200,
// and drops the stream when t ends. skip, when set, passes over frames
// that are no event of the run. The caller sets ls.drop, which calls the
// returned drop (cancel the request, close the body) and validates what
// was read.
func liveSSE(t *testing.T, what string, resp *http.Response, cancel context.CancelFunc, skip func(frame) bool) (*liveStream, func()) {
	t.Helper()
	drop := func() { cancel(); resp.Body.Close() }
	t.Cleanup(drop)
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		t.Fatalf("%s: status %d: %s", what, resp.StatusCode, msg)
	}
	ls := &liveStream{status: resp.StatusCode, header: resp.Header, runID: resp.Header.Get("X-Run-Id")}
	r := bufio.NewReader(resp.Body)
	ls.next = func(t *testing.T) frame {
		t.Helper()
		for {
			f, err := readFrame(r)
			if err != nil {
				t.Fatalf("reading frame %d: %v", len(ls.frames)+1, err)
			}
			if skip != nil && skip(f) {
				continue
			}
			ls.frames = append(ls.frames, f)
			return f
		}
	}
	return ls, drop
}

// observation is what was read of the live stream: its status and header,
// its run, the session its sessionHeader names, and the frames.
func (ls *liveStream) observation(sessionHeader string) *observation {
	return &observation{status: ls.status, header: ls.header, runID: ls.runID,
		sessionID: ls.header.Get(sessionHeader), frames: ls.frames}
}

// text renders exactly the frames read back as SSE (the reader may have
// buffered more), for a validator that reads a body.
func (ls *liveStream) text() []byte {
	var b bytes.Buffer
	for _, f := range ls.frames {
		b.WriteString(frameText(f))
	}
	return b.Bytes()
}

// frameText renders a frame read by readFrame back as SSE.
func frameText(f frame) string {
	var b strings.Builder
	if f.hasID {
		b.WriteString("id: " + f.id + "\n")
	}
	for _, o := range f.other {
		b.WriteString(o + "\n")
	}
	for _, d := range f.data {
		b.WriteString("data: " + d + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// getEvents GETs /v1/runs/{run}/events, after lastEventID when it is set.
// It fails t unless the answer is 200, and checks that it is an event
// stream; the caller closes the body.
func getEvents(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/runs/"+runID+"/events", nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatalf("GET events of %s: %v", runID, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		t.Fatalf("GET events of %s after %q: status %d: %s", runID, lastEventID, resp.StatusCode, msg)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("events Content-Type %q, want text/event-stream", ct)
	}
	return resp
}

// readReplay reads the frames of resp, a replay of the run (the request
// what), to its end: 64 MiB and maxFrames frames at most.
func readReplay(t *testing.T, what string, resp *http.Response, runID string) *observation {
	t.Helper()
	frames, err := readFrames(bufio.NewReader(io.LimitReader(resp.Body, 64<<20)), maxFrames)
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
	return &observation{status: resp.StatusCode, header: resp.Header, runID: runID, frames: frames}
}

// reportStream fails t with each problem the named stream's validator
// found, and then logs the stream's frames once.
func reportStream(t *testing.T, name string, obs *observation, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", name, p)
	}
	if len(problems) > 0 {
		var all strings.Builder
		for _, f := range obs.frames {
			fmt.Fprintf(&all, "  %s\n", f)
		}
		t.Logf("the stream:\n%s", all.String())
	}
}
