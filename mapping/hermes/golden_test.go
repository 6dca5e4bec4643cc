package hermes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/bridge-dev/bridge/bridge"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

type archive struct {
	path    string
	a       *txtar.Archive
	changed bool
}

func readArchive(t *testing.T, path string) *archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &archive{path: path, a: a}
}

func (a *archive) file(name string) ([]byte, bool) {
	for _, f := range a.a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func (a *archive) check(t *testing.T, name string, got []byte) {
	t.Helper()
	want, ok := a.file(name)
	if *update {
		if !ok || !bytes.Equal(want, got) {
			a.changed = true
			for i := range a.a.Files {
				if a.a.Files[i].Name == name {
					a.a.Files[i].Data = got
					return
				}
			}
			a.a.Files = append(a.a.Files, txtar.File{Name: name, Data: got})
		}
		return
	}
	if !ok {
		t.Fatalf("%s: no section %q (run go test -update)", a.path, name)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: %s mismatch (-want +got):\n%s", a.path, name, diff)
	}
}

func (a *archive) save(t *testing.T) {
	if a.changed {
		if err := os.WriteFile(a.path, txtar.Format(a.a), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readEvents(t *testing.T, b []byte) []bridge.Event {
	t.Helper()
	var evs []bridge.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev bridge.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events.jsonl: %v: %s", err, line)
		}
		evs = append(evs, ev)
	}
	return evs
}

func writeEvents(t *testing.T, evs []bridge.Event, serr error) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if serr != nil {
		b, _ := json.Marshal(bridge.AsError(serr))
		buf.WriteString("error: ")
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func decodeAll(r *bytes.Reader) ([]bridge.Event, error) {
	var evs []bridge.Event
	for ev, err := range DecodeStream(r) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// TestGoldenEncode encodes events.jsonl with options.json into want.sse,
// then decodes want.sse back and compares it with decoded.jsonl (what of
// the run a Hermes client's stream carries back to the hub).
func TestGoldenEncode(t *testing.T) {
	files, _ := filepath.Glob("testdata/encode_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := readArchive(t, path)
			in, _ := a.file("events.jsonl")
			var opt StreamOptions
			if b, ok := a.file("options.json"); ok {
				if err := json.Unmarshal(b, &opt); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			enc := NewStreamEncoder(&out, opt)
			for _, ev := range readEvents(t, in) {
				if err := enc.Encode(&ev); err != nil {
					t.Fatal(err)
				}
			}
			a.check(t, "want.sse", out.Bytes())
			evs, err := decodeAll(bytes.NewReader(out.Bytes()))
			a.check(t, "decoded.jsonl", writeEvents(t, evs, err))
			if d := enc.Dropped(); len(d) > 0 {
				a.check(t, "dropped.txt", []byte(strings.Join(d, "\n")+"\n"))
			}
			a.save(t)
		})
	}
}

// TestGoldenDecode decodes a Hermes server's stream (upstream.sse) into
// events.jsonl.
func TestGoldenDecode(t *testing.T) {
	files, _ := filepath.Glob("testdata/decode_*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a := readArchive(t, path)
			in, _ := a.file("upstream.sse")
			if strings.Contains(path, "crlf") {
				in = bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
			}
			evs, err := decodeAll(bytes.NewReader(in))
			a.check(t, "events.jsonl", writeEvents(t, evs, err))
			a.save(t)
		})
	}
}

// TestEncoderResume: frames after a cursor are the same bytes as the tail
// of the whole stream, in a run continued after its client's tool results
// too.
func TestEncoderResume(t *testing.T) {
	for _, name := range []string{"encode_tool_loop", "encode_tool_continue"} {
		a := readArchive(t, "testdata/"+name+".txtar")
		in, _ := a.file("events.jsonl")
		evs := readEvents(t, in)
		var whole bytes.Buffer
		enc := NewStreamEncoder(&whole, StreamOptions{SessionID: "s-1", UserMessage: "weather?"})
		for _, ev := range evs {
			_ = enc.Encode(&ev)
		}
		frames := strings.SplitAfter(whole.String(), "\n\n")
		for after := 0; after <= int(enc.Seq()); after++ {
			var tail bytes.Buffer
			e2 := NewStreamEncoder(&tail, StreamOptions{SessionID: "s-1", UserMessage: "weather?", After: int64(after)})
			for _, ev := range evs {
				_ = e2.Encode(&ev)
			}
			if want := strings.Join(frames[after:], ""); tail.String() != want {
				t.Errorf("%s after %d: got\n%s\nwant\n%s", name, after, tail.String(), want)
			}
		}
	}
}
