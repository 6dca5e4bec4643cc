package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/responses"
	"github.com/bridge-dev/bridge/outbound"
)

// IDStore is the part of the store the client keeps its id maps in.
type IDStore = outbound.IDStore

// Config configures a Client.
type Config struct {
	// Name is the upstream's configured name (the scope of its id maps).
	Name string
	// BaseURL is what the official SDK takes as its base URL, such as
	// https://api.openai.com/v1; requests go to BaseURL + "/responses".
	BaseURL string
	// APIKey is sent as a bearer token when set. It never appears in logs,
	// errors or history.
	APIKey string
	// Model replaces the request's model when set.
	Model string
	// Stateful lets the upstream keep the conversation (see the package
	// doc). It needs IDs.
	Stateful bool
	// IDs records the upstream's response id of each run (IDRun) and, when
	// Stateful, each session's chain (IDSession). Optional.
	IDs IDStore
	// Timeouts bound connecting, the first byte and the idle gap between
	// events (zero: outbound's defaults).
	Timeouts outbound.Timeouts
	// HTTPClient defaults to outbound.NewHTTPClient(Timeouts, nil). A
	// WebSocket's handshake goes through it too (its transport, its
	// redirect rule).
	HTTPClient *http.Client
	// WebSocket calls the upstream in WebSocket mode: GET {base}/responses
	// upgraded, one response.create message a call, the connection kept
	// for the next call (see the package doc). An upstream that refuses
	// the upgrade is called over HTTP.
	WebSocket bool
	// MaxIdleSockets bounds the WebSocket connections kept open between
	// calls (0: 16); SocketIdle closes one unused that long (0: 5
	// minutes).
	MaxIdleSockets int
	SocketIdle     time.Duration
	// Logger says when WebSocket mode is refused (nil: no log).
	Logger *slog.Logger
}

// Client calls a Responses upstream. It is safe for concurrent use; Close
// closes its idle WebSocket connections.
type Client struct {
	cfg    Config
	url    string
	sender outbound.Sender
	socks  *socketPool // nil: HTTP only
}

var (
	_ bridge.Upstream       = (*Client)(nil)
	_ bridge.ToolCallMinter = (*Client)(nil)
)

// New returns a client for cfg.
func New(cfg Config) *Client {
	cfg.HTTPClient, cfg.Timeouts = outbound.Defaults(cfg.HTTPClient, cfg.Timeouts)
	if cfg.Name == "" {
		cfg.Name = wire.Dialect
	}
	c := &Client{cfg: cfg, url: strings.TrimSuffix(cfg.BaseURL, "/") + "/responses",
		sender: outbound.Sender{Name: cfg.Name, Client: cfg.HTTPClient, DecodeError: wire.DecodeError}}
	if cfg.WebSocket {
		c.socks = newSocketPool(cfg.MaxIdleSockets, cfg.SocketIdle)
	}
	return c
}

// MaxCallID is the longest call_id the Responses API accepts (a longer one
// is a 400, string_above_max_length).
const MaxCallID = 64

