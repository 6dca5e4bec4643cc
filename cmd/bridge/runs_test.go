package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenRunDB writes a finished run with a known history into a fresh
// database file: reasoning, text, a tool call whose id the upstream knows
// by another name, usage and a final that waits for the tool result. A
// second, failed run of another session is there for list's filters.
func goldenRunDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bridge.db")
	ctx := t.Context()
	store, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	t0 := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for _, s := range []string{"sess_golden", "sess_other"} {
		if err := store.CreateSession(ctx, &bridge.Session{ID: s, Created: t0, Updated: t0}); err != nil {
			t.Fatal(err)
		}
	}

	run := &bridge.Run{ID: "run_golden", SessionID: "sess_golden", Inbound: "openai", Outbound: "openai", Upstream: "up",
		Model: "gpt-test", Status: bridge.StatusRunning, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Created: t0}
	input := []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("what is the weather in Oslo?")}}}
	if err := store.CreateRun(ctx, run, input); err != nil {
		t.Fatal(err)
	}
	call := &bridge.ToolCall{ID: "call_1", Name: "get_weather"}
	evs := []bridge.Event{
		{Kind: bridge.KindRunStarted, Source: bridge.SourceBridge, Time: at(0)},
		{Kind: bridge.KindMessageStarted, Source: bridge.SourceModel, ResponseID: "chatcmpl-up1", Model: "gpt-test-2025", Time: at(182.4)},
		{Kind: bridge.KindReasoningDelta, Source: bridge.SourceModel, Text: "The user", Time: at(190.1)},
		{Kind: bridge.KindReasoningDelta, Source: bridge.SourceModel, Text: " wants weather.", Time: at(201.7)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: "Let me", Time: at(230)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: " check", Time: at(235.5)},
		{Kind: bridge.KindTextDelta, Source: bridge.SourceModel, Text: ".", Time: at(240.25)},
		{Kind: bridge.KindToolCallStarted, Source: bridge.SourceModel, ToolCall: call, Time: at(260)},
		{Kind: bridge.KindToolCallDelta, Source: bridge.SourceModel, ToolCall: &bridge.ToolCall{Arguments: `{"city":`}, Time: at(262)},
		{Kind: bridge.KindToolCallDelta, Source: bridge.SourceModel, ToolCall: &bridge.ToolCall{Arguments: `"Oslo"}`}, Time: at(265)},
		{Kind: bridge.KindToolCallDone, Source: bridge.SourceModel, ToolCall: &bridge.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, Time: at(266)},
		{Kind: bridge.KindMessageDone, Source: bridge.SourceModel, Time: at(267)},
		{Kind: bridge.KindUsage, Source: bridge.SourceModel, Usage: &bridge.Usage{InputTokens: bridge.Int64(12), OutputTokens: bridge.Int64(5), TotalTokens: bridge.Int64(17)}, Time: at(270)},
		{Kind: bridge.KindFinal, Source: bridge.SourceBridge, Final: &bridge.Final{Status: bridge.StatusInputRequired, StopReason: bridge.StopToolUse,
			Usage: &bridge.Usage{InputTokens: bridge.Int64(12), OutputTokens: bridge.Int64(5), TotalTokens: bridge.Int64(17)}}, Time: at(271.5)},
	}
	for i := range evs {
		evs[i].RunID, evs[i].Seq = run.ID, int64(i+1)
	}
	done := *run
	done.Status, done.StopReason = bridge.StatusInputRequired, bridge.StopToolUse
	done.Usage = bridge.Usage{InputTokens: bridge.Int64(12), OutputTokens: bridge.Int64(5), TotalTokens: bridge.Int64(17)}
	done.UpstreamRunID, done.Finished = "chatcmpl-up1", at(271.5)
	done.FirstCommit, done.FirstClientByte = at(191.25), at(192.5)
	if err := store.Commit(ctx, &bridge.Batch{Events: evs, Runs: []*bridge.Run{&done}}); err != nil {
		t.Fatal(err)
	}
	if err := store.PutID(ctx, bridge.IDMapping{Kind: bridge.IDToolCall, Scope: "up", Local: "call_1", Remote: "toolu_up_1"}); err != nil {
		t.Fatal(err)
	}

	failed := &bridge.Run{ID: "run_failed", SessionID: "sess_other", Inbound: "openai", Outbound: "echo", Upstream: "echo",
		Model: "echo", Status: bridge.StatusRunning, Created: at(1000)}
	if err := store.CreateRun(ctx, failed, input); err != nil {
		t.Fatal(err)
	}
	fin := *failed
	fin.Status, fin.Reason, fin.Finished = bridge.StatusFailed, "upstream echo is unreachable", at(1012)
	err = store.Commit(ctx, &bridge.Batch{Runs: []*bridge.Run{&fin}, Events: []bridge.Event{
		{RunID: failed.ID, Seq: 1, Kind: bridge.KindRunStarted, Source: bridge.SourceBridge, Time: at(1000)},
		{RunID: failed.ID, Seq: 2, Kind: bridge.KindFinal, Source: bridge.SourceBridge, Time: at(1012), Final: &bridge.Final{
			Status: bridge.StatusFailed, Reason: "upstream echo is unreachable", Error: bridge.Errorf(bridge.CodeUpstream, "upstream echo is unreachable")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// runCLI runs the bridge command line and returns its stdout.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(args, &out, &errb); err != nil {
		t.Fatalf("bridge %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got)\n%s", path, diff)
	}
}

// TestRunsShowGolden prints a finished run's timeline.
func TestRunsShowGolden(t *testing.T) {
	db := goldenRunDB(t)
	checkGolden(t, "runs_show.txt", runCLI(t, "runs", "show", "run_golden", "--db", db))
	checkGolden(t, "runs_show_failed.txt", runCLI(t, "runs", "show", "--db", db, "run_failed"))
	out := runCLI(t, "runs", "show", "run_golden", "--db", db, "--json")
	checkGolden(t, "runs_show.json", out)
	var tl struct {
		Run               bridge.Run `json:"run"`
		TTFTMS            float64    `json:"ttft_ms"`
		FirstCommitMS     float64    `json:"first_commit_ms"`
		FirstClientByteMS float64    `json:"first_client_byte_ms"`
	}
	if err := json.Unmarshal([]byte(out), &tl); err != nil {
		t.Fatal(err)
	}
	if tl.Run.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || tl.TTFTMS != 190.1 || tl.FirstCommitMS != 191.25 || tl.FirstClientByteMS != 192.5 {
		t.Errorf("--json run %+v ttft %v first commit %v first client byte %v", tl.Run, tl.TTFTMS, tl.FirstCommitMS, tl.FirstClientByteMS)
	}
	for _, secret := range []string{"Oslo", "wants weather", "Let me"} {
		if strings.Contains(out, secret) || strings.Contains(runCLI(t, "runs", "show", "run_golden", "--db", db), secret) {
			t.Errorf("show prints message content %q", secret)
		}
	}
}

func TestRunsList(t *testing.T) {
	db := goldenRunDB(t)
	checkGolden(t, "runs_list.txt", runCLI(t, "runs", "list", "--db", db))
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"all", nil, []string{"run_failed", "run_golden"}},
		{"session", []string{"--session", "sess_golden"}, []string{"run_golden"}},
		{"status", []string{"--status", "failed"}, []string{"run_failed"}},
		{"limit", []string{"--limit", "1"}, []string{"run_failed"}},
		{"none", []string{"--status", "running"}, []string{}},
		{"outbound", []string{"--outbound", "echo"}, []string{"run_failed"}},
		{"model", []string{"--model", "gpt-test"}, []string{"run_golden"}},
		{"inbound", []string{"--inbound", "anthropic"}, []string{}},
		{"before", []string{"--before", "run_failed"}, []string{"run_golden"}},
		{"since a time", []string{"--since", "2026-01-01T00:00:00Z"}, []string{"run_failed", "run_golden"}},
		{"since a duration", []string{"--since", "1h", "--inbound", "openai"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []bridge.Run
			out := runCLI(t, append([]string{"runs", "list", "--db", db, "--json"}, tt.args...)...)
			if err := json.Unmarshal([]byte(out), &runs); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := []string{}
			for _, r := range runs {
				got = append(got, r.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestRunsErrors(t *testing.T) {
	db := goldenRunDB(t)
	missing := filepath.Join(t.TempDir(), "nope.db")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no db", []string{"runs", "list", "--db", missing}, "no database"},
		{"unknown run", []string{"runs", "show", "run_nope", "--db", db}, "not found"},
		{"no run", []string{"runs", "show", "--db", db}, "one run id"},
		{"bad status", []string{"runs", "list", "--db", db, "--status", "done"}, "unknown status"},
		{"bad since", []string{"runs", "list", "--db", db, "--since", "yesterday"}, "--since"},
		{"bad command", []string{"runs", "delete"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(tt.args, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("runs list created the database it was pointed at")
	}
}

// TestRunsShowServedRun: a run the bridge served, with a traceparent, shows
// its trace id and its timeline from the file.
func TestRunsShowServedRun(t *testing.T) {
	cfg := defaultConfig()
	cfg.DB = filepath.Join(t.TempDir(), "bridge.db")
	m := startMain(t, cfg)
	req := `{"model":"echo","stream":true,"messages":[{"role":"user","content":"one two three"}]}`
	runID, _ := postChat(t, "http://"+m.Addr(), req, map[string]string{"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out := runCLI(t, "runs", "show", runID, "--db", cfg.DB)
	for _, want := range []string{"trace      0af7651916cd43dd8448eb211c80319c", "outcome    completed (end_turn)",
		"dialects   openai -> echo (upstream echo)", "text_delta x3", "#1        run_started"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
