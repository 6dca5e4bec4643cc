package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/inbound/ui"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/outbound"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// Package server turns a Config into a running bridge: the store, the
// engine, an upstream client per configured upstream (behind its telemetry,
// retries, breaker and fallbacks) and every inbound dialect's handler on one
// listener. Everything it knows of a dialect is its row of the dialect
// table (Dialects).
//
// Server is a running bridge. Run serves until Close.
type Server struct {
	cfg    Config
	log    *slog.Logger
	store  bridge.Store
	engine *bridge.Engine
	tel    *otel.Telemetry
	ln     net.Listener
	srv    *http.Server
	routes []string

	// closers are the inbound dialects with work in the background (the
	// Responses dialect stores finished responses) and the upstreams that
	// keep connections open: closed after the engine, before the store.
	closers []io.Closer

	janitorStop  chan struct{}
	janitorDone  chan struct{}
	takeoverDone chan struct{}
	closeOnce    sync.Once
	closeErr     error
}

// Options are what a Server may be given beside its Config: a tool that
// embeds one (the load program) measures the store, or exports telemetry
// elsewhere.
type Options struct {
	// Store wraps the store the server opens (nil: use it as it is).
	Store func(bridge.Store) bridge.Store
	// Telemetry is the OpenTelemetry setup (zero: from the OTEL_*
	// environment only).
	Telemetry otel.EnvConfig
}