// MintToolCallID implements bridge.ToolCallMinter: an id minted elsewhere
// that the API would refuse (empty, or longer than MaxCallID: an agent's
// namespaced MCP call id) is replaced by "call_" and a hash
// (outbound.HashToolCallID; the engine keeps the pair). Any other id is
// kept.
func (c *Client) MintToolCallID(local string) string {
	return outbound.BoundToolCallID(local, MaxCallID)
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

// chain is what the client keeps of a session's last stored upstream
// response: its id, how many of the request's messages it covered, and
// the fingerprint of the last of them.
type chain struct {
	Response string `json:"resp"`
	N        int    `json:"n"`
	Last     string `json:"fp"`
}

// Open sends req as a streamed create-response request, over a WebSocket
// in WebSocket mode. It returns an error when the upstream cannot be
// reached or answers with an error status (mapped from its error object);
// the call's events end with the upstream's final or an error.
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	if c.cfg.Model != "" {
		r := *req
		r.Model = c.cfg.Model
		req = &r
	}
	opt := wire.EncodeOptions{Store: c.cfg.Stateful}
	if ch := c.chain(ctx, req); ch != nil {
		opt.PreviousResponseID, opt.From = ch.Response, ch.N+1
	}
	stream, dropped, err := c.call(ctx, req, opt)
	if err != nil && opt.PreviousResponseID != "" && bridge.ErrorCode(err) == bridge.CodeNotFound {
		// The upstream no longer has the chain: send the whole transcript.
		opt.PreviousResponseID, opt.From = "", 0
		stream, dropped, err = c.call(ctx, req, opt)
	}
	if err != nil {
		return nil, err
	}
	runID := bridge.RunIDFromContext(ctx)
	// Record the upstream's response id of the run, and the session's
	// chain once the response is final.
	events := func(yield func(bridge.Event, error) bool) {
		var upstreamID string
		for ev, err := range stream {
			switch {
			case err != nil:
			case ev.Kind == bridge.KindMessageStarted && ev.ResponseID != "":
				upstreamID = ev.ResponseID
				c.put(ctx, bridge.IDMapping{Kind: bridge.IDRun, Scope: c.cfg.Name, Local: runID, Remote: upstreamID})
			case ev.Kind == bridge.KindFinal:
				c.record(ctx, req, upstreamID)
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
	return &bridge.Call{Events: events, Dropped: dropped}, nil
}

// call makes one call, over a WebSocket in WebSocket mode unless the
// upstream refused the upgrade, else over HTTP, and returns its decoded
// stream (ranging over it once releases the connection).
func (c *Client) call(ctx context.Context, req *bridge.Request, opt wire.EncodeOptions) (bridge.Stream, []string, error) {
	if c.socks != nil && c.socks.usable(time.Now()) {
		stream, dropped, err := c.callSocket(ctx, req, opt)
		if !errors.Is(err, errRefused) {
			return stream, dropped, err
		}
	}
	resp, dropped, callCtx, cancel, err := c.send(ctx, req, opt)
	if err != nil {
		return nil, nil, err
	}
	return outbound.Events(callCtx, c.cfg.Name, c.cfg.Timeouts.Idle, resp.Body, cancel, wire.DecodeStream), dropped, nil
}

// Close closes the idle WebSocket connections; a call still streaming
// closes its own at its end (or keeps it, if the pool has room).
func (c *Client) Close() error {
	if c.socks != nil {
		c.socks.close()
	}
	return nil
}

// send makes the HTTP request; the call's context (cancelled with the
// idle timeout as its cause) and its cancel come back with the response.
func (c *Client) send(ctx context.Context, req *bridge.Request, opt wire.EncodeOptions) (*http.Response, []string, context.Context, context.CancelCauseFunc, error) {
	body, dropped, err := wire.EncodeRequest(req, opt)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, nil, nil, nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad base URL", c.cfg.Name)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.sender.Do(hreq)
	if err != nil {
		cancel(nil)
		return nil, nil, nil, nil, err
	}
	return resp, dropped, ctx, cancel, nil
}

// chain is the session's chain when req extends it: the messages it
// covered, then the assistant message the upstream answered with.
func (c *Client) chain(ctx context.Context, req *bridge.Request) *chain {
	if !c.cfg.Stateful || c.cfg.IDs == nil || req.SessionID == "" {
		return nil
	}
	v, err := c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, req.SessionID)
	if err != nil {
		return nil
	}
	var ch chain
	if json.Unmarshal([]byte(v), &ch) != nil || ch.N < 1 || ch.Response == "" || len(req.Messages) <= ch.N+1 {
		return nil
	}
	if req.Messages[ch.N-1].Fingerprint() != ch.Last || req.Messages[ch.N].Role != bridge.RoleAssistant {
		return nil
	}
	return &ch
}

// record keeps the session's chain after a stored upstream response.
func (c *Client) record(ctx context.Context, req *bridge.Request, upstreamID string) {
	if !c.cfg.Stateful || upstreamID == "" || req.SessionID == "" || len(req.Messages) == 0 {
		return
	}
	n := len(req.Messages)
	b, _ := json.Marshal(chain{Response: upstreamID, N: n, Last: req.Messages[n-1].Fingerprint()})
	c.put(ctx, bridge.IDMapping{Kind: bridge.IDSession, Scope: c.cfg.Name, Local: req.SessionID, Remote: string(b)})
}

func (c *Client) put(ctx context.Context, m bridge.IDMapping) {
	if c.cfg.IDs == nil || m.Local == "" {
		return
	}
	_ = c.cfg.IDs.PutID(context.WithoutCancel(ctx), m)
}
