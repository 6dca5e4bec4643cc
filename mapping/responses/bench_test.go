package responses

import (
	"io"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// BenchmarkStreamEncoderTextDelta is the cost of one streamed text delta:
// one frame, no allocation once the buffers have grown.
func BenchmarkStreamEncoderTextDelta(b *testing.B) {
	enc := NewStreamEncoder(io.Discard, goldenOptions)
	start := bridge.Event{RunID: goldenRun, Seq: 1, Kind: bridge.KindRunStarted}
	_ = enc.Encode(&start)
	ev := bridge.Event{RunID: goldenRun, Seq: 2, Kind: bridge.KindTextDelta, Text: "hello, "}
	_ = enc.Encode(&ev)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev.Seq++
		if err := enc.Encode(&ev); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 0 {
			// Keep the text the message holds bounded.
			enc.items[len(enc.items)-1].parts[0].text = enc.items[len(enc.items)-1].parts[0].text[:0]
		}
	}
}

// TestTextDeltaAllocs: a text delta allocates nothing once warm.
func TestTextDeltaAllocs(t *testing.T) {
	enc := NewStreamEncoder(io.Discard, goldenOptions)
	start := bridge.Event{RunID: goldenRun, Seq: 1, Kind: bridge.KindRunStarted}
	_ = enc.Encode(&start)
	ev := bridge.Event{RunID: goldenRun, Seq: 2, Kind: bridge.KindTextDelta, Text: "hello, "}
	_ = enc.Encode(&ev)
	// Grow the text buffer first, so append does not reallocate.
	p := enc.items[0].parts[0]
	p.text = append(make([]byte, 0, 1<<20), p.text...)
	n := testing.AllocsPerRun(1000, func() {
		ev.Seq++
		_ = enc.Encode(&ev)
	})
	if n > 0 {
		t.Errorf("%.1f allocations per text delta, want 0", n)
	}
}
