package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// corpusBodies returns the JSON bodies of the captured SDK requests in dir,
// skipping the test when the corpus is not beside the checkout.
func corpusBodies(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "corpus", dir, "*.http"))
	if len(files) == 0 {
		t.Skipf("no corpus at ../shared/corpus/%s", dir)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, body, ok := bytes.Cut(b, []byte("\r\n\r\n"))
		if !ok {
			_, body, ok = bytes.Cut(b, []byte("\n\n"))
		}
		if !ok {
			t.Fatalf("%s: no body", f)
		}
		out[filepath.Base(f)] = body
	}
	return out
}

// TestCorpusThroughBridge sends every request the official openai SDK was
// captured sending through the bridge to an OpenAI upstream: the upstream
// receives the same request (apart from the stream fields the bridge always
// sets), and a field the bridge does not know passes through too.
func TestCorpusThroughBridge(t *testing.T) {
	up := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-1", Model: "gpt-4o-mini"}
		return openaitest.Reply{Chunks: c.Role().Text("hi").Finish("stop").Usage(1, 1).List()}
	})
	t.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL()}}
	m := startMain(t, cfg)

	bodies := corpusBodies(t, "openai-chat/client")
	bodies["unknown-field"] = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x","x_extra":{"a":1}}],"x_vendor_knob":[1,2]}`)
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			before := len(up.Requests())
			resp, err := http.Post("http://"+m.Addr()+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var answer bytes.Buffer
			_, _ = answer.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, answer.String())
			}
			if !strings.Contains(answer.String(), `"hi"`) {
				t.Errorf("answer does not carry the upstream's text: %s", answer.String())
			}
			reqs := up.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("upstream got %d requests", len(reqs)-before)
			}
			var sent, got map[string]any
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(reqs[before].Body, &got); err != nil {
				t.Fatal(err)
			}
			if got["stream"] != true {
				t.Errorf("upstream request is not streamed: %v", got["stream"])
			}
			for _, k := range []string{"stream", "stream_options"} {
				delete(sent, k)
				delete(got, k)
			}
			if diff := cmp.Diff(sent, got); diff != "" {
				t.Errorf("upstream request differs from the client's (-client +upstream):\n%s", diff)
			}
		})
	}
}
