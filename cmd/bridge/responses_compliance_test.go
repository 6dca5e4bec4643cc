//go:build compliance

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// complianceTests are the Open Responses compliance suite's tests the
// bridge must pass (bin/compliance-test.ts --filter): all 17 of commit
// 92c12d9, HTTP, WebSocket mode and compaction.
var complianceTests = []string{"basic-response", "assistant-phase", "response-output-phase-schema", "streaming-response",
	"websocket-response", "websocket-sequential-responses", "websocket-continuation", "websocket-reconnect-store-false-recovery",
	"websocket-previous-response-not-found", "websocket-failed-continuation-evicts-cache", "websocket-compact-new-chain",
	"system-prompt", "tool-calling", "image-input", "multi-turn", "compact-response", "compact-missing-model"}

// TestOpenResponsesCompliance runs the Open Responses compliance suite
// (openresponses/openresponses, bin/compliance-test.ts, which validates
// every body and every stream event against the spec's schemas) against
// `bridge serve --upstream openai=<an httptest model>`. It needs a
// checkout of the suite with its dependencies (npm i bun zod@3) named by
// OPENRESPONSES_DIR; the suite is never part of this repository, and no
// registry the test command may use has it, so the test is built only
// with -tags compliance (it is not one that skips in every clean run):
//
//	OPENRESPONSES_DIR=/path/to/openresponses go test -tags compliance -run TestOpenResponsesCompliance ./cmd/bridge
func TestOpenResponsesCompliance(t *testing.T) {
	dir := os.Getenv("OPENRESPONSES_DIR")
	if dir == "" {
		t.Fatal("OPENRESPONSES_DIR is not set (a checkout of openresponses/openresponses with npm i bun zod@3)")
	}
	bun := filepath.Join(dir, "node_modules", ".bin", "bun")
	if _, err := os.Stat(bun); err != nil {
		t.Fatalf("no bun in %s: %v", dir, err)
	}
	// A model that answers every request with text, and calls the tool
	// when it is given one.
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-compliance", Model: "gpt-4o-mini"}
		c.Role()
		if strings.Contains(string(body), `"tools"`) {
			c.ToolCall(0, "call_compliance_1", "get_weather", `{"location":`, `"San Francisco, CA"}`).Finish("tool_calls")
		} else {
			c.Text(openaitest.Words("Hello there, friend. One two three four five.")...).Finish("stop")
		}
		return openaitest.Reply{Chunks: c.Usage(20, 9).List()}
	})
	t.Cleanup(up.Close)
	cfg, err := parseServeFlags([]string{"--upstream", "openai=" + up.BaseURL()}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	m := startMain(t, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bun, "run", "bin/compliance-test.ts", "--base-url", "http://"+m.Addr()+"/v1",
		"--api-key", "compliance", "--json", "--filter", strings.Join(complianceTests, ","))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("compliance suite: %v\n%s", err, stderr.String())
	}
	var res struct {
		Summary struct{ Passed, Failed, Skipped, Total int } `json:"summary"`
		Results []struct {
			ID     string   `json:"id"`
			Status string   `json:"status"`
			Errors []string `json:"errors"`
		} `json:"results"`
	}
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		out = out[i:]
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("compliance suite output: %v\n%s\n%s", err, out, stderr.String())
	}
	for _, r := range res.Results {
		if r.Status != "passed" {
			t.Errorf("%s: %s: %s", r.ID, r.Status, strings.Join(r.Errors, "; "))
		}
	}
	t.Logf("Open Responses compliance: %d of %d passed, %d failed, %d skipped",
		res.Summary.Passed, res.Summary.Total, res.Summary.Failed, res.Summary.Skipped)
	if res.Summary.Passed != len(complianceTests) {
		t.Errorf("%d of the %d tests passed", res.Summary.Passed, len(complianceTests))
	}
}
