package anthropic

import (
	"io"
	"testing"

	"github.com/bridge-dev/bridge/mapping/anthropic/anthropictest"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// BenchmarkStreamEncoderText is the hot path of a streamed answer: one text
// delta in, one frame out. It should not allocate.
func BenchmarkStreamEncoderText(b *testing.B) {
	golden.BenchEncodeText(b, NewStreamEncoder(io.Discard, StreamOptions{ID: "msg_bench", Model: "m"}), "run_bench", "a word or two, \"quoted\"")
}

// BenchmarkDecodeStream decodes an upstream stream of 200 text deltas.
func BenchmarkDecodeStream(b *testing.B) {
	ev := &anthropictest.Events{ID: "msg_1", Model: "m"}
	words := make([]string, 200)
	for i := range words {
		words[i] = "word "
	}
	sse := sseOf(ev.Start(10, 0, 0).Text(words...).Delta("end_turn", 200).Stop().List())
	golden.BenchDecode(b, DecodeStream, sse)
}
