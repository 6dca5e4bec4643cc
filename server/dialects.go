package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	ina2a "github.com/bridge-dev/bridge/inbound/a2a"
	inadk "github.com/bridge-dev/bridge/inbound/adk"
	inanthropic "github.com/bridge-dev/bridge/inbound/anthropic"
	inhermes "github.com/bridge-dev/bridge/inbound/hermes"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	inresponses "github.com/bridge-dev/bridge/inbound/responses"
	a2awire "github.com/bridge-dev/bridge/mapping/a2a"
	"github.com/bridge-dev/bridge/otel"
	outa2a "github.com/bridge-dev/bridge/outbound/a2a"
	outadk "github.com/bridge-dev/bridge/outbound/adk"
	outanthropic "github.com/bridge-dev/bridge/outbound/anthropic"
	"github.com/bridge-dev/bridge/outbound/echo"
	outhermes "github.com/bridge-dev/bridge/outbound/hermes"
	outopenai "github.com/bridge-dev/bridge/outbound/openai"
	outresponses "github.com/bridge-dev/bridge/outbound/responses"
)

// Dialect is one row of the dialect table: everything the server knows of
// a dialect. Adding a dialect is adding a row (and its packages under
// mapping/, inbound/ and outbound/); nothing else here names a dialect.
type Dialect struct {
	// Name is the dialect's name in the config (upstreams[].dialect,
	// --upstream NAME=URL), in runs (Inbound, Outbound) and in telemetry.
	Name string
	// Inbound serves the dialect's clients; nil for an upstream-only
	// dialect (echo).
	Inbound func(d InboundDeps) ServedDialect
	// Outbound makes the client of an upstream of this dialect; nil for a
	// dialect the bridge does not call.
	Outbound func(u Upstream, d OutboundDeps) bridge.Upstream
	// URL says what an upstream's URL is (for messages), or "" when the
	// dialect takes none (echo).
	URL string
	// Idempotent: a call may be retried after the upstream answered with an
	// error. A model call has no effect worth protecting; an agent's
	// message may have started work.
	Idempotent bool
	// GenAI names the upstream in telemetry: the gen_ai.provider.name and
	// gen_ai.operation.name of its client spans.
	GenAI otel.GenAI
	// Profiles are the values upstreams[].profile takes (first: the
	// default); Stateful whether upstreams[].stateful applies, WebSocket
	// whether upstreams[].websocket does.
	Profiles  []string
	Stateful  bool
	WebSocket bool
	// Origins: upstreams[].allow_origins applies (an A2A agent card names
	// the URL the bridge then posts to, with the upstream's key).
	Origins bool
}

// InboundDeps is what an inbound dialect's handler may be built with.
type InboundDeps struct {
	Engine *bridge.Engine
	Store  bridge.Store
	Log    *slog.Logger
	// Model is the default model (--model), for requests that name none.
	Model string
	// Models lists the routed model names.
	Models func() []string
	// CountTokens counts a request's tokens at its upstream when that
	// upstream can (ok false: estimate).
	CountTokens func(context.Context, *bridge.Request) (n int64, ok bool, err error)
	// Compact asks a request's upstream for a compaction of its
	// conversation when that upstream has its own (ok false: it has none).
	Compact func(context.Context, *bridge.Request) (object []byte, ok bool, err error)
	A2A     A2AConfig
	// TrustedProxies are the proxies whose X-Forwarded-* headers the A2A
	// card's URL may come from (Config.TrustedProxies).
	TrustedProxies []netip.Prefix
	// WriteTimeout bounds each write to a client (Config.WriteTimeout), for
	// a dialect that writes past the server's deadline (a WebSocket).
	WriteTimeout time.Duration
}

// OutboundDeps is what an upstream client may be built with.
type OutboundDeps struct {
	// Key is the upstream's credential (from its api_key_env, else
	// BRIDGE_UPSTREAM_API_KEY).
	Key string
	// HTTP is the client to call it with: the upstream's timeouts, the
	// trace context propagated.
	HTTP *http.Client
	// IDs is the store's id map (upstream sessions, tasks, tool-call ids).
	IDs bridge.Store
	// EchoDelay paces the echo upstream.
	EchoDelay time.Duration
	// Log is the server's logger.
	Log *slog.Logger
}

// ServedDialect is an inbound dialect's handler.
type ServedDialect interface {
	inbound.Dialect
	http.Handler
	Routes() []string
}

