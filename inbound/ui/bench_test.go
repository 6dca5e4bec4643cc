package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/inbound/ui"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// BenchmarkRunList100k is the run list's server side on a SQLite store of
// 100,000 runs (three principals, 100 sessions, every dialect pair and
// status): a page of 50 newest first, a page deep in the list, and the
// filters. Each op is one GET /ui/api/runs answered whole; the goal is
// under 200 ms.
func BenchmarkRunList100k(b *testing.B) {
	const n = 100_000
	ctx := b.Context()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dialects := []string{"openai", "responses", "anthropic", "a2a", "adk", "hermes"}
	statuses := []bridge.Status{bridge.StatusCompleted, bridge.StatusCompleted, bridge.StatusCompleted, bridge.StatusFailed, bridge.StatusCancelled}
	t0 := time.Now().Add(-n * time.Second)
	var sessions []*bridge.Session
	for i := range 100 {
		sessions = append(sessions, &bridge.Session{ID: fmt.Sprintf("sess_%d", i), Principal: fmt.Sprintf("p%d", i%3), Created: t0})
	}
	if err := store.Commit(ctx, &bridge.Batch{Sessions: sessions}); err != nil {
		b.Fatal(err)
	}
	var mid string
	for start := 0; start < n; start += 5000 {
		batch := &bridge.Batch{}
		for i := start; i < start+5000; i++ {
			s := sessions[i%100]
			r := &bridge.Run{ID: fmt.Sprintf("run_%06d", i), SessionID: s.ID, Principal: s.Principal,
				Inbound: dialects[i%6], Outbound: dialects[(i/6)%6], Upstream: "up", Model: fmt.Sprintf("model-%d", i%7),
				Status: statuses[i%5], Created: t0.Add(time.Duration(i) * time.Second), Finished: t0.Add(time.Duration(i)*time.Second + time.Second)}
			if i == 9_999 {
				r.Model = "rare-model" // one run: a filter that matches almost nothing
			}
			batch.NewRuns = append(batch.NewRuns, r)
		}
		if err := store.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if start == n/2 {
			mid = batch.NewRuns[0].ID
		}
	}
	eng := bridgetest.NewEngine(b, store, &bridgetest.Upstream{})
	admin := func(*http.Request) (string, bool, error) { return "", true, nil }
	p1 := func(*http.Request) (string, bool, error) { return "p1", false, nil }
	for _, bc := range []struct {
		name, query string
		access      func(*http.Request) (string, bool, error)
	}{
		{"newest", "", admin},
		{"deep page", "before=" + mid, admin},
		{"inbound", "inbound=a2a", admin},
		{"status and outbound", "status=failed&outbound=hermes", admin},
		{"principal", "", p1},
		{"session", "session=sess_42", admin},
		{"last hour", "since=1h", admin},
		{"rare model", "model=rare-model", admin},
	} {
		h := ui.New(ui.Config{Engine: eng, Store: store, Default: stubDialect{}, Access: bc.access})
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/ui/api/runs?limit=50&"+bc.query, nil))
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
