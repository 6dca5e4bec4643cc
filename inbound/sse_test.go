package inbound

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// flushCounter is a ResponseWriter that counts flushes and what each sent.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes []string
	pending string
}

func (f *flushCounter) Write(p []byte) (int, error) {
	f.pending += string(p)
	return f.ResponseRecorder.Write(p)
}

func (f *flushCounter) Flush() {
	f.flushes = append(f.flushes, f.pending)
	f.pending = ""
}

// TestBatchWriter: a Batch's writer flushes its first write at once (the
// response becomes a stream), then only when the subscription goes idle,
// with everything written since; a plain SSEWriter flushes every write.
func TestBatchWriter(t *testing.T) {
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	b, _ := NewBatch(context.Background())
	sw := b.Writer(w)
	w.WriteHeader(http.StatusOK)
	for _, s := range []string{"a", "b", "c"} {
		if _, err := sw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	b.flush()
	b.flush() // nothing new: no flush
	sw.Write([]byte("d"))
	b.flush()
	if got, want := w.flushes, []string{"a", "bc", "d"}; !slices.Equal(got, want) {
		t.Errorf("flushes = %q, want %q", got, want)
	}

	w = &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sw = NewSSEWriter(w)
	sw.Write([]byte("a"))
	sw.Write([]byte("b"))
	if got, want := w.flushes, []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("unbatched flushes = %q, want %q", got, want)
	}
	var nb *Batch // a nil Batch writes as NewSSEWriter does
	w = &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sw = nb.Writer(w)
	sw.Write([]byte("a"))
	sw.Write([]byte("b"))
	nb.flush()
	if got, want := w.flushes, []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("nil-batch flushes = %q, want %q", got, want)
	}
}
