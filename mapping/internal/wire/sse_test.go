package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []SSEEvent
	}{
		{"lf", "data: a\n\ndata: b\n\n", []SSEEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []SSEEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"cr", "data: a\r\rdata: b\r\r", []SSEEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"no space", "data:a\n\n", []SSEEvent{{Data: []byte("a")}}},
		{"two spaces", "data:  a\n\n", []SSEEvent{{Data: []byte(" a")}}},
		{"multi-line", "data: a\ndata: b\ndata:\n\n", []SSEEvent{{Data: []byte("a\nb\n")}}},
		{"comments and ids", ": hi\nid: 1\nretry: 5\ndata: a\n\n:bye\n\n", []SSEEvent{{ID: "1", Data: []byte("a")}}},
		{"event name", "event: error\ndata: x\n\ndata: y\n\n", []SSEEvent{{Name: "error", Data: []byte("x")}, {Data: []byte("y")}}},
		{"no trailing blank line", "data: a", []SSEEvent{{Data: []byte("a")}}},
		{"event without data", "event: ping\n\ndata: a\n\n", []SSEEvent{{Data: []byte("a")}}},
		{"field without colon", "data\n\n", []SSEEvent{{Data: []byte("")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, NewSSEReader(strings.NewReader(tt.in)))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSSEReaderOptions: KeepID carries the last id to the events after it
// (an id with a NUL is ignored), and MaxEvent bounds an event's joined
// data, not only a line.
func TestSSEReaderOptions(t *testing.T) {
	r := NewSSEReaderOptions(strings.NewReader("id: 1\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid:\ndata: d\n\n"), SSEOptions{KeepID: true})
	var ids []string
	for _, ev := range readAll(t, r) {
		ids = append(ids, ev.ID)
	}
	if diff := cmp.Diff([]string{"1", "1", "1", ""}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}

	r = NewSSEReaderOptions(strings.NewReader("data: 12345\ndata: 67890\n\n"), SSEOptions{MaxEvent: 8, Who: "upstream agent"})
	if _, err := r.Next(); err == nil || !strings.HasSuffix(err.Error(), "upstream agent: an SSE event longer than 8 bytes") {
		t.Errorf("an event over MaxEvent: %v", err)
	}
	r = NewSSEReader(strings.NewReader("data: " + strings.Repeat("a", MaxLine) + "\n\n"))
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "upstream stream: an SSE line longer than") {
		t.Errorf("a line over MaxLine: %v", err)
	}
}

// readAll reads r's events to its end; a read error fails t.
func readAll(t *testing.T, r *SSEReader) []SSEEvent {
	t.Helper()
	var got []SSEEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		ev.Data = bytes.Clone(ev.Data)
		got = append(got, ev)
	}
}
