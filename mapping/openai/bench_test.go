package openai

import (
	"io"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// BenchmarkStreamEncoder measures one text_delta frame, the common case of
// a streamed answer.
func BenchmarkStreamEncoder(b *testing.B) {
	enc := NewStreamEncoder(io.Discard, StreamOptions{ID: "chatcmpl-bench", Model: "gpt-bench", Created: 1700000000, IncludeUsage: true})
	ev := bridge.Event{RunID: "run_0123456789", Kind: bridge.KindMessageStarted, Source: bridge.SourceModel}
	if err := enc.Encode(&ev); err != nil {
		b.Fatal(err)
	}
	ev.Kind, ev.Text = bridge.KindTextDelta, "Hello, \"world\" — a token or two\n"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev.Seq = int64(i + 2)
		if err := enc.Encode(&ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStream measures decoding an upstream text stream, per
// chunk.
func BenchmarkDecodeStream(b *testing.B) {
	var sb strings.Builder
	const n = 100
	for range n {
		sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1760000000,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"tok "},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	}
	sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1760000000,"model":"gpt-x","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\ndata: [DONE]\n\n")
	in := sb.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		for _, err := range DecodeStream(strings.NewReader(in)) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
