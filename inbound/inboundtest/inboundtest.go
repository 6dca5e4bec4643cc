// Package inboundtest holds what the inbound handler tests share: a test
// server that serves handlers on the routes they list (an inbound dialect,
// the run API beside it), and one way to send it a request and read the
// whole answer. The engine and its store come from bridgetest.NewEngine.
package inboundtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/inbound/runs"
)

// Router is a handler that lists the patterns it serves, as every inbound
// handler does for a parent mux.
type Router interface {
	http.Handler
	Routes() []string
}

// Serve serves each router on the patterns it lists from one test server on
// 127.0.0.1, closed when t ends, and returns the server's URL. Call it after
// bridgetest.NewEngine, so the server closes before the engine does.
func Serve(t testing.TB, rs ...Router) string {
	t.Helper()
	mux := http.NewServeMux()
	for _, r := range rs {
		for _, p := range r.Routes() {
			mux.Handle(p, r)
		}
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// RunAPI is the run API (inbound/runs) over e with d as its one dialect and
// its default; cfg gives the rest (Create, for a dialect that creates runs).
func RunAPI(e *bridge.Engine, d inbound.Dialect, cfg runs.Config) *runs.Handler {
	cfg.Engine, cfg.Default = e, d
	cfg.Dialects = map[string]inbound.Dialect{d.Name(): d}
	return runs.New(cfg)
}

// Wrap serves r's routes through wrap (an authentication middleware, say).
func Wrap(r Router, wrap func(http.Handler) http.Handler) Router {
	return wrapped{Handler: wrap(r), routes: r.Routes()}
}

type wrapped struct {
	http.Handler
	routes []string
}

func (w wrapped) Routes() []string { return w.routes }

// MaxBody is the most Do reads of an answer.
const MaxBody = 8 << 20

// Do sends body to url as JSON, with the given headers (name, value, ...;
// a later one replaces an earlier one of the same name), and reads the whole
// answer; it gives up after 10 seconds. A failure to send or read fails t.
func Do(t testing.TB, method, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
