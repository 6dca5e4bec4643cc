package responsestest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// goldenStreams are the Responses streams the bridge's encoder writes, in
// mapping/responses' golden files.
func goldenStreams(t *testing.T) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob("../../../mapping/responses/testdata/*.txtar")
	out := map[string][]byte{}
	for _, f := range files {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range a.Files {
			if s.Name == "want.sse" && !strings.Contains(string(a.Comment), "skip:") {
				out[filepath.Base(f)] = s.Data
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no golden streams")
	}
	return out
}

func TestCheckStreamAcceptsGolden(t *testing.T) {
	for name, sse := range goldenStreams(t) {
		frames, err := ParseFrames(sse)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, problems := CheckStream(frames, Check{RunID: "run_test", Complete: true, Model: "gpt-test"}); len(problems) > 0 {
			t.Errorf("%s: %s", name, strings.Join(problems, "\n  "))
		}
	}
}

func TestCheckStreamRejects(t *testing.T) {
	base, ok := goldenStreams(t)["stream_text.txtar"]
	if !ok {
		t.Fatal("no stream_text")
	}
	frames, _ := ParseFrames(base)
	tests := []struct {
		name   string
		change func([]Frame) []Frame
		want   string
	}{
		{"a delta lost", func(f []Frame) []Frame { return append(f[:5:5], f[6:]...) }, "sequence_number"},
		{"no terminal", func(f []Frame) []Frame { return f[:len(f)-1] }, "terminal"},
		{"DONE", func(f []Frame) []Frame { return append(f, Frame{Data: "[DONE]", Datas: 1}) }, "after the terminal"},
		{"wrong item", func(f []Frame) []Frame {
			f[4].Data = strings.Replace(f[4].Data, `"item_id":"msg_test_0"`, `"item_id":"msg_x"`, 1)
			return f
		}, "names no item"},
		{"wrong output_index", func(f []Frame) []Frame {
			f[4].Data = strings.Replace(f[4].Data, `"output_index":0`, `"output_index":3`, 1)
			return f
		}, "output_index"},
		{"text done differs", func(f []Frame) []Frame {
			f[7].Data = strings.Replace(f[7].Data, `"text":"Hello`, `"text":"Bye`, 1)
			return f
		}, "the deltas made"},
		{"another run's id", func(f []Frame) []Frame { f[3].ID = "run_other:2"; return f }, "not an event id"},
		{"a required member gone", func(f []Frame) []Frame {
			f[0].Data = strings.Replace(f[0].Data, `"top_p":1,`, ``, 1)
			return f
		}, "no top_p"},
		{"type and event differ", func(f []Frame) []Frame { f[2].Event = "response.other"; return f }, "event: line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tt.change(append([]Frame(nil), frames...))
			_, problems := CheckStream(fs, Check{RunID: "run_test", Complete: true})
			if !strings.Contains(strings.Join(problems, "\n"), tt.want) {
				t.Errorf("problems %q, want one about %q", problems, tt.want)
			}
		})
	}
}

func TestCheckResponse(t *testing.T) {
	a, err := txtar.ParseFile("../../../mapping/responses/testdata/stream_parallel_calls.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.Files {
		if f.Name != "response.json" {
			continue
		}
		sum, problems := CheckResponse(f.Data)
		if len(problems) > 0 {
			t.Errorf("problems: %q", problems)
		}
		if sum.Text != "Checking both." || len(sum.Calls) != 2 || sum.Calls[1].CallID != "call_b" {
			t.Errorf("summary %+v", sum)
		}
		bad := bytes.Replace(f.Data, []byte(`"service_tier"`), []byte(`"x_tier"`), 1)
		if _, problems := CheckResponse(bad); len(problems) == 0 {
			t.Errorf("a Response without service_tier passes")
		}
	}
	if _, err := os.Stat("../../../mapping/responses/testdata"); err != nil {
		t.Fatal(err)
	}
}
