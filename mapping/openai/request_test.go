package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// corpusBodies returns the body of every request of the official SDK
// captured in the repo's testdata/corpus, by file.
func corpusBodies(tb testing.TB) map[string][]byte {
	return golden.CorpusBodies(tb, "openai-chat/client/*.http")
}

// TestCorpusRoundTrip: every captured SDK request decodes; decoding what
// EncodeRequest makes of it gives the same request (apart from the stream
// flags EncodeRequest always sets); and the encoded body has every key of
// the original with an equal JSON value (apart from stream and
// stream_options).
func TestCorpusRoundTrip(t *testing.T) {
	for name, body := range corpusBodies(t) {
		t.Run(name, func(t *testing.T) {
			out := golden.SDKRoundTrip(t, body, DecodeRequest, EncodeRequest, withoutStream)
			m := golden.JSONObjects(t, body, out)
			orig, enc := m[0], m[1]
			for k, v := range orig {
				if k == "stream" || k == "stream_options" {
					continue
				}
				if diff := cmp.Diff(v, enc[k]); diff != "" {
					t.Errorf("key %q (-original +encoded):\n%s", k, diff)
				}
			}
			if enc["stream"] != true {
				t.Errorf("stream = %v, want true", enc["stream"])
			}
			if diff := cmp.Diff(map[string]any{"include_usage": true}, enc["stream_options"]); diff != "" {
				t.Errorf("stream_options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeRequestKeyOrder: the same request with its keys in another
// order decodes the same.
func TestDecodeRequestKeyOrder(t *testing.T) {
	a := `{"model":"m","stream":true,"messages":[{"role":"tool","tool_call_id":"c","content":"x"}],"max_tokens":5,"seed":1}`
	b := `{"seed":1,"max_tokens":5,"messages":[{"content":"x","tool_call_id":"c","role":"tool"}],"stream":true,"model":"m"}`
	ra, err := DecodeRequest([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := DecodeRequest([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ra, rb); diff != "" {
		t.Errorf("(-a +b):\n%s", diff)
	}
}

func TestDecodeRequestMapping(t *testing.T) {
	req, err := DecodeRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],
		"max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"temperature":0,"stop":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &bridge.Request{
		Inbound:      Dialect,
		Model:        "m",
		Messages:     []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}, StringContent: true}},
		Stream:       true,
		IncludeUsage: true,
		MaxTokens:    bridge.Int64(64),
		Temperature:  new(float64),
		Stop:         []string{"x"},
		Extra:        map[string]json.RawMessage{"max_tokens": json.RawMessage("64")},
		ExtraDialect: Dialect,
	}
	if diff := cmp.Diff(want, req); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	deep := `{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`
	tests := []struct {
		name string
		body string
		code bridge.Code
		msg  string // a substring of the message
	}{
		{"empty", ``, bridge.CodeInvalid, "empty"},
		{"invalid json", `{"model":`, bridge.CodeInvalid, "invalid JSON"},
		{"trailing garbage", `{"model":"m"} x`, bridge.CodeInvalid, "invalid JSON"},
		{"not an object", `[1]`, bridge.CodeInvalid, "expected object"},
		{"too deep", deep, bridge.CodeInvalid, "deeper than 64"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, bridge.CodeInvalid, "model: required"},
		{"model not string", `{"model":1,"messages":[]}`, bridge.CodeInvalid, "model: expected string"},
		{"no messages", `{"model":"m"}`, bridge.CodeInvalid, "messages: required"},
		{"empty messages", `{"model":"m","messages":[]}`, bridge.CodeInvalid, "messages: must not be empty"},
		{"messages not array", `{"model":"m","messages":{}}`, bridge.CodeInvalid, "messages: expected array"},
		{"message not object", `{"model":"m","messages":["x"]}`, bridge.CodeInvalid, "messages[0]: expected object"},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, bridge.CodeInvalid, `messages[0].role: unknown role "robot"`},
		{"function role", `{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, bridge.CodeUnsupported, "function"},
		{"content number", `{"model":"m","messages":[{"role":"user","content":5}]}`, bridge.CodeInvalid, "messages[0].content: expected string, array or null"},
		{"part without type", `{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, bridge.CodeInvalid, "messages[0].content[0].type: required"},
		{"text part not string", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, bridge.CodeInvalid, "messages[0].content[0].text: expected string"},
		{"image without url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, bridge.CodeInvalid, "image_url.url: required"},
		{"image with an empty url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]}`, bridge.CodeInvalid, "image_url: empty URL"},
		{"image as an empty string", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":""}]}]}`, bridge.CodeInvalid, "image_url: empty URL"},
		{"tool without call id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, bridge.CodeInvalid, "messages[0].tool_call_id: required"},
		{"tool call args number", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":1}}]}]}`, bridge.CodeInvalid, "messages[0].tool_calls[0].function.arguments"},
		{"custom tool call", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"f","input":"x"}}]}]}`, bridge.CodeUnsupported, "messages[0].tool_calls[0].type"},
		{"n>1", `{"model":"m","messages":[{"role":"user","content":"x"}],"n":2}`, bridge.CodeUnsupported, "n>1 is not supported"},
		{"n not int", `{"model":"m","messages":[{"role":"user","content":"x"}],"n":"2"}`, bridge.CodeInvalid, "n: expected integer"},
		{"custom tool", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"custom","custom":{"name":"b"}}]}`, bridge.CodeUnsupported, "tools[1].type"},
		{"tool without name", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, bridge.CodeInvalid, "tools[0].function.name: required"},
		{"tool parameters array", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a","parameters":[]}}]}`, bridge.CodeInvalid, "tools[0].function.parameters: expected object"},
		{"tool_choice unknown", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"any"}`, bridge.CodeInvalid, "tool_choice"},
		{"tool_choice allowed_tools", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{}}}`, bridge.CodeUnsupported, "tool_choice.type"},
		{"tool_choice without name", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{}}}`, bridge.CodeInvalid, "tool_choice.function.name: required"},
		{"max_tokens float", `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, bridge.CodeInvalid, "max_tokens: expected integer"},
		{"temperature string", `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, bridge.CodeInvalid, "temperature: expected number"},
		{"stream string", `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, bridge.CodeInvalid, "stream: expected boolean"},
		{"include_usage string", `{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":"yes"}}`, bridge.CodeInvalid, "stream_options.include_usage: expected boolean"},
		{"stop number", `{"model":"m","messages":[{"role":"user","content":"x"}],"stop":1}`, bridge.CodeInvalid, "stop: expected string or array"},
		{"stop element", `{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a",1]}`, bridge.CodeInvalid, "stop[1]: expected string"},
		{"metadata value", `{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"a":1}}`, bridge.CodeInvalid, "metadata.a: expected string"},
		{"response_format string", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":"json"}`, bridge.CodeInvalid, "response_format: expected object"},
		{"name number", `{"model":"m","messages":[{"role":"user","name":1,"content":"x"}]}`, bridge.CodeInvalid, "messages[0].name: expected string"},
		{"reasoning number", `{"model":"m","messages":[{"role":"assistant","reasoning_content":1,"content":"x"}]}`, bridge.CodeInvalid, "messages[0].reasoning_content: expected string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("no error; got %+v", req)
			}
			golden.WantError(t, err, tt.code, tt.msg)
		})
	}
}

