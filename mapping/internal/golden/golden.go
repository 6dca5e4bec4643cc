// Package golden reads and rewrites the txtar golden files of the codec
// tests: each archive holds named sections (an upstream stream, the events
// it decodes to, the frames they encode to); a test compares what it
// produced with a section, and `go test -update` rewrites the sections.
// It is for tests only.
package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/bridge-dev/bridge/bridge"
)

// Update is the -update flag of every test binary that imports golden.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Archive is one txtar golden file.
type Archive struct {
	Path    string
	A       *txtar.Archive
	changed bool
}

// Read parses the golden file at path.
func Read(t testing.TB, path string) *Archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &Archive{Path: path, A: a}
}

// Directive returns the value of the comment line "name: value", "" when
// there is none.
func (a *Archive) Directive(name string) string {
	for _, l := range strings.Split(string(a.A.Comment), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Flag reports whether the comment has the line "name: yes".
func (a *Archive) Flag(name string) bool { return a.Directive(name) == "yes" }

// File returns the section called name.
func (a *Archive) File(name string) ([]byte, bool) {
	for _, f := range a.A.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// Check compares got with the section name; with -update it rewrites it.
func (a *Archive) Check(t testing.TB, name string, got []byte) {
	t.Helper()
	want, ok := a.File(name)
	if *Update {
		if !ok || !bytes.Equal(want, got) {
			a.Set(name, got)
		}
		return
	}
	if !ok {
		t.Errorf("%s: no section %q (run go test -update)", a.Path, name)
		return
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: %s mismatch (-want +got):\n%s", a.Path, name, diff)
	}
}

// Set replaces (or adds) the section name.
func (a *Archive) Set(name string, data []byte) {
	a.changed = true
	for i := range a.A.Files {
		if a.A.Files[i].Name == name {
			a.A.Files[i].Data = data
			return
		}
	}
	a.A.Files = append(a.A.Files, txtar.File{Name: name, Data: data})
}

// Write saves the archive when -update changed it.
func (a *Archive) Write(t testing.TB) {
	t.Helper()
	if *Update && a.changed {
		if err := os.WriteFile(a.Path, txtar.Format(a.A), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Marshal renders v as JSON without HTML escaping, followed by a newline.
func Marshal(t testing.TB, v any, indent bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Collect ranges over a stream. An error the stream ends with is recorded as
// a last event of kind error (source bridge), as the engine reports it; an
// error that is not a *bridge.Error, or an event after an error, fails t.
func Collect(t testing.TB, s bridge.Stream) (events []bridge.Event, err error) {
	t.Helper()
	for ev, e := range s {
		if err != nil {
			t.Fatalf("event after error %v: %+v", err, ev)
		}
		if e != nil {
			var be *bridge.Error
			if !errors.As(e, &be) {
				t.Fatalf("stream error %T %v is not a *bridge.Error", e, e)
			}
			err = e
			events = append(events, bridge.Event{Kind: bridge.KindError, Source: bridge.SourceBridge, Error: be})
			continue
		}
		events = append(events, ev)
	}
	return events, err
}

// SameAsJSON is the oracle of a fast decoding path: when fast takes data
// (reports true), data must be JSON that json.Unmarshal takes too, into
// exactly the same value.
func SameAsJSON[T any](t *testing.T, data []byte, fast func([]byte, *T) bool) {
	t.Helper()
	var got T
	if !fast(data, &got) {
		return
	}
	var want T
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("the fast path took %q, json.Unmarshal refuses it: %v", data, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the fast path's %q differs from json.Unmarshal's (-json +fast):\n%s", data, diff)
	}
}
