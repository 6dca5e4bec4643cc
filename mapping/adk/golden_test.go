package adk

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/bridge-dev/bridge/bridge"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func section(a *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// check compares a section with got, or rewrites it with -update.
func check(t *testing.T, path string, a *txtar.Archive, name string, got []byte, changed *bool) {
	t.Helper()
	want, ok := section(a, name)
	if *update {
		if !ok || !bytes.Equal(want, got) {
			*changed = true
			for i := range a.Files {
				if a.Files[i].Name == name {
					a.Files[i].Data = got
					return
				}
			}
			a.Files = append(a.Files, txtar.File{Name: name, Data: got})
		}
		return
	}
	if !ok {
		t.Fatalf("%s: no section %q (run go test -update)", path, name)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: %s mismatch (-want +got):\n%s", path, name, diff)
	}
}

func jsonl(t *testing.T, evs []bridge.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, ev := range evs {
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// splitHTTP splits a captured response into its status and body.
func splitHTTP(t *testing.T, raw []byte) (int, []byte) {
	t.Helper()
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("no header end in the capture")
	}
	f := strings.Fields(string(bytes.SplitN(head, []byte("\r\n"), 2)[0]))
	st, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return st, body
}

// encodeRun numbers decoded events as the engine would and encodes them
// back into ADK events, streaming.
func encodeRun(evs []bridge.Event) []byte {
	enc := NewStreamEncoder(StreamOptions{Author: "scripted", Streaming: true})
	var b []byte
	t0 := time.UnixMilli(1796202265000).UTC()
	for i, ev := range evs {
		ev.RunID, ev.Seq, ev.Time = "run_test", int64(i+2), t0.Add(time.Duration(i)*time.Millisecond)
		for _, o := range enc.Encode(&ev) {
			b, _ = AppendSSE(b, &o)
		}
	}
	return append(b, Done...)
}

// TestGolden decodes every captured answer of the real ADK-JS api_server
// (testdata/decode_*.txtar, copied from the corpus) into events, and
// encodes those events back into the frames the bridge's inbound side
// writes for them.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/decode_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			var evs []bridge.Event
			switch {
			case has(a, "upstream.sse"):
				raw, _ := section(a, "upstream.sse")
				for ev, err := range DecodeStream(bytes.NewReader(raw)) {
					if err != nil {
						t.Fatal(err)
					}
					evs = append(evs, ev)
				}
			case has(a, "upstream.json"):
				raw, _ := section(a, "upstream.json")
				if evs, err = DecodeEvents(bytes.TrimSpace(raw)); err != nil {
					t.Fatal(err)
				}
			case has(a, "upstream.http"):
				raw, _ := section(a, "upstream.http")
				st, body := splitHTTP(t, raw)
				if st/100 == 2 {
					// A 200 SSE answer (a problem with newMessage).
					for ev, err := range DecodeStream(bytes.NewReader(body)) {
						if err != nil {
							t.Fatal(err)
						}
						evs = append(evs, ev)
					}
					break
				}
				e := DecodeError(st, body)
				check(t, path, a, "error.json", append(mustJSON(t, e), '\n'), &changed)
			}
			if len(evs) > 0 {
				if last := evs[len(evs)-1]; last.Kind != bridge.KindFinal {
					t.Errorf("the events do not end with a final: %+v", last)
				}
				check(t, path, a, "events.jsonl", jsonl(t, evs), &changed)
				check(t, path, a, "want.sse", encodeRun(evs), &changed)
			}
			if *update && changed {
				if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func has(a *txtar.Archive, name string) bool { _, ok := section(a, name); return ok }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shape is the JSON type of every key of an object.
func shape(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for k, v := range o {
		switch v[0] {
		case '{':
			m[k] = "object"
		case '[':
			m[k] = "array"
		case '"':
			m[k] = "string"
		case 't', 'f':
			m[k] = "bool"
		default:
			m[k] = "number"
		}
	}
	return m
}

// TestShapes checks that the events the encoder writes for a captured
// flow have the field names and JSON types of the real server's events
// (partial and complete alike).
func TestShapes(t *testing.T) {
	for _, name := range []string{"run-sse-streaming-true", "run-sse-thought", "run-sse-function-tool", "run-sse-model-error"} {
		t.Run(name, func(t *testing.T) {
			a, err := txtar.ParseFile("testdata/decode_" + name + ".txtar")
			if err != nil {
				t.Fatal(err)
			}
			real, _ := section(a, "upstream.sse")
			ours, _ := section(a, "want.sse")
			kinds := func(sse []byte) map[string]map[string]string {
				out := map[string]map[string]string{}
				for _, l := range bytes.Split(sse, []byte("\n")) {
					d, ok := bytes.CutPrefix(l, []byte("data: "))
					if !ok || string(d) == "[DONE]" {
						continue
					}
					s := shape(t, d)
					kind := "complete"
					switch {
					case s["partial"] != "":
						kind = "partial"
					case s["errorCode"] != "":
						kind = "error"
					case bytes.Contains(d, []byte(`"functionResponse"`)):
						kind = "response"
					}
					if out[kind] == nil {
						out[kind] = s
					}
				}
				return out
			}
			rk, ok := kinds(real), kinds(ours)
			for kind, want := range rk {
				got := ok[kind]
				if got == nil {
					t.Errorf("no %s event in the bridge's frames", kind)
					continue
				}
				for k, typ := range want {
					if got[k] != typ {
						t.Errorf("%s event: key %q is %q in the bridge's frames, %q in the real server's", kind, k, got[k], typ)
					}
				}
				var extra []string
				for k := range got {
					if want[k] == "" {
						extra = append(extra, k)
					}
				}
				slices.Sort(extra)
				if len(extra) > 0 && kind != "complete" {
					t.Logf("%s event: the bridge adds %v", kind, extra)
				}
			}
		})
	}
}
