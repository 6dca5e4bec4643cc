package hermes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/hermes"
	"github.com/bridge-dev/bridge/outbound"
)

// IDs is the part of the store the client keeps its id maps in.
type IDs interface {
	PutID(ctx context.Context, m bridge.IDMapping) error
	RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error)
}

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
}

var _ bridge.Upstream = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = outbound.NewHTTPClient(cfg.Timeouts, nil)
	}
	if cfg.Timeouts.Idle <= 0 {
		cfg.Timeouts.Idle = 120 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = wire.Dialect
	}
	return &Client{cfg: cfg, root: strings.TrimSuffix(cfg.URL, "/")}
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

const maxErrorBody = 1 << 20

// do sends one JSON request; a non-2xx answer is the upstream's error.
func (c *Client) do(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
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
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, outbound.DoError(ctx, c.cfg.Name, err)
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		e := wire.DecodeError(resp.StatusCode, b)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			e.RetryAfter = outbound.ParseRetryAfter(ra, time.Now())
		}
		return nil, e
	}
	return resp, nil
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

// turn builds the chat body: the new input (what follows the transcript's
// last assistant message), the leading system messages as system_message,
// and, for a fresh upstream session, earlier turns carried in the message
// as text.
func turn(req *bridge.Request, fresh bool, model string) (body map[string]any, dropped []string) {
	msgs := req.Messages
	var system []string
	for len(msgs) > 0 && (msgs[0].Role == bridge.RoleSystem || msgs[0].Role == bridge.RoleDeveloper) {
		system = append(system, msgs[0].Text())
		msgs = msgs[1:]
	}
	start := len(msgs)
	for start > 0 && msgs[start-1].Role != bridge.RoleAssistant {
		start--
	}
	var text strings.Builder
	if fresh && start > 0 {
		text.WriteString("Earlier in this conversation:\n")
		for _, m := range msgs[:start] {
			switch m.Role {
			case bridge.RoleUser, bridge.RoleAssistant:
				if t := m.Text(); t != "" {
					text.WriteString(string(m.Role) + ": " + t + "\n")
				}
			}
		}
		text.WriteString("\n")
		dropped = append(dropped, "hermes: earlier turns sent as text")
	}
	for _, m := range msgs[start:] {
		switch m.Role {
		case bridge.RoleUser:
			if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
				text.WriteString("\n")
			}
			text.WriteString(m.Text())
			for _, p := range m.Parts {
				if p.Type != bridge.PartText {
					dropped = append(dropped, "hermes: non-text content")
					break
				}
			}
		case bridge.RoleTool:
			dropped = append(dropped, "hermes: client tool results")
		}
	}
	if len(req.Tools) > 0 {
		dropped = append(dropped, "hermes: client tools (the agent runs its own)")
	}
	body = map[string]any{"message": text.String()}
	if model != "" {
		body["model"] = model
	}
	if len(system) > 0 {
		body["system_message"] = strings.Join(system, "\n\n")
	}
	return body, dropped
}

// Open streams one turn of req's session through the upstream session's
// chat stream. The call's Cancel stops the upstream run
// (POST /v1/runs/{run_id}/stop); its Steer passes user input to it
// (POST /v1/runs/{run_id}/steer).
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	remote, fresh, err := c.session(ctx, req.SessionID, false)
	if err != nil {
		return nil, err
	}
	body, dropped := turn(req, fresh, c.cfg.Model)
	if strings.TrimSpace(body["message"].(string)) == "" {
		return nil, bridge.Errorf(bridge.CodeInvalid, "nothing to send to the Hermes agent: the turn has no user text")
	}
	sctx, cancel := context.WithCancelCause(ctx)
	resp, err := c.do(sctx, http.MethodPost, "/api/sessions/"+url.PathEscape(remote)+"/chat/stream", body, "text/event-stream")
	if err != nil && bridge.AsError(err).UpstreamCode == wire.CodeSessionNotFound && !fresh {
		// The upstream forgot the session: a new one, with the turns so far.
		if remote, fresh, err = c.session(ctx, req.SessionID, true); err == nil {
			body, dropped = turn(req, true, c.cfg.Model)
			resp, err = c.do(sctx, http.MethodPost, "/api/sessions/"+url.PathEscape(remote)+"/chat/stream", body, "text/event-stream")
		}
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	idle := c.cfg.Timeouts.Idle
	rc := outbound.IdleBody(resp.Body, idle, cancel)
	dec := wire.NewStreamDecoder(rc)
	local := bridge.RunIDFromContext(ctx)
	events := func(yield func(bridge.Event, error) bool) {
		defer cancel(nil)
		defer rc.Close()
		mapped := false
		for ev, err := range dec.Events() {
			if err != nil {
				err = outbound.StreamError(ctx, c.cfg.Name, idle, err)
			}
			if !mapped && err == nil && c.cfg.IDs != nil && local != "" {
				if id := dec.RunID(); id != "" {
					mapped = true
					_ = c.cfg.IDs.PutID(ctx, bridge.IDMapping{Kind: bridge.IDRun, Scope: c.cfg.Name, Local: local, Remote: id})
				}
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
	stop := func(ctx context.Context) error {
		id := dec.RunID()
		if id == "" {
			return nil // nothing named yet: closing the stream is all there is
		}
		resp, err := c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/stop", map[string]any{}, "application/json")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	steer := func(ctx context.Context, m bridge.Message) error {
		id := dec.RunID()
		if id == "" {
			return &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: time.Second,
				Message: "the Hermes run has not started yet: steer again in a moment"}
		}
		return c.Steer(ctx, id, m.Text())
	}
	return &bridge.Call{Events: events, Dropped: dropped, Cancel: stop, Steer: steer}, nil
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
