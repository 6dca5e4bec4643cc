package openai

import (
	"io"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// BenchmarkStreamEncoder measures one text_delta frame, the common case of
// a streamed answer.
func BenchmarkStreamEncoder(b *testing.B) {
	enc := NewStreamEncoder(io.Discard, StreamOptions{ID: "chatcmpl-bench", Model: "gpt-bench", Created: 1700000000, IncludeUsage: true})
	golden.BenchEncodeText(b, enc, "run_0123456789", "Hello, \"world\" — a token or two\n")
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
	golden.BenchDecode(b, DecodeStream, sb.String())
}
