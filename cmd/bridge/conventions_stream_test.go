package main

// Raw SSE frames for the conventions suite: each frame keeps the exact
// bytes it came in, so "the frames before the cut and the resumed ones
// together equal the uncut stream" is a byte comparison.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sseFrame is one SSE event: its exact bytes (the blank line ending it
// included) and its fields.
type sseFrame struct {
	raw   string
	id    string
	hasID bool
	event string
	data  string // the data lines, joined by "\n"
}

// readSSEFrame reads one frame. Comment-only frames (keep-alives) are
// skipped. It returns io.EOF at a clean end.
func readSSEFrame(br *bufio.Reader) (sseFrame, error) {
	for {
		var f sseFrame
		var raw strings.Builder
		var data []string
		fields := 0
		for {
			line, err := br.ReadString('\n')
			raw.WriteString(line)
			if err != nil {
				if err == io.EOF && raw.Len() == 0 {
					return f, io.EOF
				}
				if err == io.EOF {
					return f, io.ErrUnexpectedEOF
				}
				return f, err
			}
			l := strings.TrimRight(line, "\r\n")
			if l == "" {
				break
			}
			if strings.HasPrefix(l, ":") {
				continue
			}
			fields++
			name, value, _ := strings.Cut(l, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				f.id, f.hasID = value, true
			case "event":
				f.event = value
			case "data":
				data = append(data, value)
			}
		}
		if fields == 0 {
			continue
		}
		f.raw, f.data = raw.String(), strings.Join(data, "\n")
		return f, nil
	}
}

// convStream is a streamed answer, read frame by frame.
type convStream struct {
	resp   *http.Response
	br     *bufio.Reader
	cancel context.CancelFunc
	frames []sseFrame
	err    error // the read error that ended it (nil at a clean end)
	ended  bool
}

// openStream sends the request and checks that a stream answers it.
func openStream(ctx context.Context, t *testing.T, method, url string, body any, header map[string]string) *convStream {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	resp := convSend(ctx, t, method, url, body, header)
	if resp.StatusCode == http.StatusAccepted && convHeaders(ctx)["Prefer"] != "" { // an accepted run: its answer
		s := &convStream{resp: resp, cancel: cancel, ended: true}
		t.Cleanup(s.close)
		return s
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("%s %s: status %d %s: %s", method, url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	s := &convStream{resp: resp, br: bufio.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

// next reads one more frame; false at the end of the stream.
func (s *convStream) next() (sseFrame, bool) {
	if s.ended {
		return sseFrame{}, false
	}
	f, err := readSSEFrame(s.br)
	if err != nil {
		s.ended = true
		if !errors.Is(err, io.EOF) {
			s.err = err
		}
		s.close()
		return f, false
	}
	s.frames = append(s.frames, f)
	return f, true
}

// all reads the stream to its end and returns all its frames.
func (s *convStream) all(t *testing.T) []sseFrame {
	t.Helper()
	for i := 0; i < 100000; i++ {
		if _, ok := s.next(); !ok {
			break
		}
	}
	if s.err != nil {
		t.Errorf("stream: %v (after %d frames)", s.err, len(s.frames))
	}
	return s.frames
}

// until reads frames until cond holds for the frames so far; false when
// the stream ended first.
func (s *convStream) until(cond func([]sseFrame) bool) bool {
	for i := 0; i < 100000; i++ {
		if cond(s.frames) {
			return true
		}
		if _, ok := s.next(); !ok {
			return cond(s.frames)
		}
	}
	return false
}

// close drops the connection (a client that goes away).
func (s *convStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// rawOf is the frames' bytes, in order.
func rawOf(frames []sseFrame) string {
	var b strings.Builder
	for _, f := range frames {
		b.WriteString(f.raw)
	}
	return b.String()
}