// New sets up tracing and metrics from the OTEL_* environment (see
// otel.FromEnv), opens the store, closes runs a crash left running, and
// listens.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Options) (_ *Server, err error) {
	var opt Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	tel, err := otel.FromEnv(ctx, opt.Telemetry)
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
	store, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if opt.Store != nil {
		store = opt.Store(store)
	}
	m := &Server{cfg: cfg, log: log, store: store, tel: tel, janitorStop: make(chan struct{}), janitorDone: make(chan struct{}),
		takeoverDone: make(chan struct{})}
	// The runs the last process left running: all those of the store, or,
	// with replicas sharing it (a Leaser), those whose replica's lease
	// has ended (the others are live elsewhere).
	leaser, leased := store.(bridge.Leaser)
	var running []*bridge.Run
	if leased {
		running, err = leaser.TakeExpired(ctx)
	} else {
		running, err = store.ListRuns(ctx, bridge.RunFilter{Status: bridge.StatusRunning})
	}
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("list runs left running: %w", err)
	}

	rt := &routes{model: cfg.Model}
	counters := map[string]tokenCounter{} // upstreams that answer count_tokens, by name
	compacters := map[string]compacter{}  // upstreams with compaction of their own, by name
	var secrets []string
	for _, u := range cfg.Upstreams {
		secrets = append(secrets, upstreamKey(u))
	}
	creds := outbound.NewCredentials(secrets...)
	// The recorder redacts what the credentials scrub does, and keeps the
	// calls in the store when it can hold them (every store of the bridge
	// does).
	recs, _ := store.(bridge.RecordingStore)
	rec := &ui.Recorder{All: cfg.RecordUpstream, Keys: creds.Keys(), Store: recs, Log: log}
	// The recorder is innermost, next to the wire: it sees what was sent
	// and received, traceparent included.
	transport := func(rt http.RoundTripper) http.RoundTripper { return tel.Transport(rec.Transport(rt)) }
	for _, u := range cfg.Upstreams {
		d, ok := dialect(u.Dialect)
		if !ok || d.Outbound == nil {
			store.Close()
			return nil, fmt.Errorf("upstream %s: the bridge cannot call dialect %q", u.Name, u.Dialect)
		}
		up := d.Outbound(u, OutboundDeps{Key: upstreamKey(u), HTTP: outbound.NewHTTPClient(u.Timeouts, transport), IDs: store, EchoDelay: cfg.EchoDelay, Log: log})
		if c, ok := up.(io.Closer); ok { // an upstream that keeps connections open (WebSocket mode)
			m.closers = append(m.closers, c)
		}
		// Outermost first: one client span around the retries; retries go
		// around the breaker, so an open breaker stops them at once; the
		// credentials scrub is innermost, so nothing above it (spans,
		// logs, the engine and its store) sees an upstream's quote of a key.
		// A run resumed after a restart goes through the same chain.
		breaker := outbound.NewBreaker(u.Name, u.Breaker, log, tel.OnBreakerChange)
		wrapped := outbound.WrapAdmit(up, breaker.Admit, tel.Upstream(up, d.GenAI), outbound.Retry(u.Retry, d.Idempotent), breaker.Middleware(),
			creds.Middleware(u.Name))
		rt.upstreams = append(rt.upstreams, routedUpstream{up: wrapped, models: u.Models})
		if c, ok := up.(tokenCounter); ok {
			counters[u.Name] = c
		}
		if c, ok := up.(compacter); ok {
			compacters[u.Name] = c
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
		chain := cfg.FallbackChain(u.Name)
		if len(chain) == 0 {
			continue
		}
		fbs := make([]bridge.Upstream, len(chain))
		for j, n := range chain {
			fbs[j] = upByName[n]
		}
		rt.upstreams[i].up = outbound.NewFallback(upByName[u.Name], fbs, outbound.FallbackConfig{IDs: store, Logger: log,
			Idempotent: func(up bridge.Upstream) bool { d, ok := dialect(up.Dialect()); return ok && d.Idempotent }, OnFallback: tel.OnFallback})
		log.Info("upstream fallbacks", "upstream", u.Name, "fallbacks", strings.Join(chain, ","))
	}
	engine, err := bridge.New(bridge.Config{Store: store, Route: rt.Route, Logger: log, Tracer: tel.Tracer(), RunTimeout: cfg.RunTimeout, ResumeRetry: cfg.ResumeRetry,
		MaxRunsPerPrincipal: cfg.MaxRunsPerPrincipal, LiveEvents: cfg.LiveEvents})
	if err != nil {
		store.Close()
		return nil, err
	}
	m.engine = engine
	// Runs a crash left running: those whose upstream can resume them go
	// on upstream; the others are closed as interrupted.
	resumed := resumeRuns(ctx, engine, rt, running, log)
	var ids []string
	if leased {
		ids, err = leaser.InterruptRuns(ctx, reasonReplicaGone, time.Now().UTC(), notIn(running, resumed)...)
	} else {
		ids, err = store.InterruptRunning(ctx, "bridge restarted", time.Now().UTC(), resumed...)
	}
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
	proxies, err := cfg.trustedProxies()
	if err != nil {
		_ = engine.Close(ctx)
		store.Close()
		return nil, err
	}
	// The inbound dialects: each serves its routes, renders its runs for the
	// run API, and answers auth failures in its own error shape.
	deps := InboundDeps{Engine: engine, Store: store, Log: log, Model: cfg.Model, Models: rt.Models,
		CountTokens: countTokens(rt, counters), Compact: compact(rt, compacters, creds), A2A: cfg.A2A, TrustedProxies: proxies, WriteTimeout: cfg.WriteTimeout}
	var served []ServedDialect
	for _, row := range Dialects {
		if row.Inbound != nil {
			served = append(served, row.Inbound(deps))
		}
	}
	for _, d := range served {
		if c, ok := d.(io.Closer); ok { // a dialect with work in the background (stored Responses)
			m.closers = append(m.closers, c)
		}
	}

	mux := http.NewServeMux()
	byName := map[string]inbound.Dialect{}
	var create http.Handler // POST /v1/runs, from the dialect that creates runs (Hermes)
	for _, d := range served {
		if c, ok := d.(interface{ CreateRun() http.Handler }); ok {
			create = c.CreateRun()
		}
		byName[d.Name()] = d
		for _, p := range d.Routes() {
			mux.Handle(p, inbound.ReceiveBody(cfg.BodyTimeout, d.WriteError, authenticate(keys, d.Name(), d.WriteError), inbound.CheckIDs(d.WriteError, inbound.Accept(d))))
		}
		m.routes = append(m.routes, d.Routes()...)
		if pd, ok := d.(interface{ PublicRoutes() []string }); ok { // an A2A agent card needs no key
			for _, p := range pd.PublicRoutes() {
				mux.Handle(p, d)
			}
			m.routes = append(m.routes, pd.PublicRoutes()...)
		}
	}
	def := served[0] // the run API answers in the first row's errors (openai)
	ra := runs.New(runs.Config{Engine: engine, Default: def, Dialects: byName, Create: create,
		ChannelsPerSession: cfg.Subscribe.ChannelsPerSession, ChannelsPerPrincipal: cfg.Subscribe.ChannelsPerPrincipal,
		ChannelKeepAlive: cfg.Subscribe.KeepAlive, ChannelPoll: cfg.Subscribe.Poll})
	for _, p := range ra.Routes() {
		mux.Handle(p, inbound.ReceiveBody(cfg.BodyTimeout, def.WriteError, authenticate(keys, "", def.WriteError), inbound.CheckIDs(def.WriteError, ra)))
	}
	m.routes = append(m.routes, ra.Routes()...)
	// The inspector: an admin key sees every run, another key its
	// principal's; with no keys, loopback clients see every run.
	// BRIDGE_ADMIN_KEY opens the inspector only: alone, it leaves the
	// dialects' endpoints open as they were.
	admins := &inbound.Keys{}
	if k := os.Getenv("BRIDGE_ADMIN_KEY"); k != "" {
		admins.AddAdminKey("admin", k)
	}
	access := ui.Open
	if keys.Enabled() || admins.Enabled() {
		access = ui.KeyAccess(admins, keys)
	}
	insp := ui.New(ui.Config{Engine: engine, Store: store, Dialects: byName, Default: def, Recorder: rec, Access: access})
	for _, p := range insp.Routes() {
		mux.Handle(p, inbound.ReceiveBody(cfg.BodyTimeout, def.WriteError, insp.Authenticate, inbound.CheckIDs(def.WriteError, insp)))
	}
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	m.routes = append(m.routes, insp.Routes()...)
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
	maxConns := cfg.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	m.ln = netutil.LimitListener(ln, maxConns)
	m.srv = &http.Server{
		Handler:           inbound.WriteDeadline(cfg.WriteTimeout, tel.Handler(outbound.AdvertiseDiscards(rec.Middleware(mux)), "/healthz", "/metrics")),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go m.janitor()
	if leased {
		go m.takeover(leaser, rt)
	} else {
		close(m.takeoverDone)
	}
	return m, nil
}

// reasonReplicaGone is the reason of a run closed because the replica that
// drove it died and its upstream cannot resume it.
const reasonReplicaGone = "the bridge replica running it stopped"

// takeover, on a store replicas share, takes over the runs of replicas that
// died (their lease ended) as a restart does: a run whose upstream can
// resume it goes on here, any other is closed as interrupted. It looks
// twice per lease, so a dead replica's runs go on within 1.5 leases, and
// at once when a replica that stops gracefully released the leases of the
// runs it hands over (bridge.Engine.Close).
func (m *Server) takeover(l bridge.Leaser, rt *routes) {
	defer close(m.takeoverDone)
	t := time.NewTicker(max(l.LeaseTTL()/2, 10*time.Millisecond))
	defer t.Stop()
	released, stop := l.WatchReleases()
	defer stop()
	for {
		select {
		case <-t.C:
		case <-released:
		case <-m.janitorStop:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.LeaseTTL())
		runs, err := l.TakeExpired(ctx)
		if err != nil {
			m.log.Warn("take over runs of stopped replicas", "err", err)
		} else if len(runs) > 0 {
			resumed := resumeRuns(ctx, m.engine, rt, runs, m.log)
			ids, err := l.InterruptRuns(ctx, reasonReplicaGone, time.Now().UTC(), notIn(runs, resumed)...)
			if err != nil {
				m.log.Warn("close runs of stopped replicas", "err", err)
			}
			m.log.Warn("took over the runs of a stopped replica", "resumed", len(resumed), "interrupted", len(ids))
		}
		cancel()
	}
}

// notIn returns the ids of runs not in ids.
func notIn(runs []*bridge.Run, ids []string) []string {
	var out []string
	for _, r := range runs {
		if !slices.Contains(ids, r.ID) {
			out = append(out, r.ID)
		}
	}
	return out
}

// authenticate is keys.Authenticate for a dialect, as the middleware
// inbound.ReceiveBody runs before it reads a body.
func authenticate(keys *inbound.Keys, dialect string, writeError func(http.ResponseWriter, error)) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler { return keys.Authenticate(dialect, writeError, h) }
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

// loadKeys reads the inbound keys: BRIDGE_API_KEY (principal "default"),
// BRIDGE_API_KEYS=k1,k2,... (each its own principal, named by a prefix of
// the key's hash) and the config's keys (held as hashes; admin: true marks
// an inspector admin). None: no auth.
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
		add := keys.AddHash
		if k.Admin {
			add = keys.AddAdminHash
		}
		if err := add(k.Name, k.SHA256, k.Dialects...); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// openStore opens the log db names: a PostgreSQL database for a
// postgres:// URL (several replicas may share it), else a SQLite file.
func openStore(ctx context.Context, cfg Config) (bridge.Store, error) {
	db := cfg.DB
	if postgres.IsURL(db) {
		s, err := postgres.Open(ctx, db, postgres.Options{Lease: cfg.Lease})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err) // the URL may hold a password: not in the message
		}
		return s, nil
	}
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", db, err)
	}
	return s, nil
}

