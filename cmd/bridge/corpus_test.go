package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// corpusDir holds the wire captures the repo carries (testdata/corpus,
// with their provenance).
const corpusDir = "../../testdata/corpus"

// TestCorpusProvenance: every capture in testdata/corpus is listed in its
// index.json (copied from the wire corpus) with the size and sha256 it has
// there, so a capture cannot be edited or added without its provenance.
func TestCorpusProvenance(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Files []struct {
			File       string `json:"file"`
			Bytes      int    `json:"bytes"`
			SHA256     string `json:"sha256"`
			ProducedBy string `json:"producedBy"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range index.Files {
		listed[e.File] = true
		b, err := os.ReadFile(filepath.Join(corpusDir, filepath.FromSlash(e.File)))
		if err != nil {
			t.Errorf("%s: listed but %v", e.File, err)
			continue
		}
		sum := sha256.Sum256(b)
		if len(b) != e.Bytes || hex.EncodeToString(sum[:]) != e.SHA256 || e.ProducedBy == "" {
			t.Errorf("%s: %d bytes, sha256 %x; the index says %d, %s, produced by %q", e.File, len(b), sum, e.Bytes, e.SHA256, e.ProducedBy)
		}
	}
	n := 0
	err = filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(path) == corpusDir {
			return err // index.json and README.md sit at the top
		}
		n++
		if rel, _ := filepath.Rel(corpusDir, path); !listed[filepath.ToSlash(rel)] {
			t.Errorf("%s: not in index.json", rel)
		}
		return nil
	})
	if err != nil || n == 0 || n != len(index.Files) {
		t.Fatalf("%d captures, %d listed: %v", n, len(index.Files), err)
	}
}

// corpusBodies returns the JSON bodies of the captured SDK requests in dir.
func corpusBodies(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir, dir, "*.http"))
	if len(files) == 0 {
		t.Fatalf("no captures in %s/%s", corpusDir, dir)
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
