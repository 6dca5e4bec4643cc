// Package arch holds the architecture test: the import rules that keep the
// layers apart, checked on the module's real import graph (go list).
package arch

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/bridge-dev/bridge"

// pkg is a package of the module and what its non-test files import.
type pkg struct {
	path    string // relative to the module: "bridge", "mapping/openai"
	imports []string
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// dialectOf is the dialect a layer's package serves ("openai" for
// mapping/openai and mapping/openai/x), or "" for the layer's shared code
// (mapping/internal/..., inbound itself).
func dialectOf(p, layer string) string {
	rest, ok := strings.CutPrefix(p, layer+"/")
	if !ok {
		return ""
	}
	d, _, _ := strings.Cut(rest, "/")
	if d == "internal" {
		return ""
	}
	return d
}

// sqlDrivers are the imports that talk SQL.
var sqlDrivers = []string{"database/sql", "github.com/mattn/go-sqlite3", "github.com/jackc/pgx"}

// rules returns why p may not import imp, or "".
func rule(p, imp string) string {
	local, own := strings.CutPrefix(imp, module+"/")
	switch {
	case under(p, "bridge") && own && (under(local, "mapping") || under(local, "inbound") || under(local, "outbound") || under(local, "storage") || under(local, "otel") || under(local, "cmd")):
		return "bridge/ imports no dialect, storage, otel or wiring package"
	case under(p, "bridge") && strings.HasPrefix(imp, "go.opentelemetry.io/otel/sdk"):
		return "bridge/ sees the OpenTelemetry API only, never the SDK"
	case under(p, "mapping") && own && (under(local, "inbound") || under(local, "outbound") || under(local, "storage") || under(local, "otel")):
		return "a mapping package is a pure codec: no inbound, outbound, storage or otel"
	case under(p, "mapping") && own && under(local, "mapping") && dialectOf(local, "mapping") != "" && dialectOf(local, "mapping") != dialectOf(p, "mapping"):
		return "a mapping package imports no other dialect's (shared helpers live in mapping/internal)"
	case under(p, "inbound") && own && under(local, "outbound"):
		return "inbound never imports outbound"
	case !under(p, "storage") && slices.ContainsFunc(sqlDrivers, func(d string) bool { return imp == d || strings.HasPrefix(imp, d+"/") }):
		return "only storage/ uses SQL"
	}
	return ""
}

// knownViolations are the imports that break a rule today, each with the
// work that removes it. The test fails when one is gone (remove it here).
var knownViolations = map[string]string{}

func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if why := rule(p.path, imp); why != "" {
				out = append(out, fmt.Sprintf("%s -> %s: %s", p.path, strings.TrimPrefix(imp, module+"/"), why))
			}
		}
	}
	return out
}

// modulePackages lists the module's packages with their non-test imports.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs = append(pkgs, pkg{path: rel, imports: p.Imports})
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	return pkgs
}

func TestImports(t *testing.T) {
	found := map[string]bool{}
	for _, v := range violations(modulePackages(t)) {
		edge, _, _ := strings.Cut(v, ":")
		if _, ok := knownViolations[edge]; ok {
			found[edge] = true
			continue
		}
		t.Error(v)
	}
	for edge, why := range knownViolations {
		if !found[edge] {
			t.Errorf("%s is no longer imported (%s): remove it from knownViolations", edge, why)
		}
	}
}

// TestRules feeds the rules an import graph with one violation of each, so
// a rule that stops firing fails here.
func TestRules(t *testing.T) {
	bad := []pkg{
		{"bridge", []string{module + "/mapping/openai"}},
		{"bridge", []string{"go.opentelemetry.io/otel/sdk/trace"}},
		{"bridge/sub", []string{module + "/storage/sqlite"}},
		{"mapping/responses", []string{module + "/mapping/openai"}},
		{"mapping/openai", []string{module + "/outbound"}},
		{"mapping/internal/wire", []string{module + "/mapping/a2a"}},
		{"inbound/a2a", []string{module + "/outbound/a2a"}},
		{"cmd/bridge", []string{"database/sql"}},
		{"inbound/runs", []string{"github.com/jackc/pgx/v5"}},
	}
	for _, p := range bad {
		if v := violations([]pkg{p}); len(v) != 1 {
			t.Errorf("%s -> %v: %d violations, want 1", p.path, p.imports, len(v))
		}
	}
	good := []pkg{
		{"bridge", []string{"go.opentelemetry.io/otel/trace", "context"}},
		{"mapping/openai", []string{module + "/mapping/internal/wire", module + "/bridge"}},
		{"mapping/openai/x", []string{module + "/mapping/openai"}},
		{"inbound/a2a", []string{module + "/mapping/a2a", module + "/inbound", module + "/bridge"}},
		{"outbound/a2a", []string{module + "/mapping/a2a", module + "/outbound"}},
		{"storage/sqlite", []string{"database/sql", "github.com/mattn/go-sqlite3"}},
	}
	if v := violations(good); len(v) != 0 {
		t.Errorf("allowed imports reported: %v", v)
	}
}
