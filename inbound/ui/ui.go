package ui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
)

//go:embed assets
var assets embed.FS

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	Store  bridge.Store
	// Dialects renders a run's client wire by its inbound dialect; Default
	// writes the API's errors.
	Dialects map[string]inbound.Dialect
	Default  inbound.Dialect
	// Recorder holds the recorded upstream calls (nil: none recorded).
	Recorder *Recorder
	// Access says who a request is: the principal whose runs it may see,
	// or every principal's for an admin; an error refuses it.
	Access func(r *http.Request) (principal string, admin bool, err error)
}

// Limits of one page.
const (
	maxListLimit  = 200
	maxPageEvents = 5000
	maxWire       = 512 << 10
)

// Handler serves the inspector under /ui/. It is safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the handler.
func New(cfg Config) *Handler {
	sub, _ := fs.Sub(assets, "assets")
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /ui/{$}", h.index)
	h.mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", http.FileServerFS(sub)))
	h.mux.HandleFunc("GET /ui/api/me", h.api(h.me))
	h.mux.HandleFunc("GET /ui/api/runs", h.api(h.list))
	h.mux.HandleFunc("GET /ui/api/runs/{run}", h.api(h.run))
	h.mux.HandleFunc("GET /ui/api/runs/{run}/live", h.live)
	h.mux.HandleFunc("POST /ui/api/runs/{run}/stop", h.api(h.stop))
	h.mux.HandleFunc("POST /ui/api/runs/{run}/steer", h.api(h.steer))
	h.mux.HandleFunc("GET /ui/api/sessions/{session}", h.api(h.session))
	h.mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		h.cfg.Default.WriteError(w, bridge.Errorf(bridge.CodeNotFound, "no such inspector page or endpoint"))
	})
	return h
}

// Routes lists the patterns the handler serves.
func (h *Handler) Routes() []string {
	return []string{"GET /ui/{$}", "GET /ui/assets/", "GET /ui/api/me", "GET /ui/api/runs", "GET /ui/api/runs/{run}",
		"GET /ui/api/runs/{run}/live", "POST /ui/api/runs/{run}/stop", "POST /ui/api/runs/{run}/steer", "GET /ui/api/sessions/{session}", "/ui/"}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		h.cfg.Default.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	_, _ = w.Write(b)
}

// who is the caller: the principal it may see, or all for an admin.
type who struct {
	principal string
	admin     bool
}

func (u who) sees(run *bridge.Run) bool { return u.admin || run.Principal == u.principal }

type whoKey struct{}

// Authenticate decides access to the API before anything reads a request
// body (inbound.ReceiveBody's auth): a refused request is answered at
// once, its connection closed rather than its body waited for. The pages
// and assets are open: the page asks for a key.
func (h *Handler) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/ui/api/") {
			next.ServeHTTP(w, r)
			return
		}
		u, err := h.access(r)
		if err != nil {
			if r.ContentLength != 0 {
				w.Header().Set("Connection", "close")
			}
			h.cfg.Default.WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, u)))
	})
}

// access is who r is: as Authenticate found, else as Access says.
func (h *Handler) access(r *http.Request) (who, error) {
	if u, ok := r.Context().Value(whoKey{}).(who); ok {
		return u, nil
	}
	p, admin, err := h.cfg.Access(r)
	return who{principal: p, admin: admin}, err
}

// api wraps an endpoint: access first, then the answer as JSON.
func (h *Handler) api(f func(r *http.Request, u who) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := h.access(r)
		if err != nil {
			h.cfg.Default.WriteError(w, err)
			return
		}
		v, err := f(r, u)
		if err != nil {
			h.cfg.Default.WriteError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(v)
	}
}

// Me is GET /ui/api/me.
type Me struct {
	Principal string `json:"principal"`
	Admin     bool   `json:"admin"`
}

func (h *Handler) me(r *http.Request, u who) (any, error) {
	return Me{Principal: u.principal, Admin: u.admin}, nil
}

// RunList is GET /ui/api/runs: a page of runs, newest first; Next is the
// before= of the next page ("" on the last).
type RunList struct {
	Runs []*bridge.Run `json:"runs"`
	Next string        `json:"next,omitempty"`
}

