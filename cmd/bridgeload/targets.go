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
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/outbound"
	outopenai "github.com/bridge-dev/bridge/outbound/openai"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// The targets a run measures.
const (
	targetDirect = "direct" // the fake upstream itself
	targetProxy  = "proxy"  // httputil.ReverseProxy in front of it: the floor
	targetBridge = "bridge" // the bridge, wired as `bridge serve` wires it
)

var allTargets = []string{targetDirect, targetProxy, targetBridge}

// target is a started target: the base URL a client sends
// /v1/chat/completions to, and how to stop it.
type target struct {
	name  string
	url   string
	stop  func()
	store *timedStore // the bridge's, else nil
}

func startTarget(ctx context.Context, name string, up *fakeUpstream, opt options) (*target, error) {
	switch name {
	case targetDirect:
		return &target{name: name, url: up.URL(), stop: func() {}}, nil
	case targetProxy:
		return startProxy(up, opt)
	case targetBridge:
		return startBridge(ctx, up, opt)
	}
	return nil, fmt.Errorf("unknown target %q (want %v)", name, allTargets)
}

// upstreamTransport is the transport the proxy and the bridge call the
// upstream with: Go's default (what `bridge serve` and a bare ReverseProxy
// use: two idle connections per host), or one keeping idle connections
// per host when --upstream-idle-conns is set.
func upstreamTransport(opt options) http.RoundTripper {
	if opt.upstreamIdleConns <= 0 {
		return http.DefaultTransport
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = opt.upstreamIdleConns
	t.MaxIdleConns = max(t.MaxIdleConns, opt.upstreamIdleConns)
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
func startProxy(up *fakeUpstream, opt options) (*target, error) {
	u, err := url.Parse(up.URL())
	if err != nil {
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
		Transport:     upstreamTransport(opt),
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

// startBridge wires the bridge as cmd/bridge's NewMain does, with the public
// packages: a SQLite file in a temporary directory, the engine, the OpenAI
// inbound handler and the run API, and the OpenAI outbound client for the
// fake upstream. The logger formats every record as serve's does, into
// io.Discard.
func startBridge(ctx context.Context, up *fakeUpstream, opt options) (*target, error) {
	dir, err := os.MkdirTemp("", "bridgeload-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*target, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "bridge.db"), sqlite.Options{})
	if err != nil {
		return fail(err)
	}
	store := &timedStore{Store: db}
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if _, err := store.InterruptRunning(ctx, "bridge restarted", time.Now().UTC()); err != nil {
		store.Close()
		return fail(err)
	}
	var hc *http.Client
	if opt.upstreamIdleConns > 0 {
		hc = &http.Client{Transport: upstreamTransport(opt)}
	}
	oc := outbound.Wrap(outopenai.New(outopenai.Config{Name: "openai", BaseURL: up.URL() + "/v1", HTTPClient: hc}))
	engine, err := bridge.New(bridge.Config{Store: store, Logger: log,
		Route: func(string) (bridge.Upstream, error) { return oc, nil }})
	if err != nil {
		store.Close()
		return fail(err)
	}
	oa := inopenai.New(inopenai.Config{Engine: engine, Models: func() []string { return []string{"openai"} }, Logger: log})
	ra := runs.New(runs.Config{Engine: engine, Default: oa, Dialects: map[string]inbound.Dialect{oa.Name(): oa}})
	mux := http.NewServeMux()
	for _, p := range oa.Routes() {
		mux.Handle(p, oa)
	}
	for _, p := range ra.Routes() {
		mux.Handle(p, ra)
	}
	srv, ln, err := serveOn(mux, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return fail(err)
	}
	stop := func() {
		shutdown(srv)
		ectx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = engine.Close(ectx)
		_ = store.Close()
		_ = os.RemoveAll(dir)
	}
	return &target{name: targetBridge, url: "http://" + ln.Addr().String(), stop: stop, store: store}, nil
}

func discardLog() *stdlog.Logger { return stdlog.New(io.Discard, "", 0) }
