package adk

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/adk"
	"github.com/bridge-dev/bridge/outbound"
)

// IDStore is the part of the store the client keeps its id maps in.
type IDStore = outbound.IDStore

// Config configures a Client.
type Config struct {
	// Name is the upstream's configured name (the scope of its id maps).
	Name string
	// URL is the api_server's root (where /list-apps and /run_sse are).
	URL string
	// App replaces the request's model as the app name when set.
	App string
	// APIKey is sent as a bearer token when set; it never appears in
	// logs, errors or history.
	APIKey string
	// IDs keeps the session map; without it every turn opens a session.
	IDs IDStore
	// Timeouts and HTTPClient as for every upstream.
	Timeouts   outbound.Timeouts
	HTTPClient *http.Client
}

// Client calls one api_server. It is safe for concurrent use.
type Client struct {
	cfg  Config
	root string

	outbound.DiscardSignal // whether the server is a bridge (takes X-Replace-From)
	sender                 outbound.Sender
}

var _ bridge.Upstream = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) *Client {
	cfg.HTTPClient, cfg.Timeouts = outbound.Defaults(cfg.HTTPClient, cfg.Timeouts)
	if cfg.Name == "" {
		cfg.Name = "adk"
	}
	c := &Client{cfg: cfg, root: strings.TrimSuffix(cfg.URL, "/")}
	c.sender = outbound.Sender{Name: cfg.Name, Client: cfg.HTTPClient, DecodeError: wire.DecodeError, Note: c.Note}
	return c
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

const maxBody = 1 << 20

// Open sends the run's new input to the app's session the transcript
// leads to (or to a new session) with run_sse, and returns its events.
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	app := c.cfg.App
	if app == "" {
		app = req.Model
	}
	if !wire.ValidAppName(app) {
		return nil, bridge.Errorf(bridge.CodeInvalid, "model %q is not an ADK app name (letters, digits and _)", app)
	}
	user := bridge.PrincipalFromContext(ctx)
	if user == "" {
		user = "bridge"
	}
	content, dropped, err := wire.NewMessage(req, false)
	if err != nil {
		return nil, err
	}
	prefix, input := wire.SplitInput(req.Messages)

	k := &call{c: c, ctx: ctx, app: app, user: user, transcript: req.Messages, dec: &wire.StreamDecoder{}, bridgeSession: req.SessionID,
		tools: req.Tools}
	pkey := wire.TranscriptKey(app, user, prefix)
	if run := bridge.RunIDFromContext(ctx); c.cfg.IDs != nil && run != "" && results(input) {
		// The client's results for the long-running calls the run's
		// invocation stopped at go to the session that waits for them.
		k.session, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, "run:"+run)
	}
	if req.DiscardUpstream != "" && req.SessionID != "" && c.cfg.IDs != nil && k.session == "" {
		// A bridge discards the turns in the session it holds.
		if k.session, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, "bridge-session:"+req.SessionID); k.session != "" {
			k.replaceFrom = req.DiscardUpstream
		}
	}
	if pkey != "" && c.cfg.IDs != nil && k.session == "" {
		k.session, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, pkey)
	}
	resp, cancel, err := k.post(content)
	if err == nil && resp != nil && pkey != "" && c.cfg.IDs != nil {
		// The session has moved past the prefix: a transcript that
		// branches from it again (a regenerate, an edit) must not land in
		// a session holding the turns it left out.
		_ = c.cfg.IDs.PutID(context.WithoutCancel(ctx), bridge.IDMapping{Kind: bridge.IDSession, Scope: c.cfg.Name, Local: pkey})
	}
	if err != nil && k.session != "" && bridge.ErrorCode(err) == bridge.CodeNotFound {
		k.session = "" // the upstream forgot the session: a new one, with the history
		resp, cancel, err = nil, nil, nil
	}
	if resp == nil && err == nil {
		if pkey != "" {
			content, dropped, _ = wire.NewMessage(req, true)
		}
		if err := k.create(); err != nil {
			return nil, err
		}
		resp, cancel, err = k.post(content)
	}
	if err != nil {
		return nil, err
	}
	k.body = outbound.IdleBody(resp.Body, c.cfg.Timeouts.Idle, cancel)
	k.cancel = cancel
	if len(req.Tools) > 0 && resp.Header.Get("X-Run-Id") == "" {
		// Sent in the bridge's extension key, which ADK ignores.
		dropped = append(dropped, "tools")
	}
	return k.bridgeCall(resp, dropped), nil
}