func (h *Handler) list(r *http.Request, u who) (any, error) {
	f, err := ParseFilter(r.URL.Query(), time.Now())
	if err != nil {
		return nil, err
	}
	if !u.admin {
		f.Principal = u.principal
	}
	runs, err := h.cfg.Store.ListRuns(r.Context(), f)
	if err != nil {
		return nil, err
	}
	out := RunList{Runs: runs}
	if out.Runs == nil {
		out.Runs = []*bridge.Run{}
	}
	for i, run := range out.Runs {
		if run.Status == bridge.StatusRunning { // the live state: usage and last seq so far
			if lr, err := h.cfg.Engine.Run(bridge.WithPrincipal(r.Context(), run.Principal), run.ID); err == nil {
				out.Runs[i] = lr
			}
		}
	}
	if len(runs) == f.Limit {
		out.Next = runs[len(runs)-1].ID
	}
	return out, nil
}

// ParseFilter reads the list's query: status, inbound, outbound, model,
// session, since and until (RFC 3339, or a duration back from now),
// before (a run id: the next page) and limit (1 to 200, default 50).
func ParseFilter(q map[string][]string, now time.Time) (bridge.RunFilter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	f := bridge.RunFilter{Status: bridge.Status(get("status")), Inbound: get("inbound"), Outbound: get("outbound"), Model: get("model"),
		SessionID: get("session"), Before: get("before"), Limit: 50}
	switch f.Status {
	case "", bridge.StatusRunning, bridge.StatusCompleted, bridge.StatusFailed, bridge.StatusCancelled,
		bridge.StatusInterrupted, bridge.StatusInputRequired:
	default:
		return f, bridge.Errorf(bridge.CodeInvalid, "status: unknown status %q", f.Status)
	}
	var err error
	if v := get("since"); v != "" {
		if f.Since, err = ParseSince(v, now); err != nil {
			return f, bridge.Errorf(bridge.CodeInvalid, "since: %v", err)
		}
	}
	if v := get("until"); v != "" {
		if f.Until, err = ParseSince(v, now); err != nil {
			return f, bridge.Errorf(bridge.CodeInvalid, "until: %v", err)
		}
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return f, bridge.Errorf(bridge.CodeInvalid, "limit must be between 1 and %d", maxListLimit)
		}
		f.Limit = n
	}
	return f, nil
}

// ParseSince reads a time: RFC 3339, or a duration back from now (1h).
func ParseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, bridge.Errorf(bridge.CodeInvalid, "want an RFC 3339 time or a duration such as 1h, not %q", v)
}

// lookup finds a run the caller may see (CodeNotFound otherwise, as for a
// run that does not exist), live if it is running.
func (h *Handler) lookup(ctx context.Context, id string, u who) (*bridge.Run, error) {
	run, err := h.cfg.Store.Run(ctx, id)
	if err != nil || !u.sees(run) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "run %q not found", id)
	}
	if run.Status == bridge.StatusRunning {
		if lr, err := h.cfg.Engine.Run(bridge.WithPrincipal(ctx, run.Principal), id); err == nil {
			run = lr
		}
	}
	return run, nil
}

// RunPage is GET /ui/api/runs/{run}: everything the run page shows.
type RunPage struct {
	Run         *bridge.Run `json:"run"`
	LastEventID string      `json:"last_event_id,omitempty"`
	// Timeline is what `bridge runs show --json` prints.
	Timeline *Timeline `json:"timeline"`
	// Events are the run's events with their contents (at most 5000).
	Events          []bridge.Event   `json:"events"`
	EventsTruncated bool             `json:"events_truncated,omitempty"`
	Messages        []bridge.Message `json:"messages"`
	Waterfall       []Mark           `json:"waterfall"`
	Client          Wire             `json:"client"`
	Upstream        UpstreamWire     `json:"upstream"`
}

// Mark is one point of the latency waterfall, in ms from the run's start
// (nil: not known for this run).
type Mark struct {
	Name string   `json:"name"`
	MS   *float64 `json:"ms"`
}

// Wire is what the client received, rendered in its dialect.
type Wire struct {
	Dialect     string `json:"dialect"`
	ContentType string `json:"content_type,omitempty"`
	Body        string `json:"body"`
	Truncated   bool   `json:"truncated,omitempty"`
}

// UpstreamWire is what the upstream sent, when the run was recorded.
type UpstreamWire struct {
	Dialect  string `json:"dialect"`
	Name     string `json:"name"`
	Recorded bool   `json:"recorded"`
	Calls    []Call `json:"calls"`
}

