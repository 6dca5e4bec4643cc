package outbound

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/bridge-dev/bridge/bridge"
)

// Origin returns the scheme://host:port of u, with the scheme's default
// port made explicit and names lowercased, so two spellings of one origin
// compare equal; "" for a URL without a scheme or host.
func Origin(u *url.URL) string {
	if u == nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// OriginOf is Origin of a URL string ("" when it does not parse).
func OriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return Origin(u)
}

// CheckOrigin refuses a URL an upstream named (an A2A card's url) whose
// origin is neither the configured base's nor one of allowed (origins or
// URLs, as the config lists them): the bridge would send its upstream key
// there.
func CheckOrigin(name, base, target string, allowed []string) error {
	to := OriginOf(target)
	if to == "" {
		return bridge.Errorf(bridge.CodeUpstream, "upstream %s named an endpoint URL that is not absolute", name)
	}
	if to == OriginOf(base) || slices.ContainsFunc(allowed, func(a string) bool { return OriginOf(a) == to }) {
		return nil
	}
	return bridge.Errorf(bridge.CodeUpstream,
		"upstream %s named an endpoint at %s, another origin than the configured %s; the bridge will not send its key there (list it in the upstream's allow_origins to allow it)",
		name, to, OriginOf(base))
}

// redirectKeep are the request headers that may follow a redirect to
// another origin: none carries a credential. Every other header (the
// dialects' Authorization, X-Api-Key, any header a config adds) is dropped.
var redirectKeep = []string{"Accept", "Accept-Encoding", "Content-Type", "User-Agent", "Last-Event-Id",
	"Anthropic-Version", "A2a-Version", "Traceparent", "Tracestate", "Baggage"}

// maxRedirects is how many redirects a call follows (Go's default).
const maxRedirects = 10

// CheckRedirect is the redirect rule of every upstream client: a redirect
// to another origin than the call's first request keeps only the headers
// in redirectKeep, so no credential follows it. (Go drops Authorization
// alone, and only off the domain, not X-Api-Key or a subdomain.)
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	if Origin(req.URL) == Origin(via[0].URL) {
		return nil
	}
	for name := range req.Header {
		if !slices.Contains(redirectKeep, http.CanonicalHeaderKey(name)) {
			req.Header.Del(name)
		}
	}
	return nil
}
