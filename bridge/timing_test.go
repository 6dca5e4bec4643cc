package bridge_test

import (
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// TestRunTimings: the row that ends a run keeps when its first content
// was committed and when its request's response wrote its first byte; a
// byte written after the run's end (a whole answer) reaches the row in a
// later commit; a run started with no FirstByte has no client byte.
func TestRunTimings(t *testing.T) {
	tests := []struct {
		name  string
		mark  string // when the response writes: "during" the run, "after" it, or "never"
		timed bool   // the run keeps a first client byte
	}{
		{"a stream", "during", true},
		{"an answer written whole", "after", true},
		{"no response timed", "never", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The upstream's events (message_started, text_delta,
			// message_done, final) each wait for the gate; a stream's
			// first byte is written before the last two are let through,
			// so before the run's row is.
			gate, wrote := make(chan struct{}), make(chan struct{})
			up := &bridgetest.Upstream{Gate: gate, Events: bridgetest.TextEvents("hello")}
			e, store := newEngine(t, up)
			go func() {
				for i := range 4 {
					if i == 2 && tt.mark == "during" {
						<-wrote
					}
					select {
					case gate <- struct{}{}:
					case <-time.After(5 * time.Second):
						return
					}
				}
			}()
			fb := &bridge.FirstByte{}
			ctx := t.Context()
			if tt.mark != "never" {
				ctx = bridge.WithFirstByte(ctx, fb)
			}
			req := userRequest("hi")
			req.Detached = true
			run, err := e.Start(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var marked, content time.Time
			_, events, err := e.Subscribe(ctx, run.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			for ev, err := range events {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Kind == bridge.KindTextDelta {
					content = ev.Time
				}
				if ev.Kind == bridge.KindTextDelta && tt.mark == "during" {
					marked = time.Now()
					fb.Mark(marked)
					close(wrote)
				}
			}
			if tt.mark == "after" {
				marked = time.Now()
				fb.Mark(marked)
			}
			var got *bridge.Run
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if got, err = store.Run(t.Context(), run.ID); err != nil {
					t.Fatal(err)
				}
				// A stream's byte is in the row that ended the run, committed
				// with the final event; a late one comes in a later commit.
				if tt.mark != "after" || !got.FirstClientByte.IsZero() || time.Now().After(deadline) {
					break
				}
			}
			// The commit follows the content; it may follow the run's end
			// too (Finished is when the run decided it, not its commit).
			if got.FirstCommit.IsZero() || got.FirstCommit.Before(content) || got.FirstCommit.After(time.Now()) {
				t.Errorf("first commit %v, want after the first content's %v", got.FirstCommit, content)
			}
			if tt.timed && !got.FirstClientByte.Equal(marked.UTC()) {
				t.Errorf("first client byte %v, want %v", got.FirstClientByte, marked.UTC())
			}
			if !tt.timed && !got.FirstClientByte.IsZero() {
				t.Errorf("first client byte %v, want none", got.FirstClientByte)
			}
		})
	}
}