// upstreamKey is the key of upstream u: the variable its api_key_env
// names, else BRIDGE_UPSTREAM_API_KEY.
func upstreamKey(u Upstream) string {
	if u.APIKeyEnv != "" {
		return os.Getenv(u.APIKeyEnv)
	}
	return os.Getenv("BRIDGE_UPSTREAM_API_KEY")
}

// tokenCounter is an upstream that counts a request's tokens (an
// Anthropic upstream's count_tokens).
type tokenCounter interface {
	CountTokens(ctx context.Context, req *bridge.Request) (int64, error)
}

// countTokens answers Anthropic's count_tokens at the upstream the model
// routes to when it is an Anthropic one (its own count, outside the
// breaker and retries: counting is not a model call); ok is false for any
// other upstream, and the inbound side estimates.
func countTokens(rt *routes, counters map[string]tokenCounter) func(context.Context, *bridge.Request) (int64, bool, error) {
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

// compacter is an upstream with compaction of its own (a Responses
// upstream's /responses/compact); CodeUnsupported: it has none after all.
type compacter interface {
	Compact(ctx context.Context, req *bridge.Request) ([]byte, error)
}

// compact asks the upstream a request routes to for a compaction, when it
// has its own (ok false: the caller makes one). Its errors go through the
// credentials scrub, as a call's do.
func compact(rt *routes, compacters map[string]compacter, creds *outbound.Credentials) func(context.Context, *bridge.Request) ([]byte, bool, error) {
	return func(ctx context.Context, req *bridge.Request) ([]byte, bool, error) {
		up, err := rt.Route(req.Model)
		if err != nil {
			return nil, false, err
		}
		c := compacters[up.Name()]
		if c == nil {
			return nil, false, nil
		}
		b, err := c.Compact(ctx, req)
		if bridge.ErrorCode(err) == bridge.CodeUnsupported {
			return nil, false, nil
		}
		var be *bridge.Error
		if errors.As(err, &be) {
			creds.ScrubError(up.Name(), be)
		}
		return b, err == nil, err
	}
}

// Config is the configuration the server runs with.
func (m *Server) Config() Config { return m.cfg }

// Store is the server's store.
func (m *Server) Store() bridge.Store { return m.store }

// Engine returns the server's engine (a test reads a live run's window
// through it: bridge.Engine.LiveEvents).
func (m *Server) Engine() *bridge.Engine { return m.engine }

// Addr is the address the bridge listens on.
func (m *Server) Addr() string { return m.ln.Addr().String() }

// Endpoints lists the served routes.
func (m *Server) Endpoints() []string { return m.routes }

// Run serves until Close; it returns nil after a Close.
func (m *Server) Run() error {
	err := m.srv.Serve(m.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, lets streams end until ctx is done, cuts the
// streams left, interrupts the runs still going (on a store replicas
// share, hands those whose upstream can resume them to another replica:
// bridge.Engine.Close), closes the store, and flushes the spans and
// metrics still buffered.
func (m *Server) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		err := m.srv.Shutdown(ctx)
		if err != nil {
			m.engine.Drain() // on a shared store, the runs of the streams cut now are handed over, not cancelled
			_ = m.srv.Close()
		}
		close(m.janitorStop)
		<-m.janitorDone
		<-m.takeoverDone
		ectx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if ctx.Err() == nil {
			ectx = ctx
		}
		_ = m.engine.Close(ectx)
		for _, c := range m.closers {
			_ = c.Close()
		}
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
func (m *Server) janitor() {
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