func (h *Handler) run(r *http.Request, u who) (any, error) {
	ctx := r.Context()
	run, err := h.lookup(ctx, r.PathValue("run"), u)
	if err != nil {
		return nil, err
	}
	evs, err := h.cfg.Store.Events(ctx, run.ID, 0, maxPageEvents+1)
	if err != nil {
		return nil, err
	}
	p := &RunPage{Run: run}
	if len(evs) > maxPageEvents {
		evs, p.EventsTruncated = evs[:maxPageEvents], true
	}
	if run.LastSeq > 0 {
		p.LastEventID = bridge.EventID(run.ID, run.LastSeq)
	}
	p.Events = evs
	if p.Events == nil {
		p.Events = []bridge.Event{}
	}
	p.Timeline = BuildTimeline(ctx, h.cfg.Store, run, evs)
	if p.Messages, err = h.cfg.Store.RunMessages(ctx, run.ID); err != nil {
		return nil, err
	}
	if p.Messages == nil {
		p.Messages = []bridge.Message{}
	}
	p.Client = h.clientWire(bridge.WithPrincipal(ctx, run.Principal), run, evs)
	p.Upstream = UpstreamWire{Dialect: run.Outbound, Name: run.Upstream}
	if p.Upstream.Calls, err = h.cfg.Recorder.Calls(ctx, run.ID); err != nil {
		return nil, err
	}
	p.Upstream.Recorded = len(p.Upstream.Calls) > 0
	if p.Upstream.Calls == nil {
		p.Upstream.Calls = []Call{}
	}
	p.Waterfall = waterfall(run, p.Timeline, evs, p.Upstream.Calls)
	return p, nil
}

// waterfall places the run's moments: received (0), the first upstream
// call's response headers and first body byte (recorded runs only), the
// first event the upstream gave, the first content (text, reasoning or a
// tool call), its commit, the first byte written to the client, and the
// end.
func waterfall(run *bridge.Run, tl *Timeline, evs []bridge.Event, calls []Call) []Mark {
	zero := 0.0
	marks := []Mark{{Name: "received", MS: &zero}, {Name: "upstream connected"}, {Name: "first upstream byte"},
		{Name: "first upstream event"}, {Name: "first content"}, {Name: "first commit"}, {Name: "first client byte"}, {Name: "end"}}
	if len(calls) > 0 {
		c := calls[0]
		off := ms(c.Started.Sub(run.Created))
		at := func(v *float64) *float64 {
			if v == nil {
				return nil
			}
			x := off + *v
			return &x
		}
		marks[1].MS, marks[2].MS = at(c.HeadersMS), at(c.FirstByteMS)
	}
	for _, ev := range evs {
		if ev.Source == bridge.SourceModel || ev.Source == bridge.SourceAgent {
			v := ms(ev.Time.Sub(run.Created))
			marks[3].MS = &v
			break
		}
	}
	marks[4].MS = tl.TTFTMS
	marks[5].MS, marks[6].MS = tl.FirstCommitMS, tl.FirstClientByteMS
	marks[7].MS = tl.DurationMS
	return marks
}

// clientWire renders the run's events as its client received them: the
// inbound dialect's encoder, made fresh, over the committed events (what a
// client resuming from the start gets).
func (h *Handler) clientWire(ctx context.Context, run *bridge.Run, evs []bridge.Event) Wire {
	wire := Wire{Dialect: run.Inbound}
	d, ok := h.cfg.Dialects[run.Inbound]
	if !ok {
		return wire
	}
	bw := &bufWriter{header: http.Header{}, max: maxWire}
	req, _ := http.NewRequestWithContext(inbound.WithAsReceived(ctx), http.MethodGet, "/v1/runs/"+run.ID+"/events", nil)
	d.ServeEvents(bw, req, run, stream(evs))
	wire.ContentType = bw.header.Get("Content-Type")
	wire.Body, wire.Truncated = bw.buf.String(), bw.cut
	if run.Status == bridge.StatusRunning && strings.HasPrefix(wire.ContentType, "text/event-stream") {
		wire.Body = openEnded(wire.Body)
	}
	return wire
}

// openEnded drops the frames an SSE rendering ends with that belong to no
// event (no id: line; OpenAI's data: [DONE]): the encoder closes the
// stream when the events so far run out, but a running run's client has
// not been sent them yet.
func openEnded(body string) string {
	frames := strings.SplitAfter(body, "\n\n")
	for len(frames) > 0 {
		f := frames[len(frames)-1]
		if strings.HasPrefix(f, "id:") || strings.Contains(f, "\nid:") {
			break
		}
		frames = frames[:len(frames)-1]
	}
	return strings.Join(frames, "")
}

