package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/mapping/internal/golden"
	"github.com/bridge-dev/bridge/mapping/responses/responsestest"
)

// BenchmarkDecodeStream decodes a Responses stream of 200 text deltas, the
// decoder's hot path.
func BenchmarkDecodeStream(b *testing.B) {
	words := make([]string, 200)
	for i := range words {
		words[i] = "word "
	}
	ev := &responsestest.Events{ID: "resp_1", Model: "m"}
	var sb strings.Builder
	for _, data := range ev.Created().Text(words...).Completed(10, 200).List() {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(data), &head); err != nil {
			b.Fatal(err)
		}
		sb.WriteString("event: " + head.Type + "\ndata: " + data + "\n\n")
	}
	golden.BenchDecode(b, DecodeStream, sb.String())
}
