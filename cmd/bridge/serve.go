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
	ina2a "github.com/bridge-dev/bridge/inbound/a2a"
	inadk "github.com/bridge-dev/bridge/inbound/adk"
	inanthropic "github.com/bridge-dev/bridge/inbound/anthropic"
	inhermes "github.com/bridge-dev/bridge/inbound/hermes"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	inresponses "github.com/bridge-dev/bridge/inbound/responses"
	"github.com/bridge-dev/bridge/inbound/runs"
	a2awire "github.com/bridge-dev/bridge/mapping/a2a"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/outbound"
	outa2a "github.com/bridge-dev/bridge/outbound/a2a"
	outadk "github.com/bridge-dev/bridge/outbound/adk"
	outanthropic "github.com/bridge-dev/bridge/outbound/anthropic"
	"github.com/bridge-dev/bridge/outbound/echo"
	outhermes "github.com/bridge-dev/bridge/outbound/hermes"
	outopenai "github.com/bridge-dev/bridge/outbound/openai"
	outresponses "github.com/bridge-dev/bridge/outbound/responses"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// Main is a running bridge: store, engine, handlers and listener. Run
// serves until Close.
type Main struct {
	cfg    Config
	log    *slog.Logger
	store  *sqlite.Store
	engine *bridge.Engine
	tel    *otel.Telemetry
	ln     net.Listener
	srv    *http.Server
	routes []string

	// responses is the Responses dialect, which stores finished responses
	// in the background: closed after the engine, before the store.
	responses *inresponses.Handler

	janitorStop chan struct{}
	janitorDone chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

// NewMain sets up tracing and metrics from the OTEL_* environment (see
// otel.FromEnv), opens the store, closes runs a crash left running, and
// listens.
func NewMain(ctx context.Context, cfg Config, log *slog.Logger) (_ *Main, err error) {
	tel, err := otel.FromEnv(ctx, otel.EnvConfig{})
	if err != nil {
		return nil, fmt.Errorf("opentelemetry: %w", err)
	}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = tel.Shutdown(sctx)
		}
	}()
	store, err := sqlite.Open(ctx, cfg.DB, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", cfg.DB, err)
	}
	m := &Main{cfg: cfg, log: log, store: store, tel: tel, janitorStop: make(chan struct{}), janitorDone: make(chan struct{})}
	running, err := store.ListRuns(ctx, bridge.RunFilter{Status: bridge.StatusRunning})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("list runs left running: %w", err)
	}

	rt := &routes{model: cfg.Model}
	counters := map[string]*outanthropic.Client{} // Anthropic upstreams, by name: they answer count_tokens
	var secrets []string
	for _, u := range cfg.Upstreams {
		secrets = append(secrets, upstreamKey(u))
	}
	creds := outbound.NewCredentials(secrets...)
	for _, u := range cfg.Upstreams {
		up, err := newUpstream(u, cfg, tel, store)
		if err != nil {
			store.Close()
			return nil, err
		}
		// Outermost first: one client span around the retries; retries go
		// around the breaker, so an open breaker stops them at once; the
		// credentials scrub is innermost, so nothing above it (spans,
		// logs, the engine and its store) sees an upstream's quote of a key.
		breaker := outbound.NewBreaker(u.Name, u.Breaker, log, tel.OnBreakerChange)
		wrapped := outbound.WrapAdmit(up, breaker.Admit, tel.Upstream(up), outbound.Retry(u.Retry, idempotent(u.Dialect)), breaker.Middleware(),
			creds.Middleware(u.Name))
		rt.upstreams = append(rt.upstreams, routedUpstream{up: wrapped, models: u.Models})
		if c, ok := up.(*outanthropic.Client); ok {
			counters[u.Name] = c
		}
	}
	// Fallbacks: a route's upstream tries the wrapped upstreams its chain
	// names (each behind its own breaker and retries) when it fails before
	// answering.
	upByName := map[string]bridge.Upstream{}
	for i, u := range cfg.Upstreams {
		upByName[u.Name] = rt.upstreams[i].up
	}
	for i, u := range cfg.Upstreams {
		chain := cfg.fallbackChain(u.Name)
		if len(chain) == 0 {
			continue
		}
		fbs := make([]bridge.Upstream, len(chain))
		for j, n := range chain {
			fbs[j] = upByName[n]
		}
		rt.upstreams[i].up = outbound.NewFallback(upByName[u.Name], fbs, outbound.FallbackConfig{IDs: store, Logger: log,
			Idempotent: func(up bridge.Upstream) bool { return idempotent(up.Dialect()) }, OnFallback: tel.OnFallback})
		log.Info("upstream fallbacks", "upstream", u.Name, "fallbacks", strings.Join(chain, ","))
	}
	engine, err := bridge.New(bridge.Config{Store: store, Route: rt.Route, Logger: log, Tracer: tel.Tracer(), RunTimeout: cfg.RunTimeout,
		MaxRunsPerPrincipal: cfg.MaxRunsPerPrincipal})
	if err != nil {
		store.Close()
		return nil, err
	}
	m.engine = engine
	// Runs a crash left running: those whose upstream can resume them go
	// on upstream; the others are closed as interrupted.
	resumed := resumeRuns(ctx, engine, rt, running, log)
	ids, err := store.InterruptRunning(ctx, "bridge restarted", time.Now().UTC(), resumed...)
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return nil, fmt.Errorf("close interrupted runs: %w", err)
	}
	if len(ids) > 0 {
		log.Warn("closed runs left running by the last process", "runs", len(ids))
	}

	keys, err := loadKeys(cfg)
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return nil, err
	}
	// The inbound dialects: each serves its routes, renders its runs for the
	// run API, and answers auth failures in its own error shape.
	oa := inopenai.New(inopenai.Config{Engine: engine, Models: rt.Models, Logger: log})
	aa := ina2a.New(ina2a.Config{Engine: engine, Model: cfg.Model, Card: cfg.A2A.card(), Logger: log})
	an := inanthropic.New(inanthropic.Config{Engine: engine, CountTokens: countTokens(rt, counters), Logger: log})
	ad := inadk.New(inadk.Config{Engine: engine, Store: store, Apps: rt.Models, Logger: log})
	hm := inhermes.New(inhermes.Config{Engine: engine, Runs: store, Model: cfg.Model, Logger: log})
	rs := inresponses.New(inresponses.Config{Engine: engine, Store: store, Logger: log})
	m.responses = rs
	served := []servedDialect{oa, aa, an, ad, hm, rs}

	mux := http.NewServeMux()
	byName := map[string]inbound.Dialect{}
	for _, d := range served {
		byName[d.Name()] = d
		for _, p := range d.Routes() {
			mux.Handle(p, keys.Authenticate(d.Name(), d.WriteError, d))
		}
		m.routes = append(m.routes, d.Routes()...)
		if pd, ok := d.(interface{ PublicRoutes() []string }); ok { // an A2A agent card needs no key
			for _, p := range pd.PublicRoutes() {
				mux.Handle(p, d)
			}
			m.routes = append(m.routes, pd.PublicRoutes()...)
		}
	}
	ra := runs.New(runs.Config{Engine: engine, Default: oa, Dialects: byName, Create: hm.CreateRun()})
	for _, p := range ra.Routes() {
		mux.Handle(p, keys.Authenticate("", oa.WriteError, ra))
	}
	m.routes = append(m.routes, ra.Routes()...)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	m.routes = append(m.routes, "GET /healthz")
	if h := tel.MetricsHandler(); h != nil { // OTEL_METRICS_EXPORTER=prometheus
		mux.Handle("GET /metrics", h)
		m.routes = append(m.routes, "GET /metrics")
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return nil, err
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           tel.Handler(mux, "/healthz", "/metrics"),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go m.janitor()
	return m, nil
}

