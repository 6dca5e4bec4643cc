package a2a

import (
	"encoding/json"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// Agent card paths: 0.3's, and 0.2's older one that tolerant clients still
// try.
const (
	CardPath    = "/.well-known/agent-card.json"
	OldCardPath = "/.well-known/agent.json"
)

// ProtocolVersion is the 0.3 version the card states.
const ProtocolVersion = "0.3.0"

// CardConfig describes the agent the bridge presents.
type CardConfig struct {
	Name, Description, Version string
	// URL is the JSON-RPC endpoint (POST /a2a).
	URL              string
	DocumentationURL string
	IconURL          string
	Provider         *a2asdk.AgentProvider
	Skills           []a2asdk.AgentSkill
}

// Interface is a 1.0 card's supportedInterfaces entry.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// card is the served card: the 0.3 fields (a2a-go's AgentCard) and a 1.0
// supportedInterfaces list, so clients of either version find the
// endpoint.
type card struct {
	a2asdk.AgentCard
	SupportedInterfaces []Interface `json:"supportedInterfaces"`
}

// EncodeCard renders the agent card: protocolVersion 0.3.0, url the
// JSON-RPC endpoint, preferredTransport JSONRPC, streaming true, no push
// notifications, text and JSON in and out, and a supportedInterfaces entry
// for 1.0 (protocolBinding JSONRPC, protocolVersion 1.0) on the same URL.
func EncodeCard(c CardConfig) ([]byte, error) {
	if c.Name == "" {
		c.Name = "bridge"
	}
	if c.Description == "" {
		c.Description = "A protocol bridge serving its upstream model as an A2A agent"
	}
	if c.Version == "" {
		c.Version = "1.0.0"
	}
	skills := c.Skills
	if len(skills) == 0 {
		skills = []a2asdk.AgentSkill{{ID: "chat", Name: "Chat", Description: "Conversation with the upstream model", Tags: []string{"chat"}}}
	}
	for i := range skills {
		if skills[i].Tags == nil {
			skills[i].Tags = []string{}
		}
	}
	modes := []string{"text/plain", "application/json"}
	out := card{
		AgentCard: a2asdk.AgentCard{
			ProtocolVersion:      ProtocolVersion,
			Name:                 c.Name,
			Description:          c.Description,
			URL:                  c.URL,
			PreferredTransport:   a2asdk.TransportProtocolJSONRPC,
			AdditionalInterfaces: []a2asdk.AgentInterface{{URL: c.URL, Transport: a2asdk.TransportProtocolJSONRPC}},
			Version:              c.Version,
			DocumentationURL:     c.DocumentationURL,
			IconURL:              c.IconURL,
			Provider:             c.Provider,
			Capabilities:         a2asdk.AgentCapabilities{Streaming: true},
			DefaultInputModes:    modes,
			DefaultOutputModes:   modes,
			Skills:               skills,
		},
		SupportedInterfaces: []Interface{{URL: c.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}},
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "a2a: agent card: %v", err)
	}
	return b, nil
}

// UpstreamCard is what the bridge needs of an upstream's card.
type UpstreamCard struct {
	Name string
	// URL is the JSON-RPC endpoint, and Version the version it speaks.
	URL       string
	Version   Version
	Streaming bool
}

// DecodeCard reads an upstream agent card of either version. It picks a
// JSON-RPC interface, 0.3 when the card offers one (a2a-go and most
// servers speak it), else 1.0.
func DecodeCard(body []byte) (*UpstreamCard, error) {
	o, err := wire.AsObject(body, "agent card")
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream agent card is not a JSON object")
	}
	c := &UpstreamCard{}
	c.Name, _ = optString(o, "name", "card")
	if raw, ok := o["capabilities"]; ok {
		var caps struct {
			Streaming bool `json:"streaming"`
		}
		_ = json.Unmarshal(raw, &caps)
		c.Streaming = caps.Streaming
	}
	var v10, v03 string
	if raw, ok := o["supportedInterfaces"]; ok {
		var ifs []Interface
		_ = json.Unmarshal(raw, &ifs)
		for _, i := range ifs {
			if !strings.EqualFold(i.ProtocolBinding, "JSONRPC") || i.URL == "" {
				continue
			}
			switch {
			case strings.HasPrefix(i.ProtocolVersion, "0.3") && v03 == "":
				v03 = i.URL
			case strings.HasPrefix(i.ProtocolVersion, "1.") && v10 == "":
				v10 = i.URL
			}
		}
	}
	if u, _ := optString(o, "url", "card"); u != "" && v03 == "" {
		pt, _ := optString(o, "preferredTransport", "card")
		if pt == "" || strings.EqualFold(pt, "JSONRPC") {
			v03 = u
		}
	}
	if raw, ok := o["additionalInterfaces"]; ok && v03 == "" {
		var ifs []a2asdk.AgentInterface
		_ = json.Unmarshal(raw, &ifs)
		for _, i := range ifs {
			if strings.EqualFold(string(i.Transport), "JSONRPC") && i.URL != "" {
				v03 = i.URL
				break
			}
		}
	}
	switch {
	case v03 != "":
		c.URL, c.Version = v03, V03
	case v10 != "":
		c.URL, c.Version = v10, V10
	default:
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream agent card offers no JSON-RPC interface")
	}
	return c, nil
}
