// Package openai is the client for an OpenAI Chat Completions upstream
// (OpenAI itself or any OpenAI-compatible server).
package openai

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/openai"
	"github.com/bridge-dev/bridge/outbound"
)

// Config configures a Client.
type Config struct {
	// Name is the upstream's configured name.
	Name string
	// BaseURL is what the official SDK takes as its base URL, such as
	// https://api.openai.com/v1; requests go to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token when set. It never appears in logs,
	// errors or history.
	APIKey string
	// Model replaces the request's model when set.
	Model string
	// Timeouts bound connecting, the first byte and the idle gap between
	// chunks (zero: outbound's defaults).
	Timeouts outbound.Timeouts
	// HTTPClient defaults to outbound.NewHTTPClient(Timeouts, nil).
	HTTPClient *http.Client
}

// Client calls a Chat Completions upstream. It is safe for concurrent use.
type Client struct {
	cfg    Config
	url    string
	sender outbound.Sender
}

var (
	_ bridge.Upstream       = (*Client)(nil)
	_ bridge.ToolCallMinter = (*Client)(nil)
)

// New returns a client for cfg.
func New(cfg Config) *Client {
	cfg.HTTPClient, cfg.Timeouts = outbound.Defaults(cfg.HTTPClient, cfg.Timeouts)
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	return &Client{cfg: cfg, url: strings.TrimSuffix(cfg.BaseURL, "/") + "/chat/completions",
		sender: outbound.Sender{Name: cfg.Name, Client: cfg.HTTPClient, DecodeError: wire.DecodeError}}
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

// MaxToolCallID is the longest tool-call id OpenAI's Chat Completions
// accepts (a longer one is a 400, string_above_max_length).
const MaxToolCallID = 40

// MintToolCallID implements bridge.ToolCallMinter: an id minted elsewhere
// that OpenAI would refuse (empty, or longer than MaxToolCallID: a
// Responses item id, an agent's UUID with a prefix) is replaced by "call_"
// and 24 hex digits of its SHA-256 (the same id always mints the same one;
// the engine keeps the mapping). Any other id is kept.
func (c *Client) MintToolCallID(local string) string {
	return outbound.BoundToolCallID(local, MaxToolCallID)
}

// Open sends req as a streaming chat completion. It returns an error when the
// upstream cannot be reached or answers with a non-2xx status (mapped from
// the upstream's error object); the call's events end with the upstream's
// final or an error.
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	if c.cfg.Model != "" {
		r := *req
		r.Model = c.cfg.Model
		req = &r
	}
	body, dropped, err := wire.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad base URL", c.cfg.Name)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.sender.Do(hreq)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	events := outbound.Events(ctx, c.cfg.Name, c.cfg.Timeouts.Idle, resp.Body, cancel, wire.DecodeStream)
	return &bridge.Call{Events: events, Dropped: dropped}, nil
}