// results reports whether input is only tool results (a client answering
// the calls the agent asked for).
func results(input []bridge.Message) bool {
	for i := range input {
		if input[i].Role != bridge.RoleTool {
			return false
		}
	}
	return len(input) > 0
}

// bridgeCall is the engine's view of the call. An upstream that names its
// run in X-Run-Id is a bridge: its run API stops the run (closing run_sse
// leaves a bridge's run going, as it leaves any resumable run) and takes
// a steer into the same upstream turn. ADK's own api_server has neither:
// closing run_sse is its stop (ADK-JS aborts the invocation when the
// connection closes), and a steer cannot join its invocation.
func (k *call) bridgeCall(resp *http.Response, dropped []string) *bridge.Call {
	out := &bridge.Call{Events: k.events, Dropped: dropped, Steer: k.steerNext}
	if run := resp.Header.Get("X-Run-Id"); run != "" {
		k.upstreamRun = run
		out.Cancel, out.Steer = k.cancelRun, k.steerRun
	}
	return out
}

// Resume implements bridge.Resumer: after a restart, it asks the upstream
// session the run went to for the events after the last one committed
// (run_sse with lastEventId and no newMessage). A bridge's ADK endpoint
// answers with the rest; ADK itself answers an empty stream, and the run
// ends interrupted.
func (c *Client) Resume(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
	app := c.cfg.App
	if app == "" {
		app = run.Model
	}
	user := run.Principal
	if user == "" {
		user = "bridge"
	}
	k := &call{c: c, ctx: ctx, app: app, user: user, transcript: req.Messages, dec: &wire.StreamDecoder{}, bridgeSession: req.SessionID}
	if c.cfg.IDs != nil {
		k.session, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, "run:"+run.ID)
		if k.session == "" && req.SessionID != "" {
			k.session, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, "bridge-session:"+req.SessionID)
		}
	}
	if k.session == "" {
		return nil, bridge.Errorf(bridge.CodeUnsupported, "upstream %s: the ADK session of run %s is not known", c.cfg.Name, run.ID)
	}
	k.dec.Prime(events)
	for _, ev := range events {
		if ev.Kind == bridge.KindTextDelta {
			k.text.WriteString(ev.Text)
		}
	}
	if k.dec.LastEventID == "" {
		return nil, bridge.Errorf(bridge.CodeUnsupported, "upstream %s: run %s has no upstream event to resume after", c.cfg.Name, run.ID)
	}
	resp, cancel, err := k.resume(k.dec.LastEventID)
	if err != nil {
		return nil, err
	}
	k.body = outbound.IdleBody(resp.Body, c.cfg.Timeouts.Idle, cancel)
	k.cancel = cancel
	return k.bridgeCall(resp, nil), nil
}

var _ bridge.Resumer = (*Client)(nil)

// call is one run_sse request being read.
type call struct {
	c          *Client
	ctx        context.Context
	rctx       context.Context // the run_sse request's, cancelled on an idle gap
	app, user  string
	session    string
	transcript []bridge.Message
	dec        *wire.StreamDecoder
	// bridgeSession is the bridge's session of the run, under which the
	// upstream session is kept for a resume after a restart.
	bridgeSession string
	// replaceFrom is the upstream run the run_sse request discards (a
	// bridge upstream's X-Replace-From).
	replaceFrom string
	body        io.ReadCloser
	cancel      context.CancelCauseFunc
	text        strings.Builder // the run's answer text, as the transcript keeps it
	// upstreamRun is the run a bridge upstream named (X-Run-Id), for its
	// run API; "" for ADK itself.
	upstreamRun     string
	cancelRequested atomic.Bool
	tools           []bridge.Tool // the client's, sent in the bridge's extension key
}

