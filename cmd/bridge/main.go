// Command bridge is the protocol bridge: `bridge serve` accepts any dialect
// on one listener and calls the configured upstreams.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/server"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bridge:", err)
		}
		os.Exit(2)
	}
}

const usageText = `usage: bridge <command> [flags]

commands:
  serve      serve every dialect on one listener (bridge serve -h for flags)
  hash-key   read an API key on stdin, print the sha256 the config's keys take
  runs       list runs, or show one run's timeline, from the SQLite file (bridge runs -h)
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return flag.ErrHelp
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "runs":
		return runsCmd(args[1:], stdout, stderr)
	case "hash-key":
		key, err := io.ReadAll(io.LimitReader(os.Stdin, 4096))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, inbound.HashKey(strings.TrimSpace(string(key))))
		return nil
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return nil
	}
	fmt.Fprint(stderr, usageText)
	return fmt.Errorf("unknown command %q", args[0])
}

type upstreamFlags []string

func (u *upstreamFlags) String() string     { return strings.Join(*u, ",") }
func (u *upstreamFlags) Set(v string) error { *u = append(*u, v); return nil }

// parseServeFlags builds the serve configuration from defaults, the config
// file and the flags, in that order.
func parseServeFlags(args []string, stderr io.Writer) (server.Config, error) {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", cfg.Listen, "address to listen on")
	db := fs.String("db", cfg.DB, "the log: a SQLite file, or a postgres:// URL (replicas may share one PostgreSQL database)")
	model := fs.String("model", "", "upstream model for requests whose dialect names none")
	config := fs.String("config", "", "YAML config file (listen, db, upstreams, ...)")
	retention := fs.Duration("retention", cfg.Retention, "how long events are kept after their run ends")
	echoDelay := fs.Duration("echo-delay", 0, "pause between the echo upstream's words")
	record := fs.Bool("record-upstream", false, "record every run's upstream calls for the inspector at /ui/ (in memory, capped, keys redacted)")
	lease := fs.Duration("lease", 0, "with a postgres:// --db: how long a replica's lease on its runs lasts unless renewed; another replica takes over a dead one's runs after it (default 10s)")
	resumeRetry := fs.Duration("resume-retry", 0, "how long a run a restart or a dead replica left running is tried again upstream while the upstream cannot answer for now, before it ends interrupted (default 30s; negative: once)")
	var ups upstreamFlags
	fs.Var(&ups, "upstream", "upstream as DIALECT=URL (openai=http://host/v1) or echo; repeatable")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *config != "" {
		if err := server.LoadConfigFile(*config, &cfg); err != nil {
			return cfg, err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["listen"] {
		cfg.Listen = *listen
	}
	if set["db"] {
		cfg.DB = *db
	}
	if set["model"] {
		cfg.Model = *model
	}
	if set["retention"] {
		cfg.Retention = *retention
	}
	if set["echo-delay"] {
		cfg.EchoDelay = *echoDelay
	}
	if set["record-upstream"] {
		cfg.RecordUpstream = *record
	}
	if set["lease"] {
		cfg.Lease = *lease
	}
	if set["resume-retry"] {
		cfg.ResumeRetry = *resumeRetry
	}
	if len(ups) > 0 {
		cfg.Upstreams = nil
		for _, v := range ups {
			u, err := server.ParseUpstream(v)
			if err != nil {
				return cfg, err
			}
			cfg.Upstreams = append(cfg.Upstreams, u)
		}
	}
	return cfg, cfg.Validate()
}

func serve(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	m, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bridge serving on http://%s\n", m.Addr())
	for _, line := range m.Endpoints() {
		fmt.Fprintln(stdout, "  "+line)
	}
	for _, u := range cfg.Upstreams {
		fmt.Fprintf(stdout, "upstream %s: %s %s\n", u.Name, u.Dialect, u.URL)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.Run() }()
	select {
	case err := <-errc:
		_ = m.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	return m.Close(sctx)
}
