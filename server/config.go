package server

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"go.yaml.in/yaml/v3"

	a2awire "github.com/bridge-dev/bridge/mapping/a2a"
	"github.com/bridge-dev/bridge/outbound"
)

// Config is the serve configuration: flags, or the YAML file of --config
// (flags given on the command line win over the file).
type Config struct {
	Listen    string        `yaml:"listen"`
	DB        string        `yaml:"db"`
	Model     string        `yaml:"model"`
	Retention time.Duration `yaml:"retention"`
	Upstreams []Upstream    `yaml:"upstreams"`
	// EchoDelay paces the echo upstream's words.
	EchoDelay time.Duration `yaml:"echo_delay"`
	// Lease is, on a PostgreSQL log, how long a replica's lease on the
	// runs it drives lasts unless renewed (0: 10 s): another replica takes
	// a dead one's runs over once it has passed.
	Lease time.Duration `yaml:"lease"`
	// ShutdownGrace bounds how long SIGTERM waits for streams to end.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// RunTimeout bounds a whole run (0: none).
	RunTimeout time.Duration `yaml:"run_timeout"`
	// ResumeRetry bounds how long a run a restart or a dead replica left
	// running is tried again upstream while the upstream cannot answer for
	// now (0: bridge.DefaultResumeRetry, 30 s; negative: once).
	ResumeRetry time.Duration `yaml:"resume_retry"`
	// MaxRunsPerPrincipal bounds the runs one principal has going at once
	// (0: 64).
	MaxRunsPerPrincipal int `yaml:"max_runs_per_principal"`
	// LiveEvents is how many of a running run's newest events the bridge
	// keeps in memory for its streams (0: bridge.DefaultLiveEvents, 1024;
	// up to bridge.LiveLag times as many while a stream trails them); a
	// stream further behind reads the database.
	LiveEvents int `yaml:"live_events"`
	// BodyTimeout bounds how long a request's body may take to arrive
	// after its headers (0: 30 s); a slower one gets a 408.
	BodyTimeout time.Duration `yaml:"body_timeout"`
	// WriteTimeout bounds each write of a response (0: 30 s): a client
	// that reads nothing is cut off when a write has waited that long.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// MaxConnections bounds the open client connections (0: 512); more
	// wait in the listen queue until one closes.
	MaxConnections int `yaml:"max_connections"`
	// Keys are inbound API keys, held as hashes (bridge hash-key prints one).
	Keys []KeyConfig `yaml:"keys"`
	// RecordUpstream records every run's upstream calls for the
	// inspector (/ui/), in memory, each body cut at 256 KiB, credentials
	// redacted. Without it a run is recorded when its request carries
	// X-Bridge-Record: upstream.
	RecordUpstream bool `yaml:"record_upstream"`
	// A2A describes the agent the A2A endpoint presents in its card.
	A2A A2AConfig `yaml:"a2a"`
	// TrustedProxies are the addresses (CIDRs, or single IPs) of reverse
	// proxies whose X-Forwarded-Host and X-Forwarded-Proto the bridge
	// believes, for the URL its agent card names when a2a.url is not set.
	// A request from any other address has those headers ignored: anyone
	// could send them, and a card naming the sender's host points the
	// card's readers (and their keys) there.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// Subscribe bounds the session channels (GET
	// /v1/sessions/{session}/events).
	Subscribe SubscribeConfig `yaml:"subscribe"`
}

// SubscribeConfig bounds the session channels: each holds a connection
// and a goroutine for as long as the client keeps it, so their number is
// bounded per session and per principal (more get a 429), and an idle one
// is kept alive so proxies do not cut it.
type SubscribeConfig struct {
	// ChannelsPerSession bounds the channels open on one session (0: 8).
	ChannelsPerSession int `yaml:"channels_per_session"`
	// ChannelsPerPrincipal bounds one principal's open channels (0: 64).
	ChannelsPerPrincipal int `yaml:"channels_per_principal"`
	// KeepAlive is how long an idle channel waits before it sends a
	// keep-alive (an SSE comment, a WebSocket ping) (0: 15 s).
	KeepAlive time.Duration `yaml:"keep_alive"`
	// Poll is how often a channel over a database other replicas share
	// reads it without being signalled (0: 1 s): only a lost signal
	// waits for it (docs/replicas.md).
	Poll time.Duration `yaml:"poll"`
}

// trustedProxies parses TrustedProxies: a CIDR, or an IP (one address).
func (c *Config) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("trusted_proxies: %q is neither a CIDR nor an IP address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// A2AConfig is the agent card of the A2A endpoint (POST /a2a).
type A2AConfig struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Version     string `yaml:"version"`
	// URL is the endpoint's public URL, for a bridge behind a proxy; by
	// default the card names the host it was fetched from (the request's
	// Host, or a trusted proxy's X-Forwarded-Host and -Proto), then /a2a.
	URL    string     `yaml:"url"`
	Skills []A2ASkill `yaml:"skills"`
}

