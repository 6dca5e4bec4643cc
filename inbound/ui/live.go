package ui

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
)

// live is GET /ui/api/runs/{run}/live: a running run's page as a stream
// (SSE), so the page follows the run as its events are committed instead
// of asking for the whole page again and again. It follows the run from
// its first event (Engine.Subscribe, as the run API does) and sends, in
// order:
//
//	event: event   data: a committed event (id: its seq)
//	event: wire    data: what the client's dialect wrote for it (a JSON string)
//	event: end     data: {} once the run has ended
//
// The wire frames are the inbound dialect's own encoder over the same
// events (as the run page's client wire), so the page shows the client's
// stream growing frame by frame. The stream ends with the run, or when
// the page goes away.
func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	u, err := h.access(r)
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	ctx := r.Context()
	run, err := h.lookup(ctx, r.PathValue("run"), u)
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	ctx = bridge.WithPrincipal(ctx, run.Principal)
	run, events, err := h.cfg.Engine.Subscribe(ctx, run.ID, 0)
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	sw := inbound.NewSSEWriter(w)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	out := &liveWriter{sw: sw}
	n := 0
	tee := func(yield func(bridge.Event, error) bool) {
		for ev, err := range events {
			if err != nil {
				yield(ev, err)
				return
			}
			if n++; n <= maxPageEvents { // the page shows as many as its JSON does
				b, _ := json.Marshal(&ev)
				if out.send("event", strconv.FormatInt(ev.Seq, 10), b) != nil {
					return
				}
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
	if d, ok := h.cfg.Dialects[run.Inbound]; ok {
		req, _ := http.NewRequestWithContext(inbound.WithAsReceived(ctx), http.MethodGet, "/v1/runs/"+run.ID+"/events", nil)
		d.ServeEvents(&wireWriter{out: out, header: http.Header{}}, req, run, tee)
	} else {
		for range tee {
		}
	}
	if ctx.Err() == nil {
		_ = out.send("end", "", []byte("{}"))
	}
}

// liveWriter writes the live stream's frames, one at a time: the events
// come from the request's goroutine, a dialect's pings may come from one
// of its own.
type liveWriter struct {
	mu   sync.Mutex
	sw   *inbound.SSEWriter
	wire int // bytes of client wire sent
}

func (l *liveWriter) send(event, id string, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]byte, 0, len(data)+32)
	b = append(b, "event: "...)
	b = append(b, event...)
	if id != "" {
		b = append(b, "\nid: "...)
		b = append(b, id...)
	}
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	_, err := l.sw.Write(b)
	return err
}

// wireWriter is the ResponseWriter the client's dialect renders into: each
// write goes out as a wire frame, up to maxWire bytes in all (as the run
// page's client wire).
type wireWriter struct {
	out    *liveWriter
	header http.Header
}

func (w *wireWriter) Header() http.Header { return w.header }
func (w *wireWriter) WriteHeader(int)     {}
func (w *wireWriter) Flush()              {}
func (w *wireWriter) Write(p []byte) (int, error) {
	w.out.mu.Lock()
	room := maxWire - w.out.wire
	w.out.wire += len(p)
	w.out.mu.Unlock()
	if room <= 0 {
		return len(p), nil
	}
	b, _ := json.Marshal(string(p[:min(len(p), room)]))
	if err := w.out.send("wire", "", b); err != nil {
		return 0, err
	}
	return len(p), nil
}
