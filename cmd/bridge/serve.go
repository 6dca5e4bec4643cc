package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/outbound/echo"
	outopenai "github.com/bridge-dev/bridge/outbound/openai"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// Main is a running bridge: store, engine, handlers and listener. Run
// serves until Close.
type Main struct {
	cfg    Config
	log    *slog.Logger
	store  *sqlite.Store
	engine *bridge.Engine
	ln     net.Listener
	srv    *http.Server
	routes []string

	janitorStop chan struct{}
	janitorDone chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

// NewMain opens the store, closes runs a crash left running, and listens.
func NewMain(ctx context.Context, cfg Config, log *slog.Logger) (*Main, error) {
	store, err := sqlite.Open(ctx, cfg.DB, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", cfg.DB, err)
	}
	m := &Main{cfg: cfg, log: log, store: store, janitorStop: make(chan struct{}), janitorDone: make(chan struct{})}
	ids, err := store.InterruptRunning(ctx, "bridge restarted", time.Now().UTC())
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("close interrupted runs: %w", err)
	}
	if len(ids) > 0 {
		log.Warn("closed runs left running by the last process", "runs", len(ids))
	}

	rt := &routes{model: cfg.Model}
	for _, u := range cfg.Upstreams {
		up, err := newUpstream(u, cfg)
		if err != nil {
			store.Close()
			return nil, err
		}
		// Outermost first: retries go around the breaker, so an open
		// breaker stops them at once.
		breaker := outbound.NewBreaker(u.Name, u.Breaker, log, nil)
		wrapped := outbound.Wrap(up, outbound.Retry(u.Retry, idempotent(u.Dialect)), breaker.Middleware())
		rt.upstreams = append(rt.upstreams, routedUpstream{up: wrapped, models: u.Models})
	}
	engine, err := bridge.New(bridge.Config{Store: store, Route: rt.Route, Logger: log, RunTimeout: cfg.RunTimeout,
		MaxRunsPerPrincipal: cfg.MaxRunsPerPrincipal})
	if err != nil {
		store.Close()
		return nil, err
	}
	m.engine = engine

	keys, err := loadKeys(cfg)
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return nil, err
	}
	// The inbound dialects: each serves its routes, renders its runs for the
	// run API, and answers auth failures in its own error shape.
	oa := inopenai.New(inopenai.Config{Engine: engine, Models: rt.Models, Logger: log})
	served := []servedDialect{oa}

	mux := http.NewServeMux()
	byName := map[string]inbound.Dialect{}
	for _, d := range served {
		byName[d.Name()] = d
		for _, p := range d.Routes() {
			mux.Handle(p, keys.Authenticate(d.Name(), d.WriteError, d))
		}
		m.routes = append(m.routes, d.Routes()...)
	}
	ra := runs.New(runs.Config{Engine: engine, Default: oa, Dialects: byName})
	for _, p := range ra.Routes() {
		mux.Handle(p, keys.Authenticate("", oa.WriteError, ra))
	}
	m.routes = append(m.routes, ra.Routes()...)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	m.routes = append(m.routes, "GET /healthz")

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return nil, err
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go m.janitor()
	return m, nil
}

// servedDialect is an inbound dialect's handler.
type servedDialect interface {
	inbound.Dialect
	http.Handler
	Routes() []string
}

// loadKeys reads the inbound keys: BRIDGE_API_KEY (principal "default"),
// BRIDGE_API_KEYS=k1,k2,... (each its own principal, named by a prefix of
// the key's hash) and the config's keys (held as hashes). None: no auth.
func loadKeys(cfg Config) (*inbound.Keys, error) {
	keys := &inbound.Keys{}
	if k := os.Getenv("BRIDGE_API_KEY"); k != "" {
		keys.AddKey("default", k)
	}
	for _, k := range strings.Split(os.Getenv("BRIDGE_API_KEYS"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys.AddKey("key-"+inbound.HashKey(k)[:12], k)
		}
	}
	for i, k := range cfg.Keys {
		if k.Name == "" {
			return nil, fmt.Errorf("keys[%d]: no name", i)
		}
		if err := keys.AddHash(k.Name, k.SHA256, k.Dialects...); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func newUpstream(u Upstream, cfg Config) (bridge.Upstream, error) {
	key := os.Getenv("BRIDGE_UPSTREAM_API_KEY")
	if u.APIKeyEnv != "" {
		key = os.Getenv(u.APIKeyEnv)
	}
	switch u.Dialect {
	case "echo":
		return &echo.Upstream{Delay: cfg.EchoDelay}, nil
	case "openai":
		return outopenai.New(outopenai.Config{Name: u.Name, BaseURL: u.URL, APIKey: key, Model: u.Model, Timeouts: u.Timeouts}), nil
	}
	return nil, fmt.Errorf("upstream %s: dialect %q is not built yet", u.Name, u.Dialect)
}

// idempotent reports whether a dialect's calls may be retried after the
// upstream answered with an error: a model call has no effect worth
// protecting; an agent's message may have started work.
func idempotent(dialect string) bool {
	switch dialect {
	case "a2a", "adk", "hermes":
		return false
	}
	return true
}

// Addr is the address the bridge listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// Endpoints lists the served routes.
func (m *Main) Endpoints() []string { return m.routes }

// Run serves until Close; it returns nil after a Close.
func (m *Main) Run() error {
	err := m.srv.Serve(m.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, lets streams end until ctx is done, interrupts the
// runs still going, and closes the store.
func (m *Main) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		err := m.srv.Shutdown(ctx)
		if err != nil {
			_ = m.srv.Close()
		}
		close(m.janitorStop)
		<-m.janitorDone
		ectx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if ctx.Err() == nil {
			ectx = ctx
		}
		_ = m.engine.Close(ectx)
		m.closeErr = m.store.Close()
	})
	return m.closeErr
}

// janitor deletes events of runs that ended more than the retention ago.
func (m *Main) janitor() {
	defer close(m.janitorDone)
	every := min(m.cfg.Retention/10, 10*time.Minute)
	every = max(every, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := m.store.DeleteEventsBefore(context.Background(), time.Now().Add(-m.cfg.Retention))
		if err != nil {
			m.log.Warn("retention janitor", "err", err)
		} else if n > 0 {
			m.log.Info("retention janitor deleted events", "events", n)
		}
		select {
		case <-t.C:
		case <-m.janitorStop:
			return
		}
	}
}
