package golden

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Corpus returns the captured files matching pattern under the repo's
// testdata/corpus (real wire captures with their provenance), by their path
// there. None is a failure: a pattern that matches nothing tests nothing.
func Corpus(tb testing.TB, pattern string) map[string][]byte {
	tb.Helper()
	root := filepath.Join("..", "..", "testdata", "corpus")
	files, _ := filepath.Glob(filepath.Join(root, pattern))
	if len(files) == 0 {
		tb.Fatalf("no captures match testdata/corpus/%s", pattern)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		out[filepath.ToSlash(name)] = b
	}
	return out
}

// CorpusBodies returns the bodies of the captured HTTP messages matching
// pattern, by their path under testdata/corpus.
func CorpusBodies(tb testing.TB, pattern string) map[string][]byte {
	tb.Helper()
	out := Corpus(tb, pattern)
	for name, b := range out {
		out[name] = HTTPBody(b)
	}
	return out
}

// InOrder returns m's values in the order of their names, so seeds and
// cases come in a stable order.
func InOrder(m map[string][]byte) [][]byte {
	out := make([][]byte, 0, len(m))
	for _, k := range wire.SortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// HTTPBody is the body of a captured HTTP message: what follows the first
// blank line (CRLF, or LF in a capture written by hand).
func HTTPBody(b []byte) []byte {
	if _, body, ok := bytes.Cut(b, []byte("\r\n\r\n")); ok {
		return body
	}
	_, body, _ := bytes.Cut(b, []byte("\n\n"))
	return body
}

// Seeds adds to f the section name of every golden file in testdata
// matching pattern, and with crlf its CRLF form too.
func Seeds(f *testing.F, pattern, name string, crlf bool) {
	files, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, path := range files {
		if b, ok := Read(f, path).File(name); ok {
			f.Add(b)
			if crlf {
				f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
			}
		}
	}
}

// Refused reports whether a codec refused its input (err is set), failing
// t when the error is not a *bridge.Error: bad input is answered in the
// caller's dialect, never with Go's own error text.
func Refused(t testing.TB, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var be *bridge.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %T %v is not a *bridge.Error", err, err)
	}
	return true
}

// Drain ranges over a stream: its events, and the *bridge.Error it ended
// with, if any. An error that is not a *bridge.Error, or an event after an
// error, fails t.
func Drain(t testing.TB, s bridge.Stream) (events []bridge.Event, failed *bridge.Error) {
	t.Helper()
	for ev, err := range s {
		if failed != nil {
			t.Fatalf("event after error %v: %+v", failed, ev)
		}
		if Refused(t, err) {
			failed = bridge.AsError(err)
			continue
		}
		events = append(events, ev)
	}
	return events, failed
}