// resumeRuns resumes upstream the runs a crash left running whose
// upstream (still the one their model routes to) implements
// bridge.Resumer, and returns their ids.
func resumeRuns(ctx context.Context, engine *bridge.Engine, rt *routes, running []*bridge.Run, log *slog.Logger) []string {
	var ids []string
	for _, r := range running {
		up, err := rt.Route(r.Model)
		if err != nil {
			continue
		}
		if _, ok := bridge.ResumerFor(up, r.Upstream); !ok {
			continue
		}
		if err := engine.Resume(ctx, r); err != nil {
			log.Warn("resume run", "run", r.ID, "upstream", r.Upstream, "err", err)
			continue
		}
		ids = append(ids, r.ID)
	}
	if len(ids) > 0 {
		log.Info("resuming runs left running by the last process", "runs", len(ids))
	}
	return ids
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

// upstreamKey is the key of upstream u: the variable its api_key_env
// names, else BRIDGE_UPSTREAM_API_KEY.
func upstreamKey(u Upstream) string {
	if u.APIKeyEnv != "" {
		return os.Getenv(u.APIKeyEnv)
	}
	return os.Getenv("BRIDGE_UPSTREAM_API_KEY")
}

func newUpstream(u Upstream, cfg Config, tel *otel.Telemetry, store bridge.Store) (bridge.Upstream, error) {
	key := upstreamKey(u)
	switch u.Dialect {
	case "echo":
		return &echo.Upstream{Delay: cfg.EchoDelay}, nil
	case "openai":
		return outopenai.New(outopenai.Config{Name: u.Name, BaseURL: u.URL, APIKey: key, Model: u.Model, Timeouts: u.Timeouts,
			HTTPClient: outbound.NewHTTPClient(u.Timeouts, tel.Transport)}), nil
	case "anthropic":
		return outanthropic.New(outanthropic.Config{Name: u.Name, BaseURL: u.URL, APIKey: key, Model: u.Model, Timeouts: u.Timeouts,
			HTTPClient: outbound.NewHTTPClient(u.Timeouts, tel.Transport)}), nil
	case "hermes":
		return outhermes.New(outhermes.Config{Name: u.Name, URL: u.URL, APIKey: key, Model: u.Model, IDs: store,
			Timeouts: u.Timeouts, HTTPClient: outbound.NewHTTPClient(u.Timeouts, tel.Transport)}), nil
	case "adk": // the api_server root; the app is the model name (or --model)
		return outadk.New(outadk.Config{Name: u.Name, URL: u.URL, App: u.Model, APIKey: key, IDs: store,
			Timeouts: u.Timeouts, HTTPClient: outbound.NewHTTPClient(u.Timeouts, tel.Transport)}), nil
	case "responses":
		return outresponses.New(outresponses.Config{Name: u.Name, BaseURL: u.URL, APIKey: key, Model: u.Model, Stateful: u.Stateful,
			IDs: store, Timeouts: u.Timeouts, HTTPClient: outbound.NewHTTPClient(u.Timeouts, tel.Transport)}), nil
	case "a2a":
		return outa2a.New(outa2a.Config{Name: u.Name, URL: u.URL, Profile: a2awire.Profile(u.Profile), APIKey: key, IDs: store,
			AllowOrigins: u.AllowOrigins, Timeouts: u.Timeouts, HTTPClient: outbound.NewHTTPClient(u.Timeouts, tel.Transport)}), nil
	}
	return nil, fmt.Errorf("upstream %s: dialect %q is not built yet", u.Name, u.Dialect)
}

// countTokens answers Anthropic's count_tokens at the upstream the model
// routes to when it is an Anthropic one (its own count, outside the
// breaker and retries: counting is not a model call); ok is false for any
// other upstream, and the inbound side estimates.
func countTokens(rt *routes, counters map[string]*outanthropic.Client) func(context.Context, *bridge.Request) (int64, bool, error) {
	return func(ctx context.Context, req *bridge.Request) (int64, bool, error) {
		up, err := rt.Route(req.Model)
		if err != nil {
			return 0, false, err
		}
		c := counters[up.Name()]
		if c == nil {
			return 0, false, nil
		}
		n, err := c.CountTokens(ctx, req)
		return n, err == nil, err
	}
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
// runs still going, closes the store, and flushes the spans and metrics
// still buffered.
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
		_ = m.responses.Close()
		m.closeErr = m.store.Close()
		tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer tcancel()
		if err := m.tel.Shutdown(tctx); err != nil {
			m.log.Warn("flush telemetry", "err", err)
		}
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
