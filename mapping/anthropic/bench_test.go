package anthropic

import (
	"io"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/anthropic/anthropictest"
)

// BenchmarkStreamEncoderText is the hot path of a streamed answer: one text
// delta in, one frame out. It should not allocate.
func BenchmarkStreamEncoderText(b *testing.B) {
	enc := NewStreamEncoder(io.Discard, StreamOptions{ID: "msg_bench", Model: "m"})
	_ = enc.Encode(&bridge.Event{RunID: "run_bench", Seq: 1, Kind: bridge.KindMessageStarted})
	ev := bridge.Event{RunID: "run_bench", Kind: bridge.KindTextDelta, Text: "a word or two, \"quoted\""}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev.Seq = int64(i + 2)
		if err := enc.Encode(&ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStream decodes an upstream stream of 200 text deltas.
func BenchmarkDecodeStream(b *testing.B) {
	ev := &anthropictest.Events{ID: "msg_1", Model: "m"}
	words := make([]string, 200)
	for i := range words {
		words[i] = "word "
	}
	sse := sseOf(ev.Start(10, 0, 0).Text(words...).Delta("end_turn", 200).Stop().List())
	b.SetBytes(int64(len(sse)))
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range DecodeStream(strings.NewReader(sse)) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
