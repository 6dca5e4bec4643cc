package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/server"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// The targets a run measures.
const (
	targetDirect = "direct" // the fake upstream itself
	targetProxy  = "proxy"  // httputil.ReverseProxy in front of it: the floor
	targetBridge = "bridge" // the bridge, wired as `bridge serve` wires it
	// The same bridge with Anthropic Messages clients: anthropic->openai,
	// beside the same floor.
	targetAnthropic = "anthropic"
)

var allTargets = []string{targetDirect, targetProxy, targetBridge, targetAnthropic}

// dialectOf is the dialect a target's clients speak.
func dialectOf(target string) string {
	if target == targetAnthropic {
		return dialectAnthropic
	}
	return dialectOpenAI
}

// target is a started target: the base URL a client sends
// /v1/chat/completions to, and how to stop it.
type target struct {
	name  string
	url   string
	stop  func()
	store *timedStore // the bridge's, else nil
}

func startTarget(ctx context.Context, name string, up upstream, opt options) (*target, error) {
	switch name {
	case targetDirect:
		return &target{name: name, url: up.URL(), stop: func() {}}, nil
	case targetProxy:
		return startProxy(up, opt)
	case targetBridge, targetAnthropic:
		t, err := startBridge(ctx, up, opt)
		if t != nil {
			t.name = name
		}
		return t, err
	}
	return nil, fmt.Errorf("unknown target %q (want %v)", name, allTargets)
}

// proxyTransport is the transport the proxy calls the upstream with: Go's
// default one keeping opt.proxyIdleConns idle connections per host (Go's
// default keeps 2, which under load opens a connection per stream; the
// bridge's outbound client keeps 256).
func proxyTransport(opt options) http.RoundTripper {
	if opt.proxyIdleConns <= 0 {
		return http.DefaultTransport
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = opt.proxyIdleConns
	t.MaxIdleConns = max(t.MaxIdleConns, opt.proxyIdleConns)
	return t
}

// serveOn serves h on a fresh 127.0.0.1 listener.
func serveOn(h http.Handler, errLog *stdlog.Logger) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln, nil
}

func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(ctx) != nil {
		_ = srv.Close()
	}
}

// startProxy starts the floor: a bare reverse proxy that reads the request
// body whole before calling the upstream (as the bridge must, to decode it)
// and flushes every write at once (FlushInterval -1).
func startProxy(up upstream, opt options) (*target, error) {
	u, err := url.Parse(up.URL())
	if err != nil {
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
		Transport:     proxyTransport(opt),
		ErrorLog:      discardLog(),
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := inbound.ReadBody(w, r, 0)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	})
	srv, ln, err := serveOn(h, discardLog())
	if err != nil {
		return nil, err
	}
	return &target{name: targetProxy, url: "http://" + ln.Addr().String(), stop: func() { shutdown(srv) }}, nil
}

// startBridge starts the bridge as `bridge serve` does (server.New: the
// whole dialect table, telemetry from the OTEL_* environment, a SQLite file
// in a temporary directory) with one OpenAI upstream, the fake one, and its
// store measured (timedStore). The logger formats every record as serve's
// does, into io.Discard.
//
// The engine admits opt.maxRuns runs per principal at once (serve's default
// is 64, which would turn away the streams of a wider load).
func startBridge(ctx context.Context, up upstream, opt options) (*target, error) {
	dir, err := os.MkdirTemp("", "bridgeload-")
	if err != nil {
		return nil, err
	}
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = filepath.Join(dir, "bridge.db")
	cfg.MaxRunsPerPrincipal = opt.maxRuns
	cfg.Upstreams = []server.Upstream{{Name: "openai", Dialect: "openai", URL: up.URL() + "/v1"}}
	if err := cfg.Validate(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var store *timedStore
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := server.New(ctx, cfg, log, server.Options{
		Store:     func(db bridge.Store) bridge.Store { store = &timedStore{Store: db.(*sqlite.Store)}; return store },
		Telemetry: otel.EnvConfig{Console: os.Stderr},
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = srv.Run() }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(sctx)
		_ = os.RemoveAll(dir)
	}
	return &target{name: targetBridge, url: "http://" + srv.Addr(), stop: stop, store: store}, nil
}

func discardLog() *stdlog.Logger { return stdlog.New(io.Discard, "", 0) }
