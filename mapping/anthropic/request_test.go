package anthropic

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// corpusFiles returns the body of every request of the official SDK
// captured in the repo's testdata/corpus, by file.
func corpusFiles(tb testing.TB) map[string][]byte {
	return golden.CorpusBodies(tb, "anthropic/client/*.http")
}

// TestCorpusRoundTrip: every captured SDK request decodes without loss;
// decoding what EncodeRequest makes of it gives the same request; and the
// encoded body has every key of the original with an equal value (apart
// from stream, which the bridge always sets).
func TestCorpusRoundTrip(t *testing.T) {
	bodies := corpusFiles(t)
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			count := strings.Contains(name, "count-tokens")
			decode, encode := DecodeRequest, func(r *bridge.Request) ([]byte, []string, error) { return EncodeRequest(r, EncodeOptions{}) }
			if count {
				decode, encode = DecodeCountTokens, EncodeCountTokens
			}
			out := golden.SDKRoundTrip(t, body, decode, encode, withoutStream)
			m := golden.JSONObjects(t, body, out)
			orig, enc := m[0], m[1]
			delete(orig, "stream")
			delete(enc, "stream")
			if diff := cmp.Diff(orig, enc); diff != "" {
				t.Errorf("encoded body differs from the SDK's (-sdk +encoded):\n%s", diff)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
		code             bridge.Code
	}{
		{"empty", ``, "request body: empty", bridge.CodeInvalid},
		{"not object", `[1]`, "request body: expected object, got array", bridge.CodeInvalid},
		{"bad json", `{"model":`, "request body: invalid JSON", bridge.CodeInvalid},
		{"no model", `{"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, "model: Field required", bridge.CodeInvalid},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens: Field required", bridge.CodeInvalid},
		{"null max_tokens", `{"model":"m","max_tokens":null,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: Field required", bridge.CodeInvalid},
		{"zero max_tokens", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: must be at least 1", bridge.CodeInvalid},
		{"string max_tokens", `{"model":"m","max_tokens":"9","messages":[{"role":"user","content":"x"}]}`, "max_tokens: expected integer, got string", bridge.CodeInvalid},
		{"no messages", `{"model":"m","max_tokens":1}`, "messages: Field required", bridge.CodeInvalid},
		{"empty messages", `{"model":"m","max_tokens":1,"messages":[]}`, "messages: at least one message is required", bridge.CodeInvalid},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, `messages[0].role: unexpected role "tool"`, bridge.CodeInvalid},
		{"no content", `{"model":"m","max_tokens":1,"messages":[{"role":"user"}]}`, "messages[0].content: Field required", bridge.CodeInvalid},
		{"block without type", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type: Field required", bridge.CodeInvalid},
		{"tool_use in user", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]}`, "belongs in an assistant message", bridge.CodeInvalid},
		{"tool_result in assistant", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`, "belongs in a user message", bridge.CodeInvalid},
		{"input not object", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":"{}"}]}]}`, "input: expected object, got string", bridge.CodeInvalid},
		{"bad system", `{"model":"m","max_tokens":1,"system":[{"type":"image"}],"messages":[{"role":"user","content":"x"}]}`, `system[0].type: expected "text"`, bridge.CodeInvalid},
		{"tool without schema", `{"model":"m","max_tokens":1,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"}]}`, "tools[0].input_schema: Field required", bridge.CodeInvalid},
		{"bad tool_choice", `{"model":"m","max_tokens":1,"tool_choice":{"type":"maybe"},"messages":[{"role":"user","content":"x"}]}`, `tool_choice.type: unknown value "maybe"`, bridge.CodeInvalid},
		{"image without source", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, "source: Field required", bridge.CodeInvalid},
		{"too deep", `{"model":"m","max_tokens":1,"messages":[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `]}`, "nested deeper", bridge.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			golden.WantError(t, err, tt.code, tt.want)
		})
	}
}

// TestCountTokensNeedsNoMaxTokens: count_tokens bodies have no max_tokens;
// Messages fields sent there anyway are listed as dropped.
func TestCountTokensNeedsNoMaxTokens(t *testing.T) {
	req, err := DecodeCountTokens([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024}}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.MaxTokens != nil || len(req.Dropped) != 1 || req.Dropped[0] != "max_tokens" {
		t.Errorf("MaxTokens %v, dropped %v", req.MaxTokens, req.Dropped)
	}
	body, dropped, err := EncodeCountTokens(req)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != `{"model":"m","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":1024}}` || len(dropped) != 0 {
		t.Errorf("EncodeCountTokens = %s, dropped %v", body, dropped)
	}
}

// TestUserMessageSplit: a user message's blocks become tool and user
// messages in their order; the hub's fingerprints of a resent transcript
// are stable (the engine matches them to continue a run).
func TestUserMessageSplit(t *testing.T) {
	body := `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
		{"type":"text","text":"a"},
		{"type":"tool_result","tool_use_id":"t1","content":"r1"},
		{"type":"tool_result","tool_use_id":"t2","is_error":true},
		{"type":"text","text":"b"},
		{"type":"text","text":"c"}]}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+":"+m.ToolCallID+":"+m.Text())
	}
	want := []string{"user::a", "tool:t1:r1", "tool:t2:", "user::bc"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if !req.Messages[2].IsError || req.Messages[1].IsError {
		t.Errorf("is_error not kept")
	}
	again, _ := DecodeRequest([]byte(body))
	for i := range req.Messages {
		if req.Messages[i].Fingerprint() != again.Messages[i].Fingerprint() {
			t.Errorf("message %d fingerprint not stable", i)
		}
	}
}

// TestEncodeRequestRoles: a hub message with a role Messages has no place
// for is an error, not a silent drop.
func TestEncodeRequestRoles(t *testing.T) {
	_, _, err := EncodeRequest(&bridge.Request{Model: "m", Messages: []bridge.Message{{Role: "function"}}}, EncodeOptions{})
	if bridge.ErrorCode(err) != bridge.CodeInvalid {
		t.Errorf("err = %v", err)
	}
	if _, _, err := EncodeRequest(nil, EncodeOptions{}); err == nil {
		t.Error("nil request encoded")
	}
	body, _, err := EncodeRequest(&bridge.Request{Model: "m", Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("x")}}}}, EncodeOptions{MaxTokens: 77})
	if err != nil || !strings.Contains(string(body), `"max_tokens":77`) {
		t.Errorf("configured default max_tokens: %s %v", body, err)
	}
}

func TestEstimateInputTokens(t *testing.T) {
	req, err := DecodeCountTokens([]byte(`{"model":"m","system":"You are terse.","messages":[{"role":"user","content":"Weather in Paris?"}],
		"tools":[{"name":"get_weather","description":"Get the weather","input_schema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// text: "You are terse." 14 + "Weather in Paris?" 17 + tool 11+15+17 = 74
	// bytes -> 22 tokens; 2 messages 8; 1 tool 10; tool prompt 300.
	if got := EstimateInputTokens(req); got != 340 {
		t.Errorf("estimate = %d, want 340", got)
	}
	if got := EstimateInputTokens(&bridge.Request{}); got != 1 {
		t.Errorf("empty estimate = %d, want 1", got)
	}
	img := &bridge.Request{Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{{Type: bridge.PartImage, Data: strings.Repeat("A", 100000)}}}}}
	if got := EstimateInputTokens(img); got != 1604 {
		t.Errorf("image estimate = %d, want 1604 (the base64 bytes are not text)", got)
	}
}
