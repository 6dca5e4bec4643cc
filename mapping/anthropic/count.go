package anthropic

import (
	"github.com/bridge-dev/bridge/bridge"
)

// Token estimate constants; see EstimateInputTokens.
const (
	estBytesPerToken = 3.5  // UTF-8 bytes per token of text and JSON
	estPerMessage    = 4    // role and framing of each message
	estPerTool       = 10   // framing of each tool definition
	estToolPrompt    = 300  // the tool-use instructions a provider adds when tools are declared
	estPerImage      = 1600 // an image or document of unknown size
)

// EstimateInputTokens estimates the input tokens of req without a
// tokenizer, for count_tokens over an upstream that cannot count. The method:
// every text the model reads (system and message text, reasoning, tool-call
// names and arguments, tool results, tool names, descriptions and schemas,
// opaque blocks as their JSON) is counted at one token per 3.5 UTF-8 bytes,
// rounded up; each message adds 4 tokens and each tool 10; declaring any
// tool adds 300 (the tool-use instructions providers prepend); each image
// or document adds 1600 (about a one-megapixel image; the size is not
// decoded). Claude's tokenizer averages about 3.5 English characters per
// token, so the estimate is close for English prose and errs high for code
// and JSON; it is never below 1.
func EstimateInputTokens(req *bridge.Request) int64 {
	if req == nil {
		return 1
	}
	var bytes, fixed int64
	parts := func(ps []bridge.Part) {
		for i := range ps {
			p := &ps[i]
			switch p.Type {
			case bridge.PartImage, bridge.PartFile, bridge.PartAudio:
				fixed += estPerImage
			case bridge.PartData:
				bytes += int64(len(p.JSON))
			case bridge.PartOpaque:
				if p.Opaque != nil {
					bytes += int64(len(p.Opaque.Data))
				}
			default:
				bytes += int64(len(p.Text))
			}
		}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		fixed += estPerMessage
		parts(m.Parts)
		for j := range m.ToolCalls {
			bytes += int64(len(m.ToolCalls[j].Name) + len(m.ToolCalls[j].Arguments))
		}
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		fixed += estPerTool
		bytes += int64(len(t.Name) + len(t.Description) + len(t.Parameters))
	}
	if len(req.Tools) > 0 {
		fixed += estToolPrompt
	}
	n := fixed + int64(float64(bytes)/estBytesPerToken+0.999999)
	return max(n, 1)
}
