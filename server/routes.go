package server

import (
	"slices"

	"github.com/bridge-dev/bridge/bridge"
)

// routes picks an upstream by model name. With one upstream every model
// routes to it; with several, a model goes to the upstream that lists it,
// else to one that lists "*".
type routes struct {
	model     string // the default model, for requests that name none
	upstreams []routedUpstream
}

type routedUpstream struct {
	up     bridge.Upstream
	models []string
}

func (r *routes) Route(model string) (bridge.Upstream, error) {
	if len(r.upstreams) == 1 {
		return r.upstreams[0].up, nil
	}
	for _, u := range r.upstreams {
		if slices.Contains(u.models, model) {
			return u.up, nil
		}
	}
	for _, u := range r.upstreams {
		if slices.Contains(u.models, "*") {
			return u.up, nil
		}
	}
	return nil, bridge.Errorf(bridge.CodeNotFound, "The model '%s' does not exist", model)
}

// Models lists the routed model names: the configured ones, else the
// default model, else the upstream names.
func (r *routes) Models() []string {
	var out []string
	for _, u := range r.upstreams {
		for _, m := range u.models {
			if m != "*" && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	if r.model != "" && !slices.Contains(out, r.model) {
		out = append(out, r.model)
	}
	if len(out) == 0 {
		for _, u := range r.upstreams {
			out = append(out, u.up.Name())
		}
	}
	return out
}
