package hermes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/hermes"
	"github.com/bridge-dev/bridge/outbound"
)

// IDs is the part of the store the client keeps its id maps in.
type IDs = outbound.IDStore

// Config configures a Client.
type Config struct {
	// Name is the upstream's configured name (the scope of its id maps).
	Name string
	// URL is the Hermes server's root, such as http://127.0.0.1:8642.
	URL string
	// APIKey is the server's API_SERVER_KEY, sent as a bearer token. It
	// never appears in logs, errors or history.
	APIKey string
	// Model, when set, is sent as the turn's model; else none is (the
	// agent's own; a client's model name means nothing to it).
	Model string
	// IDs keeps the session and run id maps (the store). Without it
	// every turn opens a new upstream session.
	IDs IDs
	// Timeouts bound connecting, the first byte and the idle gap between
	// frames (zero: outbound's defaults; the idle gap 120s, Hermes sends
	// a keepalive every 30s).
	Timeouts   outbound.Timeouts
	HTTPClient *http.Client
}

// Client calls a Hermes server. It is safe for concurrent use.
type Client struct {
	cfg  Config
	root string

	mu    sync.Mutex
	feats *features // what the server takes, once asked

	outbound.DiscardSignal // whether the server is a bridge (takes X-Replace-From)
	sender                 outbound.Sender
}

var (
	_ bridge.Upstream = (*Client)(nil)
	_ bridge.Resumer  = (*Client)(nil)
)

// New returns a client for cfg.
func New(cfg Config) *Client {
	cfg.HTTPClient, cfg.Timeouts = outbound.Defaults(cfg.HTTPClient, cfg.Timeouts)
	if cfg.Name == "" {
		cfg.Name = wire.Dialect
	}
	c := &Client{cfg: cfg, root: strings.TrimSuffix(cfg.URL, "/")}
	c.sender = outbound.Sender{Name: cfg.Name, Client: cfg.HTTPClient, DecodeError: wire.DecodeError, Note: c.Note}
	return c
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

const maxErrorBody = 1 << 20

// do sends one JSON request; a non-2xx answer is the upstream's error.
func (c *Client) do(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	return c.doHeader(ctx, method, path, body, accept, nil)
}

func (c *Client) doHeader(ctx context.Context, method, path string, body any, accept string, hdr http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, bridge.Errorf(bridge.CodeInternal, "encode hermes request")
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.root+path, rd)
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad URL", c.cfg.Name)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	return c.sender.Do(req)
}

// features are what a server says it takes beyond Hermes' own API.
type features struct {
	// tools: the client's tools in a turn body and their results as tool
	// messages (client_tools; Hermes' agent runs only its own).
	tools bool
	// history: a turn body's conversation_history, the transcript a fresh
	// session starts from (conversation_history; Hermes takes it on
	// /v1/runs only, so its session chat gets earlier turns as text).
	history bool
}

// encode is what the encoder needs to know of f.
func (f features) encode(fresh bool, model string) wire.EncodeOptions {
	return wire.EncodeOptions{Fresh: fresh, Tools: f.tools, History: f.history, Model: model}
}