// stream yields evs.
func stream(evs []bridge.Event) bridge.Stream {
	return func(yield func(bridge.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// bufWriter is an http.ResponseWriter into memory, cut at max bytes.
type bufWriter struct {
	header http.Header
	buf    bytes.Buffer
	max    int
	cut    bool
}

func (b *bufWriter) Header() http.Header { return b.header }
func (b *bufWriter) WriteHeader(int)     {}
func (b *bufWriter) Flush()              {}
func (b *bufWriter) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.cut = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

// SessionPage is GET /ui/api/sessions/{session}: its runs, oldest first,
// and its transcript. A session is named by its principal and id: the
// caller's own, or for an admin the one ?principal= names (by default the
// principal of the newest run of a session of that id).
type SessionPage struct {
	Session  *bridge.Session  `json:"session"`
	Runs     []*bridge.Run    `json:"runs"`
	Messages []bridge.Message `json:"messages"`
	// More says older messages exist than the page holds.
	More bool `json:"more,omitempty"`
}

func (h *Handler) session(r *http.Request, u who) (any, error) {
	ctx := r.Context()
	id := r.PathValue("session")
	principal := u.principal
	if u.admin {
		if q := r.URL.Query(); q.Has("principal") {
			principal = q.Get("principal")
		} else if newest, err := h.cfg.Store.ListRuns(ctx, bridge.RunFilter{SessionID: id, Limit: 1}); err == nil && len(newest) == 1 {
			principal = newest[0].Principal
		}
	}
	s, err := h.cfg.Store.Session(ctx, principal, id)
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeNotFound, "session %q not found", id)
	}
	runs, err := h.cfg.Store.ListRuns(ctx, bridge.RunFilter{SessionID: id, Principal: principal, Limit: 500})
	if err != nil {
		return nil, err
	}
	slices.Reverse(runs)
	msgs, more, err := h.cfg.Store.Messages(ctx, principal, id, 0, 500)
	if err != nil {
		return nil, err
	}
	p := &SessionPage{Session: s, Runs: runs, Messages: msgs, More: more}
	if p.Runs == nil {
		p.Runs = []*bridge.Run{}
	}
	if p.Messages == nil {
		p.Messages = []bridge.Message{}
	}
	return p, nil
}

// stop cancels a running run (as the run API's cancel does).
func (h *Handler) stop(r *http.Request, u who) (any, error) {
	run, err := h.lookup(r.Context(), r.PathValue("run"), u)
	if err != nil {
		return nil, err
	}
	return h.cfg.Engine.Abort(bridge.WithPrincipal(r.Context(), run.Principal), run.ID)
}

// steer adds {"input": "..."} to a running run.
func (h *Handler) steer(r *http.Request, u who) (any, error) {
	run, err := h.lookup(r.Context(), r.PathValue("run"), u)
	if err != nil {
		return nil, err
	}
	var body struct {
		Input string `json:"input"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10)).Decode(&body); err != nil || body.Input == "" {
		return nil, bridge.Errorf(bridge.CodeInvalid, `request body: want {"input": "<text>"}`)
	}
	msg := bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(body.Input)}}
	if err := h.cfg.Engine.Steer(bridge.WithPrincipal(r.Context(), run.Principal), run.ID, msg); err != nil {
		return nil, err
	}
	return map[string]any{"run_id": run.ID, "accepted": true}, nil
}

// Open is the Access of a bridge with no keys: every run, to a client on
// the loopback interface only.
func Open(r *http.Request) (string, bool, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		return "", true, nil
	}
	return "", false, bridge.Errorf(bridge.CodePermissionDenied, "the inspector answers only loopback clients when no keys are configured")
}

// KeyAccess is the Access of a bridge with keys: the key, found in the
// first of sets that holds it, shows its principal's runs, or every run
// for an admin key.
func KeyAccess(sets ...*inbound.Keys) func(r *http.Request) (string, bool, error) {
	return func(r *http.Request) (string, bool, error) {
		err := error(bridge.Errorf(bridge.CodeUnauthenticated, "invalid API key"))
		for _, keys := range sets {
			if !keys.Enabled() {
				continue
			}
			var k inbound.Key
			if k, err = keys.Lookup(r); err == nil {
				return k.Principal, k.Admin, nil
			}
		}
		return "", false, err
	}
}