func TestDepthLimit(t *testing.T) {
	nest := func(n int) string {
		return `{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`
	}
	if _, err := DecodeRequest([]byte(nest(64))); err != nil {
		t.Errorf("64 levels: %v", err)
	}
	if _, err := DecodeRequest([]byte(nest(65))); bridge.ErrorCode(err) != bridge.CodeInvalid {
		t.Errorf("65 levels: %v, want invalid", err)
	}
	// Brackets inside strings do not count.
	s := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`[{\"`, 100) + `"}]}`
	if _, err := DecodeRequest([]byte(s)); err != nil {
		t.Errorf("brackets in a string: %v", err)
	}
}

// TestEncodeRequestFidelity covers the choices EncodeRequest makes for
// max tokens and Extra.
func TestEncodeRequestFidelity(t *testing.T) {
	user := []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("x")}, StringContent: true}}
	tests := []struct {
		name    string
		req     bridge.Request
		want    map[string]any // keys that must have these values
		absent  []string
		dropped []string
	}{
		{
			name:   "hub MaxTokens",
			req:    bridge.Request{Model: "m", Messages: user, MaxTokens: bridge.Int64(9)},
			want:   map[string]any{"max_completion_tokens": 9.0},
			absent: []string{"max_tokens"},
		},
		{
			name: "client used max_tokens",
			req: bridge.Request{Model: "m", Messages: user, MaxTokens: bridge.Int64(9),
				Extra: map[string]json.RawMessage{"max_tokens": json.RawMessage("9")}, ExtraDialect: Dialect},
			want:   map[string]any{"max_tokens": 9.0},
			absent: []string{"max_completion_tokens"},
		},
		{
			name: "extra of another dialect",
			req: bridge.Request{Model: "m", Messages: user, MaxTokens: bridge.Int64(9),
				Extra: map[string]json.RawMessage{"max_tokens": json.RawMessage("9"), "thinking": json.RawMessage("{}")}, ExtraDialect: "anthropic"},
			want:    map[string]any{"max_completion_tokens": 9.0},
			absent:  []string{"max_tokens", "thinking"},
			dropped: []string{"param:max_tokens", "param:thinking"},
		},
		{
			name: "extra cannot override",
			req: bridge.Request{Model: "m", Messages: user,
				Extra: map[string]json.RawMessage{"model": json.RawMessage(`"evil"`), "stream": json.RawMessage("false")}, ExtraDialect: Dialect},
			want: map[string]any{"model": "m", "stream": true},
		},
		{
			name: "responses-shaped response_format",
			req: bridge.Request{Inbound: "responses", Model: "m", Messages: user,
				ResponseFormat: json.RawMessage(`{"type":"json_schema","name":"r","schema":{"type":"object"},"strict":true}`)},
			want: map[string]any{"response_format": map[string]any{"type": "json_schema",
				"json_schema": map[string]any{"name": "r", "schema": map[string]any{"type": "object"}, "strict": true}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, dropped, err := EncodeRequest(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if diff := cmp.Diff(v, got[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s present: %s", k, body)
				}
			}
			if diff := cmp.Diff(tt.dropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			if bytes.Count(body, []byte(`"model"`)) != 1 {
				t.Errorf("duplicate key: %s", body)
			}
		})
	}
}

func TestEncodeRequestErrors(t *testing.T) {
	if _, _, err := EncodeRequest(nil); bridge.ErrorCode(err) != bridge.CodeInternal {
		t.Errorf("nil: %v", err)
	}
	_, _, err := EncodeRequest(&bridge.Request{Model: "m", Messages: []bridge.Message{{Role: "robot"}}})
	if bridge.ErrorCode(err) != bridge.CodeInvalid {
		t.Errorf("unknown role: %v", err)
	}
	_, _, err = EncodeRequest(&bridge.Request{Model: "m", Tools: []bridge.Tool{{Name: "f", Parameters: json.RawMessage("{")}}})
	if bridge.ErrorCode(err) != bridge.CodeInvalid {
		t.Errorf("invalid parameters: %v", err)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ slash", "ctl \x00\x01\x1f\t\n\r\b\f", "<html>&", "ü € 😀", "\u2028\u2029", "bad \xff\xfe utf8", "\xe2\x82"} {
		got := wire.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q: invalid JSON %s: %v", s, got, err)
			continue
		}
		want, _ := json.Marshal(s) // encoding/json's reading of the same string
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q: round trip %q, want %q", s, back, wantBack)
		}
	}
}
