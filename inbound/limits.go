package inbound

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

// Default limits of a connection: how long a request's body may take to
// arrive, and how long one write of a response may block on a client that
// reads nothing.
const (
	DefaultBodyTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// ReceiveBody wraps a dialect's handler h so that a slow client cannot
// hold a connection by declaring a body it never sends. The request's
// body must arrive within timeout (<= 0: DefaultBodyTimeout) of its
// headers; when it does not, the client gets the dialect's error
// (writeError) with status 408 and the connection is closed.
//
// auth (nil: none) wraps what reads the body, so a request without a valid
// key is refused before any of its body is read: the refusal closes the
// connection rather than wait for a body nobody will read (Authenticate).
//
// The body is read here, at most DefaultMaxBody+1 bytes (the handler's
// own limit answers a larger one), and h reads it from memory.
func ReceiveBody(timeout time.Duration, writeError func(http.ResponseWriter, error), auth func(http.Handler) http.Handler, h http.Handler) http.Handler {
	if timeout <= 0 {
		timeout = DefaultBodyTimeout
	}
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		b, err := readAll(io.LimitReader(r.Body, DefaultMaxBody+1), r.ContentLength)
		if err != nil {
			w.Header().Set("Connection", "close")
			if errors.Is(err, os.ErrDeadlineExceeded) {
				writeError(statusWriter{w, http.StatusRequestTimeout}, bridge.Errorf(bridge.CodeTimeout,
					"the request body did not arrive within %s", timeout))
				return
			}
			writeError(w, bridge.Errorf(bridge.CodeInvalid, "could not read the request body"))
			return
		}
		if len(b) <= DefaultMaxBody {
			// The whole body is in: the deadline is done with (Go's read
			// of the connection to notice a client going away goes on
			// without it).
			_ = rc.SetReadDeadline(time.Time{})
			r.Body = &bodyBytes{Reader: bytes.NewReader(b), b: b}
		} else {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		}
		h.ServeHTTP(w, r)
	})
	var inner http.Handler = read
	if auth != nil {
		inner = auth(read)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		inner.ServeHTTP(w, r)
	})
}

// readAll is io.ReadAll sized for a body of size bytes (the request's
// Content-Length; unknown when < 0), so an 8 MiB body costs 8 MiB, not the
// copies a buffer growing from 512 bytes leaves behind.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, min(max(size, 512), DefaultMaxBody)+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// bodyBytes is a request body ReceiveBody read whole. ReadBody takes its
// bytes instead of copying them, and the request holds them no more: a
// large body lives while the handler decodes it, not while it streams
// the answer.
type bodyBytes struct {
	*bytes.Reader
	b []byte
}

func (*bodyBytes) Close() error { return nil }

// take returns the bytes not read yet, and forgets them.
func (bb *bodyBytes) take() []byte {
	b := bb.b[len(bb.b)-bb.Len():]
	bb.b = nil
	bb.Reset(nil)
	return b
}

// statusWriter writes a dialect's error body with another status.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s statusWriter) WriteHeader(int)             { s.ResponseWriter.WriteHeader(s.status) }
func (s statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// WriteDeadline wraps h so that each write of a response (a stream's
// frames, a flush) must finish within timeout (<= 0:
// DefaultWriteTimeout; 15/16 of it at the least, deadlineWriter.arm): a client that stops reading while the bridge
// still has frames for it is cut off once the socket's buffers are full
// and a write has waited that long. The handler sees the failed write as
// a client gone away: a run in a session goes on, resumable, as it does
// when a client disconnects.
//
// The writer also times the response's first body byte for the run the
// request starts (bridge.FirstByte in the request's context; the run keeps
// it as Run.FirstClientByte): it sees every write already, so the timing
// costs a request one value in its context and a write one test.
func WriteDeadline(timeout time.Duration, h http.Handler) http.Handler {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
		h.ServeHTTP(d, r.WithContext(bridge.WithFirstByte(r.Context(), &d.first)))
	})
}

// deadlineWriter sets the connection's write deadline before each write
// and flush. Between writes the deadline stays as the last one left it:
// nothing is being written then, and the next write sets a fresh one.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	armed   time.Time // when the deadline was last set
	first   bridge.FirstByte
	wrote   bool // the first byte is marked
}

// arm moves the deadline to timeout from now, unless it was moved less
// than timeout/16 ago: a write may then wait 15/16 of timeout rather
// than all of it. Setting it for every write and flush of a stream (two
// for each frame; a runtime timer changed under its lock each time) cost
// the bridge ~2% of its CPU in the load program's throughput phase.
func (d *deadlineWriter) arm() {
	now := time.Now()
	if now.Sub(d.armed) < d.timeout/16 {
		return
	}
	d.armed = now
	_ = d.rc.SetWriteDeadline(now.Add(d.timeout))
}

func (d *deadlineWriter) WriteHeader(status int) {
	d.arm()
	d.ResponseWriter.WriteHeader(status)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.arm()
	n, err := d.ResponseWriter.Write(p)
	if !d.wrote && n > 0 {
		d.wrote = true
		d.first.Mark(time.Now())
	}
	return n, err
}

// FlushError is what http.ResponseController.Flush calls.
func (d *deadlineWriter) FlushError() error {
	d.arm()
	if err := d.rc.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// Flush implements http.Flusher for code that asserts it.
func (d *deadlineWriter) Flush() { _ = d.FlushError() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