// A2ASkill is one skill the card lists.
type A2ASkill struct {
	ID          string   `yaml:"id"`
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Tags        []string `yaml:"tags"`
	Examples    []string `yaml:"examples"`
}

func (c A2AConfig) card() a2awire.CardConfig {
	cc := a2awire.CardConfig{Name: c.Name, Description: c.Description, Version: c.Version, URL: c.URL}
	for _, s := range c.Skills {
		cc.Skills = append(cc.Skills, a2asdk.AgentSkill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples})
	}
	return cc
}

// KeyConfig is one inbound key of the config file.
type KeyConfig struct {
	// Name is the principal the key authenticates.
	Name string `yaml:"name"`
	// SHA256 is the hex SHA-256 of the key (never the key itself).
	SHA256 string `yaml:"sha256"`
	// Dialects limits the key to these dialects' endpoints (none: all).
	Dialects []string `yaml:"dialects"`
	// Admin lets the key read every principal's runs in the inspector
	// (/ui/); any other key sees its own principal's runs only.
	Admin bool `yaml:"admin"`
}

// Upstream is one configured upstream.
type Upstream struct {
	Name    string `yaml:"name"`
	Dialect string `yaml:"dialect"`
	URL     string `yaml:"url"`
	// APIKeyEnv names the environment variable holding the upstream's key;
	// without it BRIDGE_UPSTREAM_API_KEY is used. Keys never live in the file.
	APIKeyEnv string `yaml:"api_key_env"`
	// Model, when set, replaces the model name sent upstream.
	Model string `yaml:"model"`
	// Models are the model names routed to this upstream ("*" for any).
	Models []string `yaml:"models"`
	// Profile is how an A2A upstream arranges its events: a2a (the
	// answer in artifact-updates, the default) or adk (an ADK executor:
	// the answer in working status messages). Never guessed.
	Profile string `yaml:"profile"`
	// AllowOrigins are origins (scheme://host[:port]) other than URL's
	// that an A2A upstream's card may send the bridge to, with its key.
	// Any other origin a card names is refused.
	AllowOrigins []string `yaml:"allow_origins"`
	// Stateful lets a Responses upstream keep the conversation: each call
	// is stored there and the next one sends previous_response_id and only
	// the new messages (default: the whole transcript, store false).
	Stateful bool `yaml:"stateful"`
	// WebSocket calls a Responses upstream in WebSocket mode (one
	// connection per call in flight, kept open for the next call; see
	// outbound/responses); an upstream that refuses the upgrade is called
	// over HTTP. Default: HTTP.
	WebSocket bool `yaml:"websocket"`

	// Fallbacks name other configured upstreams (of any dialect) tried in
	// order when this one fails before answering by its fault (breaker
	// open, connect error, timeout before the first byte, 5xx, 429); each
	// brings its own fallbacks after it. See outbound.Fallback.
	Fallbacks []string `yaml:"fallbacks"`

	// Breaker, Retry and Timeouts tune reliability; zero values are the
	// defaults (outbound.BreakerConfig, RetryConfig, Timeouts).
	Breaker  outbound.BreakerConfig `yaml:"breaker"`
	Retry    outbound.RetryConfig   `yaml:"retry"`
	Timeouts outbound.Timeouts      `yaml:"timeouts"`
}

// DefaultMaxConnections is the open client connections a bridge serves at
// once when the config sets none.
const DefaultMaxConnections = 512

// DefaultConfig is the configuration with no flags and no file: echo on
// 127.0.0.1:8080, the log in ./bridge.db.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:8080", DB: "./bridge.db", Retention: 24 * time.Hour, ShutdownGrace: 10 * time.Second}
}