// Dialects is the dialect table, in the order the server mounts them.
var Dialects = []Dialect{
	{
		Name: "openai", URL: "the base URL the SDK takes, such as https://api.openai.com/v1", Idempotent: true,
		GenAI: otel.GenAI{Provider: "openai", Operation: "chat"},
		Inbound: func(d InboundDeps) ServedDialect {
			return inopenai.New(inopenai.Config{Engine: d.Engine, Models: d.Models, Logger: d.Log})
		},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return outopenai.New(outopenai.Config{Name: u.Name, BaseURL: u.URL, APIKey: d.Key, Model: u.Model, Timeouts: u.Timeouts, HTTPClient: d.HTTP})
		},
	},
	{
		Name: "a2a", URL: "the agent's base URL, where its card is",
		GenAI:    otel.GenAI{Provider: "a2a", Operation: "invoke_agent"},
		Profiles: []string{string(a2awire.ProfileA2A), string(a2awire.ProfileADK)}, Origins: true,
		Inbound: func(d InboundDeps) ServedDialect {
			return ina2a.New(ina2a.Config{Engine: d.Engine, Model: d.Model, Card: d.A2A.card(), TrustedProxies: d.TrustedProxies, Logger: d.Log})
		},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return outa2a.New(outa2a.Config{Name: u.Name, URL: u.URL, Profile: a2awire.Profile(u.Profile), APIKey: d.Key, IDs: d.IDs,
				AllowOrigins: u.AllowOrigins, Timeouts: u.Timeouts, HTTPClient: d.HTTP})
		},
	},
	{
		Name: "anthropic", URL: "the base URL the SDK takes, such as https://api.anthropic.com", Idempotent: true,
		GenAI: otel.GenAI{Provider: "anthropic", Operation: "chat"},
		Inbound: func(d InboundDeps) ServedDialect {
			return inanthropic.New(inanthropic.Config{Engine: d.Engine, CountTokens: d.CountTokens, Logger: d.Log})
		},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return outanthropic.New(outanthropic.Config{Name: u.Name, BaseURL: u.URL, APIKey: d.Key, Model: u.Model, Timeouts: u.Timeouts, HTTPClient: d.HTTP})
		},
	},
	{
		Name: "adk", URL: "the api_server's root, such as http://127.0.0.1:8000 (the app is the model name)",
		GenAI: otel.GenAI{Provider: "adk", Operation: "invoke_agent"},
		Inbound: func(d InboundDeps) ServedDialect {
			return inadk.New(inadk.Config{Engine: d.Engine, Store: d.Store, Apps: d.Models, Logger: d.Log})
		},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return outadk.New(outadk.Config{Name: u.Name, URL: u.URL, App: u.Model, APIKey: d.Key, IDs: d.IDs, Timeouts: u.Timeouts, HTTPClient: d.HTTP})
		},
	},
	{
		Name: "hermes", URL: "the API server's root, such as http://127.0.0.1:8642",
		GenAI: otel.GenAI{Provider: "hermes", Operation: "invoke_agent"},
		Inbound: func(d InboundDeps) ServedDialect {
			return inhermes.New(inhermes.Config{Engine: d.Engine, Runs: d.Store, Model: d.Model, Logger: d.Log})
		},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return outhermes.New(outhermes.Config{Name: u.Name, URL: u.URL, APIKey: d.Key, Model: u.Model, IDs: d.IDs, Timeouts: u.Timeouts, HTTPClient: d.HTTP})
		},
	},
	{
		Name: "responses", URL: "the base URL the SDK takes, such as https://api.openai.com/v1", Idempotent: true, Stateful: true, WebSocket: true,
		GenAI: otel.GenAI{Provider: "openai", Operation: "chat"},
		Inbound: func(d InboundDeps) ServedDialect {
			rs, _ := d.Store.(bridge.ResponseStore) // every store of storage/ keeps them
			return inresponses.New(inresponses.Config{Engine: d.Engine, Store: d.Store, Responses: rs, Compact: d.Compact,
				WriteTimeout: d.WriteTimeout, Logger: d.Log})
		},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return outresponses.New(outresponses.Config{Name: u.Name, BaseURL: u.URL, APIKey: d.Key, Model: u.Model, Stateful: u.Stateful,
				IDs: d.IDs, Timeouts: u.Timeouts, HTTPClient: d.HTTP, WebSocket: u.WebSocket, Logger: d.Log})
		},
	},
	{
		Name: "echo", Idempotent: true,
		GenAI: otel.GenAI{Provider: "echo", Operation: "chat"},
		Outbound: func(u Upstream, d OutboundDeps) bridge.Upstream {
			return &echo.Upstream{Delay: d.EchoDelay}
		},
	},
}

// dialect is the table's row named name.
func dialect(name string) (*Dialect, bool) {
	i := slices.IndexFunc(Dialects, func(d Dialect) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return &Dialects[i], true
}

// upstreamDialects names the dialects the bridge can call, for messages.
func upstreamDialects() []string {
	var out []string
	for _, d := range Dialects {
		if d.Outbound != nil {
			out = append(out, d.Name)
		}
	}
	return out
}

// checkURL checks an upstream's URL: an absolute http(s) URL with a host,
// or none for a dialect that takes none.
func (d *Dialect) checkURL(name, raw string) error {
	if d.URL == "" {
		if raw != "" {
			return fmt.Errorf("upstream %s: a %s upstream takes no url", name, d.Name)
		}
		return nil
	}
	if raw == "" {
		return fmt.Errorf("upstream %s: no url (want %s)", name, d.URL)
	}
	if err := checkURL(raw); err != nil {
		return fmt.Errorf("upstream %s: url %q: %w (want %s)", name, raw, err, d.URL)
	}
	return nil
}