// features asks the server's /v1/capabilities once what it takes (a
// bridge's Hermes API says client_tools and conversation_history). A
// server that answers none of it takes neither; one that does not answer
// is asked again next time.
func (c *Client) features(ctx context.Context) features {
	c.mu.Lock()
	known := c.feats
	c.mu.Unlock()
	if known != nil {
		return *known
	}
	var f features
	resp, err := c.do(ctx, http.MethodGet, "/v1/capabilities", nil, "application/json")
	if err != nil {
		if !refused(err) {
			return f // not an answer: ask again next time
		}
	} else {
		var caps struct {
			Features map[string]bool `json:"features"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&caps)
		resp.Body.Close()
		f = features{tools: caps.Features["client_tools"], history: caps.Features["conversation_history"]}
	}
	c.mu.Lock()
	c.feats = &f
	c.mu.Unlock()
	return f
}

// session returns the upstream session of the local one, creating it
// (fresh) when none is mapped.
func (c *Client) session(ctx context.Context, local string, renew bool) (remote string, fresh bool, err error) {
	if c.cfg.IDs != nil && local != "" && !renew {
		if r, err := c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, local); err == nil && r != "" {
			return r, false, nil
		}
	}
	resp, err := c.do(ctx, http.MethodPost, "/api/sessions", map[string]any{}, "application/json")
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	var v struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&v); err != nil || v.Session.ID == "" {
		return "", false, bridge.Errorf(bridge.CodeUpstream, "upstream %s: POST /api/sessions answered no session id", c.cfg.Name)
	}
	if c.cfg.IDs != nil && local != "" {
		if err := c.cfg.IDs.PutID(ctx, bridge.IDMapping{Kind: bridge.IDSession, Scope: c.cfg.Name, Local: local, Remote: v.Session.ID}); err != nil {
			return "", false, err
		}
	}
	return v.Session.ID, true, nil
}

// Open streams one turn of req's session through the upstream session's
// chat stream. The call's Cancel stops the upstream run
// (POST /v1/runs/{run_id}/stop); its Steer passes user input to it
// (POST /v1/runs/{run_id}/steer). A stream that breaks before done is
// resumed (GET .../chat/stream with Last-Event-ID "<run_id>:<seq>", which
// a bridge's Hermes API serves) with no event twice; where the server
// refuses that (Hermes' own), the call settles from the run's status.
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	remote, fresh, err := c.session(ctx, req.SessionID, false)
	if err != nil {
		return nil, err
	}
	var f features
	if len(req.Tools) > 0 || endsWithResults(req.Messages) || fresh && hasEarlier(req.Messages) {
		f = c.features(ctx)
	}
	body, dropped, err := wire.EncodeRequest(req, f.encode(fresh, c.cfg.Model))
	if err != nil {
		return nil, err
	}
	k := &call{c: c, ctx: ctx, session: remote, dec: wire.NewStreamDecoder(nil), local: bridge.RunIDFromContext(ctx)}
	if req.DiscardUpstream != "" && !fresh {
		// A bridge discards the turns in the session it holds.
		err = k.request(http.MethodPost, json.RawMessage(body), http.Header{outbound.HeaderReplaceFrom: {req.DiscardUpstream}})
	} else {
		err = k.post(body)
	}
	if err != nil && bridge.AsError(err).UpstreamCode == wire.CodeSessionNotFound && !fresh {
		// The upstream forgot the session: a new one, with the turns so far.
		if k.session, fresh, err = c.session(ctx, req.SessionID, true); err == nil {
			if body, dropped, err = wire.EncodeRequest(req, c.features(ctx).encode(true, c.cfg.Model)); err == nil {
				err = k.post(body)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return k.call(dropped), nil
}

// hasEarlier reports whether msgs hold a turn before the new input (an
// assistant message).
func hasEarlier(msgs []bridge.Message) bool {
	return slices.ContainsFunc(msgs, func(m bridge.Message) bool { return m.Role == bridge.RoleAssistant })
}

// endsWithResults reports whether msgs end with tool results.
func endsWithResults(msgs []bridge.Message) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].Role == bridge.RoleTool
}

// Resume implements bridge.Resumer: after a restart, it reads the rest of
// the run's upstream stream, after the last frame committed (GET
// .../chat/stream with Last-Event-ID "<run_id>:<seq>"): the upstream run
// went on while the bridge was down, and none of it is lost or repeated.
// A Hermes server without that route (Hermes' own) gives the run's outcome
// instead: the call settles from GET /v1/runs/{run_id}. A run whose
// upstream session or run is not known cannot be resumed (the engine ends
// it interrupted).
func (c *Client) Resume(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
	if c.cfg.IDs == nil || req.SessionID == "" {
		return nil, bridge.Errorf(bridge.CodeUnsupported, "upstream %s: no id map to find run %s's Hermes session", c.cfg.Name, run.ID)
	}
	remote, _ := c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, req.SessionID)
	upRun := run.UpstreamRunID
	if upRun == "" {
		upRun, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDRun, c.cfg.Name, run.ID)
	}
	if remote == "" || upRun == "" {
		return nil, bridge.Errorf(bridge.CodeUnsupported, "upstream %s: run %s has no Hermes run to resume", c.cfg.Name, run.ID)
	}
	k := &call{c: c, ctx: ctx, session: remote, dec: wire.NewStreamDecoder(nil), local: run.ID, mapped: true}
	k.dec.Prime(upRun, events)
	cur := 0 // the step being resumed began after the run's last final
	for i, ev := range events {
		if ev.Kind == bridge.KindFinal {
			cur = i + 1
		}
	}
	for _, ev := range events[cur:] {
		if ev.Kind == bridge.KindTextDelta {
			k.text.WriteString(ev.Text)
		}
	}
	if err := k.resume(); err != nil {
		if !refused(err) {
			return nil, err
		}
		k.settling = true // Hermes' own server: the run's status says how it ended
	}
	return k.call(nil), nil
}

// Steer passes user input to the upstream run (POST /v1/runs/{id}/steer);
// a run that no longer takes it answers CodeConflict
// (run_not_accepting_steer).
func (c *Client) Steer(ctx context.Context, upstreamRunID string, text string) error {
	resp, err := c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(upstreamRunID)+"/steer", map[string]any{"input": text}, "application/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// call is one turn's session stream being read, resumed as often as it
// breaks (within maxResumes without progress).
type call struct {
	c       *Client
	ctx     context.Context // the run's
	session string          // the upstream session
	dec     *wire.StreamDecoder
	local   string // the bridge's run id
	mapped  bool   // the run id map holds the upstream run

	body   io.ReadCloser
	rctx   context.Context // the current request's, cancelled on an idle gap
	cancel context.CancelCauseFunc

	bc       *bridge.Call    // the Call of this one, for its Dropped
	text     strings.Builder // the answer text read
	settling bool            // the stream cannot be resumed: settle instead
}

func (k *call) chatPath() string {
	return "/api/sessions/" + url.PathEscape(k.session) + "/chat/stream"
}

// post starts the turn.
func (k *call) post(body []byte) error {
	return k.request(http.MethodPost, json.RawMessage(body), nil)
}

// resume asks for the frames after the decoder's cursor.
func (k *call) resume() error {
	return k.request(http.MethodGet, nil, http.Header{"Last-Event-Id": {k.dec.Cursor()}})
}

func (k *call) request(method string, body any, hdr http.Header) error {
	ctx, cancel := context.WithCancelCause(k.ctx)
	resp, err := k.c.doHeader(ctx, method, k.chatPath(), body, "text/event-stream", hdr)
	if err != nil {
		cancel(nil)
		return err
	}
	if k.cancel != nil {
		k.cancel(nil)
	}
	k.rctx, k.cancel = ctx, cancel
	k.body = outbound.IdleBody(resp.Body, k.c.cfg.Timeouts.Idle, cancel)
	return nil
}

// call is the bridge's Call of this one.
func (k *call) call(dropped []string) *bridge.Call {
	k.bc = &bridge.Call{Events: k.events, Dropped: dropped, Cancel: k.stop, Steer: k.steer}
	return k.bc
}

// maxResumes bounds the resumes in a row that bring no frame.
const maxResumes = 5

func (k *call) events(yield func(bridge.Event, error) bool) {
	defer func() {
		if k.cancel != nil {
			k.cancel(nil)
		}
	}()
	if k.settling {
		k.settle(yield)
		return
	}
	idle := k.c.cfg.Timeouts.Idle
	for tries := 0; ; {
		br := &brokenReader{r: k.body}
		var serr error
		for ev, err := range k.dec.Read(br) {
			if err != nil {
				serr = err
				break
			}
			tries = 0 // progress: the budget of resumes starts over
			switch ev.Kind {
			case bridge.KindTextDelta:
				k.text.WriteString(ev.Text)
			case bridge.KindFinal:
				k.text.Reset() // a continued run's next step says more
			}
			if !k.mapped && k.c.cfg.IDs != nil && k.local != "" {
				if id := k.dec.RunID(); id != "" {
					k.mapped = true
					_ = k.c.cfg.IDs.PutID(context.WithoutCancel(k.ctx), bridge.IDMapping{Kind: bridge.IDRun, Scope: k.c.cfg.Name, Local: k.local, Remote: id})
				}
			}
			if !yield(ev, nil) {
				k.body.Close()
				return
			}
		}
		k.body.Close()
		if k.dec.Done() {
			return
		}
		if serr != nil && (br.err == nil || k.rctx.Err() != nil) {
			// Not a broken connection: a frame the decoder cannot read,
			// or the bridge's own cancel or idle timeout.
			yield(bridge.Event{}, outbound.StreamError(k.rctx, k.c.cfg.Name, idle, serr))
			return
		}
		// The connection broke (or closed) before done: the upstream run
		// goes on, so read the rest of it after the last frame read.
		if err := k.reopen(&tries, serr); err != nil {
			if refused(err) && k.dec.RunID() != "" {
				k.settle(yield) // Hermes' own server: the run's status says how it ended
				return
			}
			yield(bridge.Event{}, err)
			return
		}
	}
}

// settlePoll is the gap between two reads of a run's status.
const settlePoll = 500 * time.Millisecond

// settle ends a call whose stream broke when the server cannot resume it
// (Hermes' own has no resumable session stream): it reads the run's status
// (GET /v1/runs/{run_id}) until the run ends, then the rest of its output
// (what follows the text already read), its usage and its outcome. What
// the agent did in between (tool activity) is lost and named in Dropped;
// so is the answer when it does not continue the text read.
func (k *call) settle(yield func(bridge.Event, error) bool) {
	id := k.dec.RunID()
	k.bc.Dropped = append(k.bc.Dropped, "hermes: the run's events after its stream broke (its status gave the outcome)")
	var v struct {
		Status string `json:"status"`
		Output string `json:"output"`
		Error  string `json:"error"`
		Usage  *struct {
			InputTokens  *int64 `json:"input_tokens"`
			OutputTokens *int64 `json:"output_tokens"`
			TotalTokens  *int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	for {
		resp, err := k.c.do(k.ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, "application/json")
		if err != nil {
			if k.ctx.Err() != nil {
				err = context.Cause(k.ctx)
			}
			yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "upstream %s: the stream of run %s broke, and its status cannot be read: %s",
				k.c.cfg.Name, id, bridge.AsError(err).Message))
			return
		}
		v.Status, v.Output, v.Error, v.Usage = "", "", "", nil
		err = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&v)
		resp.Body.Close()
		if err != nil {
			yield(bridge.Event{}, bridge.Errorf(bridge.CodeUpstream, "upstream %s: GET /v1/runs/%s answered no run", k.c.cfg.Name, id))
			return
		}
		if v.Status == "completed" || v.Status == "failed" || v.Status == "cancelled" || v.Status == "interrupted" {
			break
		}
		t := time.NewTimer(settlePoll)
		select {
		case <-k.ctx.Done():
			t.Stop()
			yield(bridge.Event{}, context.Cause(k.ctx))
			return
		case <-t.C:
		}
	}
	f := &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}
	switch v.Status {
	case "failed":
		msg := nonEmpty(v.Error, "the hermes run failed")
		f = &bridge.Final{Status: bridge.StatusFailed, Reason: msg, Error: &bridge.Error{Code: bridge.CodeUpstream, Message: msg, Dialect: wire.Dialect}}
	case "cancelled":
		f = &bridge.Final{Status: bridge.StatusCancelled, Reason: "cancelled upstream"}
	case "interrupted":
		f = &bridge.Final{Status: bridge.StatusInterrupted, Reason: "interrupted upstream"}
	}
	read := k.text.String()
	if rest, ok := strings.CutPrefix(v.Output, read); ok && rest != "" {
		if !yield(bridge.Event{Kind: bridge.KindTextDelta, Text: rest}, nil) {
			return
		}
	} else if !ok {
		k.bc.Dropped = append(k.bc.Dropped, "hermes: the run's output, which does not continue the text streamed before the break")
	}
	if v.Status == "completed" && !yield(bridge.Event{Kind: bridge.KindMessageDone}, nil) {
		return
	}
	if v.Usage != nil {
		u := bridge.Usage{InputTokens: v.Usage.InputTokens, OutputTokens: v.Usage.OutputTokens, TotalTokens: v.Usage.TotalTokens}
		if !u.IsZero() {
			if !yield(bridge.Event{Kind: bridge.KindUsage, Usage: &u}, nil) {
				return
			}
			f.Usage = &u
		}
	}
	yield(bridge.Event{Kind: bridge.KindFinal, Final: f}, nil)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// reopen resumes a stream that broke, backing off between tries; tries
// counts the resumes since the last frame read, up to maxResumes. A server
// that refuses the resume (Hermes' own has no resumable stream) is not
// asked again.
func (k *call) reopen(tries *int, serr error) error {
	var rerr error
	for k.dec.Cursor() != "" && *tries < maxResumes {
		if *tries++; *tries > 1 {
			t := time.NewTimer(time.Duration(1<<(*tries-2)) * 100 * time.Millisecond)
			select {
			case <-k.ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		if k.ctx.Err() != nil {
			return context.Cause(k.ctx)
		}
		if rerr = k.resume(); rerr == nil {
			return nil
		}
		if refused(rerr) {
			return rerr
		}
	}
	msg := "the stream ended before done"
	if serr != nil {
		msg = "the stream broke: " + bridge.AsError(serr).Message
	}
	if rerr != nil {
		msg += "; resuming it failed: " + bridge.AsError(rerr).Message
	}
	return bridge.Errorf(bridge.CodeUpstream, "upstream %s: %s", k.c.cfg.Name, msg)
}

// refused reports whether err is the upstream's answer that it will not
// do the request (a 4xx other than 408 and 429): trying again is no use.
func refused(err error) bool {
	s := bridge.AsError(err).Status
	return s/100 == 4 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests
}

// CancelRun stops the upstream run of a run no call is open for, one that
// waits for the client's tool results (bridge.RunCanceller): the upstream
// run waits too, until POST /v1/runs/{run_id}/stop.
func (c *Client) CancelRun(ctx context.Context, run *bridge.Run) error {
	id := run.UpstreamRunID
	if c.cfg.IDs != nil {
		if r, err := c.cfg.IDs.RemoteID(ctx, bridge.IDRun, c.cfg.Name, run.ID); err == nil && r != "" {
			id = r
		}
	}
	if id == "" {
		return nil // the upstream never named its run
	}
	resp, err := c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/stop", map[string]any{}, "application/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// stop stops the upstream run (the call's Cancel).
func (k *call) stop(ctx context.Context) error {
	id := k.dec.RunID()
	if id == "" {
		return nil // nothing named yet: closing the stream is all there is
	}
	resp, err := k.c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/stop", map[string]any{}, "application/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// steer passes a steer to the upstream run (the call's Steer).
func (k *call) steer(ctx context.Context, m bridge.Message) error {
	id := k.dec.RunID()
	if id == "" {
		return &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: time.Second,
			Message: "the Hermes run has not started yet: steer again in a moment"}
	}
	return k.c.Steer(ctx, id, m.Text())
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
