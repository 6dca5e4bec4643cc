package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/anthropic"
	"github.com/bridge-dev/bridge/outbound"
)

// DefaultVersion is the anthropic-version header sent when none is
// configured.
const DefaultVersion = "2023-06-01"

// Config configures a Client.
type Config struct {
	// Name is the upstream's configured name.
	Name string
	// BaseURL is what the official SDK takes as its base URL, such as
	// https://api.anthropic.com; requests go to BaseURL + "/v1/messages".
	BaseURL string
	// APIKey is sent as x-api-key when set. It never appears in logs,
	// errors or history.
	APIKey string
	// Model replaces the request's model when set.
	Model string
	// MaxTokens is max_tokens for requests that set no limit (the API
	// requires one); 0 means wire.DefaultMaxTokens.
	MaxTokens int64
	// Version is the anthropic-version header (default DefaultVersion).
	Version string
	// Timeouts bound connecting, the first byte and the idle gap between
	// events (zero: outbound's defaults).
	Timeouts outbound.Timeouts
	// HTTPClient defaults to outbound.NewHTTPClient(Timeouts, nil).
	HTTPClient *http.Client
}

// Client calls a Messages upstream. It is safe for concurrent use.
type Client struct {
	cfg    Config
	url    string
	count  string
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
		cfg.Name = wire.Dialect
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	return &Client{cfg: cfg, url: base + "/v1/messages", count: base + "/v1/messages/count_tokens",
		sender: outbound.Sender{Name: cfg.Name, Client: cfg.HTTPClient, DecodeError: wire.DecodeError}}
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

// MintToolCallID implements bridge.ToolCallMinter: Anthropic accepts only
// tool_use ids matching ^[a-zA-Z0-9_-]+$, so an id minted elsewhere that
// does not is replaced by "toolu_" and 24 hex digits of its SHA-256 (the
// same id always mints the same one; the engine keeps the mapping). An id
// that matches is kept.
func (c *Client) MintToolCallID(local string) string {
	if wire.ValidToolID(local) {
		return local
	}
	return outbound.HashToolCallID("toolu_", local)
}

// maxBody bounds how much of a count_tokens answer is read.
const maxBody = 1 << 20

func (c *Client) request(ctx context.Context, url string, body []byte, stream bool) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad base URL", c.cfg.Name)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("anthropic-version", c.cfg.Version)
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("x-api-key", c.cfg.APIKey)
	}
	return c.sender.Do(hreq)
}

// Open sends req as a streaming Messages request. It returns an error when
// the upstream cannot be reached or answers with a non-2xx status (mapped
// from the upstream's error object); the call's events end with the
// upstream's final or an error.
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	if c.cfg.Model != "" {
		r := *req
		r.Model = c.cfg.Model
		req = &r
	}
	body, dropped, err := wire.EncodeRequest(req, wire.EncodeOptions{MaxTokens: c.cfg.MaxTokens})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	resp, err := c.request(ctx, c.url, body, true)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	events := outbound.Events(ctx, c.cfg.Name, c.cfg.Timeouts.Idle, resp.Body, cancel, wire.DecodeStream)
	return &bridge.Call{Events: events, Dropped: dropped}, nil
}

// CountTokens forwards req to the upstream's count_tokens endpoint and
// returns its input_tokens.
func (c *Client) CountTokens(ctx context.Context, req *bridge.Request) (int64, error) {
	if c.cfg.Model != "" {
		r := *req
		r.Model = c.cfg.Model
		req = &r
	}
	body, _, err := wire.EncodeCountTokens(req)
	if err != nil {
		return 0, err
	}
	resp, err := c.request(ctx, c.count, body, false)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&out); err != nil || out.InputTokens == nil {
		return 0, bridge.Errorf(bridge.CodeUpstream, "upstream %s: count_tokens answered without input_tokens", c.cfg.Name)
	}
	return *out.InputTokens, nil
}