func (k *call) sessionsURL() string {
	return k.c.root + "/apps/" + url.PathEscape(k.app) + "/users/" + url.PathEscape(k.user) + "/sessions"
}

func (k *call) do(ctx context.Context, method, u string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad URL", k.c.cfg.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if k.c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+k.c.cfg.APIKey)
	}
	if k.replaceFrom != "" && strings.HasSuffix(u, "/run_sse") {
		req.Header.Set(outbound.HeaderReplaceFrom, k.replaceFrom)
	}
	return k.c.sender.Do(req)
}

// create makes a new upstream session (the server picks its id).
func (k *call) create() error {
	resp, err := k.do(k.ctx, http.MethodPost, k.sessionsURL(), []byte("{}"), "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var s struct {
		ID string `json:"id"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if json.Unmarshal(b, &s) != nil || s.ID == "" {
		return bridge.Errorf(bridge.CodeUpstream, "upstream %s: the created session has no id", k.c.cfg.Name)
	}
	k.session = s.ID
	return nil
}

// post sends run_sse with the new message, when a session is known.
func (k *call) post(content *wire.Content) (*http.Response, context.CancelCauseFunc, error) {
	if k.session == "" {
		return nil, nil, nil
	}
	if run := bridge.RunIDFromContext(k.ctx); run != "" {
		k.put(bridge.IDSession, "run:"+run, k.session)
	}
	if k.bridgeSession != "" {
		k.put(bridge.IDSession, "bridge-session:"+k.bridgeSession, k.session)
	}
	resp, cancel, err := k.runSSE(&wire.RunRequest{AppName: k.app, UserID: k.user, SessionID: k.session, NewMessage: content, Streaming: true,
		Tools: k.tools})
	if err != nil {
		return nil, nil, err
	}
	k.replaceFrom = "" // discarded: a retry of the request must not discard again
	return resp, cancel, nil
}

func (k *call) events(yield func(bridge.Event, error) bool) {
	defer func() { k.cancel(nil) }()
	idle := k.c.cfg.Timeouts.Idle
	d := k.dec
	body := k.body
	for resumes := 0; ; resumes++ {
		br := &brokenReader{r: body}
		var serr error
		got := false
		for ev, err := range d.Read(br) {
			if err != nil {
				serr = err
				break
			}
			got = true
			if !k.emit(ev, yield) {
				body.Close()
				return
			}
		}
		body.Close()
		if d.Done() {
			return
		}
		if serr == nil && d.Answered() { // ADK closes the stream after the final response
			k.emit(d.End(false), yield)
			return
		}
		if serr != nil && (br.err == nil || k.rctx.Err() != nil) {
			// Not a broken connection: a frame the decoder cannot read,
			// or the bridge's own cancel or idle timeout.
			yield(bridge.Event{}, outbound.StreamError(k.rctx, k.c.cfg.Name, idle, serr))
			return
		}
		// The connection closed before the run's final response. An
		// upstream that resumes (a bridge) sends the rest after the last
		// event id; ADK itself answers an empty stream, and the run is
		// interrupted, never completed.
		if resumes < maxResumes && d.LastEventID != "" && (got || resumes == 0) && k.ctx.Err() == nil {
			k.cancel(nil)
			resp, cancel, err := k.resume(d.LastEventID)
			if err == nil {
				k.cancel = cancel
				body = outbound.IdleBody(resp.Body, idle, cancel)
				continue
			}
		}
		f := d.End(false)
		if br.err != nil {
			f.Final.Reason = "the ADK stream broke before the run's final response"
		}
		k.emit(f, yield)
		return
	}
}

// emit yields ev after noting what the call keeps of it.
func (k *call) emit(ev bridge.Event, yield func(bridge.Event, error) bool) bool {
	switch ev.Kind {
	case bridge.KindTextDelta:
		k.text.WriteString(ev.Text)
	case bridge.KindMessageStarted:
		k.put(bridge.IDRun, bridge.RunIDFromContext(k.ctx), ev.ResponseID)
	case bridge.KindFinal:
		if ev.Final != nil && ev.Final.Status == bridge.StatusCancelled && !k.cancelRequested.Load() {
			// A stop the bridge did not ask for interrupts the run.
			f := *ev.Final
			f.Status = bridge.StatusInterrupted
			ev.Final = &f
		}
		k.finish(ev.Final)
	}
	return yield(ev, nil)
}

// maxResumes bounds the upstream resumes of one call.
const maxResumes = 3

// resume asks the upstream for the run's events after lastEventID (the
// chatkit convention: run_sse with lastEventId and no newMessage).
func (k *call) resume(lastEventID string) (*http.Response, context.CancelCauseFunc, error) {
	return k.runSSE(&wire.RunRequest{AppName: k.app, UserID: k.user, SessionID: k.session, Streaming: true, LastEventID: lastEventID})
}

// runSSE posts rr to /run_sse on a connection context of its own (k.rctx),
// whose cancel comes back with the stream.
func (k *call) runSSE(rr *wire.RunRequest) (*http.Response, context.CancelCauseFunc, error) {
	body, err := wire.EncodeRunRequest(rr)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(k.ctx)
	k.rctx = ctx
	resp, err := k.do(ctx, http.MethodPost, k.c.root+"/run_sse", body, "text/event-stream")
	if err != nil {
		cancel(nil)
		return nil, nil, err
	}
	return resp, cancel, nil
}

// finish records, after a completed run or one that waits for the
// client's tool results, the session the transcript now leads to.
func (k *call) finish(f *bridge.Final) {
	if f == nil || (f.Status != bridge.StatusCompleted && f.Status != bridge.StatusInputRequired) {
		return
	}
	next := append(append([]bridge.Message(nil), k.transcript...),
		bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart(k.text.String())}})
	k.put(bridge.IDSession, wire.TranscriptKey(k.app, k.user, next), k.session)
}

func (k *call) put(kind bridge.IDKind, local, remote string) {
	if k.c.cfg.IDs == nil || local == "" || remote == "" {
		return
	}
	_ = k.c.cfg.IDs.PutID(context.WithoutCancel(k.ctx), bridge.IDMapping{Kind: kind, Scope: k.c.cfg.Name, Local: local, Remote: remote})
}

// brokenReader remembers a failed read (not EOF) of the stream.
type brokenReader struct {
	r   io.Reader
	err error
}

func (b *brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// cancelRun stops a bridge upstream's run through its run API.
func (k *call) cancelRun(ctx context.Context) error {
	k.cancelRequested.Store(true)
	resp, err := k.do(ctx, http.MethodPost, k.c.root+"/v1/runs/"+url.PathEscape(k.upstreamRun)+"/cancel", nil, "application/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// steerRun passes a steer to a bridge upstream's run (its run API), which
// takes it into the same run. A run that takes no more input answers 409:
// CodeConflict, the steer is reported back.
func (k *call) steerRun(ctx context.Context, m bridge.Message) error {
	body, _ := json.Marshal(map[string]string{"input": m.Text()})
	resp, err := k.do(ctx, http.MethodPost, k.c.root+"/v1/runs/"+url.PathEscape(k.upstreamRun)+"/steer", body, "application/json")
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeConflict {
			return bridge.Errorf(bridge.CodeConflict, "upstream %s: the run takes no more input", k.c.cfg.Name)
		}
		return err
	}
	resp.Body.Close()
	return nil
}

// steerNext answers a steer over ADK's own api_server, which has no way
// to add input to an invocation in progress: CodeUnsupported, so the
// engine keeps it for the run's next upstream call (a new invocation in
// the same session) and the run records that it did not join the turn.
func (k *call) steerNext(context.Context, bridge.Message) error {
	return bridge.Errorf(bridge.CodeUnsupported, "upstream %s (ADK) takes no input into an invocation in progress", k.c.cfg.Name)
}
