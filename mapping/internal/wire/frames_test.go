package wire

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

func TestFrameIDsNumber(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"none", "data: [DONE]\n\n", "data: [DONE]\n\n"},
		{"one", "id: r:3\ndata: {}\n\n", "id: r:3\ndata: {}\n\n"},
		{"two", "id: r:3\ndata: {\"a\":1}\n\nid: r:3\ndata: {}\n\n",
			"id: r:3.1\ndata: {\"a\":1}\n\nid: r:3\ndata: {}\n\n"},
		{"event line first", "event: a\nid: r:9\ndata: {}\n\nevent: b\nid: r:9\ndata: {}\n\nevent: c\nid: r:9\ndata: {}\n\n",
			"event: a\nid: r:9.1\ndata: {}\n\nevent: b\nid: r:9.2\ndata: {}\n\nevent: c\nid: r:9\ndata: {}\n\n"},
		{"id-less frame last", "id: r:3\ndata: 1\n\nid: r:3\ndata: 2\n\ndata: [DONE]\n\n",
			"id: r:3.1\ndata: 1\n\nid: r:3\ndata: 2\n\ndata: [DONE]\n\n"},
		{"id text in data", "id: r:3\ndata: {\"x\":\"id: r:3\"}\n\n", "id: r:3\ndata: {\"x\":\"id: r:3\"}\n\n"},
	}
	var n FrameIDs
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second time over the swapped buffers
				got := n.Number(append([]byte(nil), tt.in...))
				if string(got) != tt.want {
					t.Fatalf("Number:\n%q\nwant\n%q", got, tt.want)
				}
			}
		})
	}
}

// TestAppendID: the id line is bridge.EventID's, or FrameID's for a frame
// before the event's last; none without a run.
func TestAppendID(t *testing.T) {
	if got := AppendID([]byte("x"), "", 3, 0); string(got) != "x" {
		t.Errorf("no run: %q", got)
	}
	if got, want := string(AppendID(nil, "run_1", 42, 0)), "id: "+bridge.EventID("run_1", 42)+"\n"; got != want {
		t.Errorf("event: %q, want %q", got, want)
	}
	if got, want := string(AppendID([]byte("a"), "run_1", 42, 2)), "aid: "+bridge.FrameID("run_1", 42, 2)+"\n"; got != want {
		t.Errorf("frame: %q, want %q", got, want)
	}
}