// LoadConfigFile reads a YAML config over cfg. Unknown keys are errors, so
// a typo does not silently fall back to a default.
func LoadConfigFile(path string, cfg *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// ParseUpstream reads a --upstream value: DIALECT=URL, or a dialect that
// takes no URL (echo).
func ParseUpstream(v string) (Upstream, error) {
	name, url, _ := strings.Cut(v, "=")
	name = strings.TrimSpace(name)
	d, ok := dialect(name)
	if !ok || d.Outbound == nil {
		return Upstream{}, fmt.Errorf("--upstream %q: unknown dialect (want one of %s)", v, strings.Join(upstreamDialects(), ", "))
	}
	if d.URL != "" && url == "" {
		return Upstream{}, fmt.Errorf("--upstream %s: want %s=URL, with %s", v, name, d.URL)
	}
	return Upstream{Name: name, Dialect: name, URL: url}, nil
}

// Validate checks c and fills in what it leaves to defaults (echo when no
// upstream is configured, an upstream's name from its dialect).
func (c *Config) Validate() error {
	if len(c.Upstreams) == 0 {
		c.Upstreams = []Upstream{{Name: "echo", Dialect: "echo"}}
	}
	seen := map[string]bool{}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if u.Dialect == "" {
			return fmt.Errorf("upstreams[%d]: no dialect", i)
		}
		d, ok := dialect(u.Dialect)
		if !ok || d.Outbound == nil {
			return fmt.Errorf("upstreams[%d]: unknown dialect %q (want one of %s)", i, u.Dialect, strings.Join(upstreamDialects(), ", "))
		}
		if u.Name == "" {
			u.Name = u.Dialect
		}
		for n := 2; seen[u.Name]; n++ {
			u.Name = fmt.Sprintf("%s-%d", u.Dialect, n)
		}
		seen[u.Name] = true
		if err := d.checkURL(u.Name, u.URL); err != nil {
			return err
		}
		for _, o := range u.AllowOrigins {
			if !d.Origins {
				return fmt.Errorf("upstream %s: allow_origins is not for %s upstreams", u.Name, u.Dialect)
			}
			if err := checkURL(o); err != nil {
				return fmt.Errorf("upstream %s: allow_origins %q: %w", u.Name, o, err)
			}
		}
		if u.Stateful && !d.Stateful {
			return fmt.Errorf("upstream %s: stateful is not for %s upstreams", u.Name, u.Dialect)
		}
		if u.WebSocket && !d.WebSocket {
			return fmt.Errorf("upstream %s: websocket is not for %s upstreams", u.Name, u.Dialect)
		}
		if u.Profile != "" && !slices.Contains(d.Profiles, u.Profile) {
			if len(d.Profiles) == 0 {
				return fmt.Errorf("upstream %s: a %s upstream takes no profile", u.Name, u.Dialect)
			}
			return fmt.Errorf("upstream %s: unknown profile %q (want %s)", u.Name, u.Profile, strings.Join(d.Profiles, " or "))
		}
	}
	if err := c.validateFallbacks(); err != nil {
		return err
	}
	if c.Retention <= 0 {
		return fmt.Errorf("retention must be positive")
	}
	if c.A2A.URL != "" {
		if err := checkURL(c.A2A.URL); err != nil {
			return fmt.Errorf("a2a.url %q: %w", c.A2A.URL, err)
		}
	}
	if _, err := c.trustedProxies(); err != nil {
		return err
	}
	if c.BodyTimeout < 0 || c.WriteTimeout < 0 || c.MaxConnections < 0 || c.LiveEvents < 0 {
		return fmt.Errorf("body_timeout, write_timeout, max_connections and live_events cannot be negative")
	}
	if c.Subscribe.ChannelsPerSession < 0 || c.Subscribe.ChannelsPerPrincipal < 0 || c.Subscribe.KeepAlive < 0 || c.Subscribe.Poll < 0 {
		return fmt.Errorf("subscribe: channels_per_session, channels_per_principal, keep_alive and poll cannot be negative")
	}
	return nil
}

// checkURL accepts an absolute http or https URL with a host: a URL
// without one (openai=/v1) would fail only at the first request.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("no host")
	}
	return nil
}

// validateFallbacks checks that each fallback names another configured
// upstream, once, and that no chain of fallbacks leads back to where it
// began.
func (c *Config) validateFallbacks() error {
	byName := map[string]*Upstream{}
	for i := range c.Upstreams {
		byName[c.Upstreams[i].Name] = &c.Upstreams[i]
	}
	for _, u := range c.Upstreams {
		seen := map[string]bool{}
		for _, f := range u.Fallbacks {
			switch {
			case f == u.Name:
				return fmt.Errorf("upstream %s: fallbacks: it cannot be its own fallback", u.Name)
			case byName[f] == nil:
				return fmt.Errorf("upstream %s: fallbacks: %q is not a configured upstream", u.Name, f)
			case seen[f]:
				return fmt.Errorf("upstream %s: fallbacks: %q is listed twice", u.Name, f)
			}
			seen[f] = true
		}
	}
	// A depth-first walk: a fallback met again on the current path is a cycle.
	const (
		unvisited = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case onPath:
			i := slices.Index(path, name)
			return fmt.Errorf("upstream %s: fallbacks form a cycle: %s", name, strings.Join(append(path[i:], name), " -> "))
		case done:
			return nil
		}
		state[name] = onPath
		path = append(path, name)
		for _, f := range byName[name].Fallbacks {
			if err := visit(f); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[name] = done
		return nil
	}
	for _, u := range c.Upstreams {
		if err := visit(u.Name); err != nil {
			return err
		}
	}
	return nil
}

// FallbackChain lists the upstreams tried after the one named name, in
// order: each fallback, then its own fallbacks, each upstream once. The
// config has been validated (no cycles).
func (c *Config) FallbackChain(name string) []string {
	byName := map[string]*Upstream{}
	for i := range c.Upstreams {
		byName[c.Upstreams[i].Name] = &c.Upstreams[i]
	}
	var out []string
	var add func(n string)
	add = func(n string) {
		for _, f := range byName[n].Fallbacks {
			if f != name && !slices.Contains(out, f) {
				out = append(out, f)
				add(f)
			}
		}
	}
	add(name)
	return out
}
