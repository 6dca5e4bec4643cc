package main

import (
	"context"
	"log/slog"

	"github.com/bridge-dev/bridge/server"
)

// The integration tests of this package drive the server package through
// the names they had when the wiring lived here.
type (
	Config    = server.Config
	Upstream  = server.Upstream
	KeyConfig = server.KeyConfig
	Main      = server.Server
)

// NewMain starts a server as `bridge serve` does.
func NewMain(ctx context.Context, cfg Config, log *slog.Logger) (*Main, error) {
	return server.New(ctx, cfg, log)
}

func defaultConfig() Config { return server.DefaultConfig() }

func parseUpstream(v string) (Upstream, error) { return server.ParseUpstream(v) }

func loadConfigFile(path string, cfg *Config) error { return server.LoadConfigFile(path, cfg) }
