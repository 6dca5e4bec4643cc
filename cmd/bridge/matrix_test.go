package main

// TestMatrix is the translation matrix: every (inbound, outbound) pair the
// bridge supports runs through one shared set of scenarios, against a real
// bridge (NewMain on 127.0.0.1:0, a temp SQLite file). The results are
// rendered into COMPATIBILITY.md at the repository root; the test fails
// when the committed file differs from what it renders, so the file cannot
// go stale. Regenerate it with:
//
//	go test ./cmd/bridge -run TestMatrix -args -update-compat
//
// Adding a dialect adds rows:
//   - an inbound dialect: a clientDriver (how a client of that dialect sends
//     a turn and reads its answer into an observation; how it reads a run's
//     events for a resume), with its stream grammar validator;
//   - an outbound dialect: an outboundSide whose play function makes a fake
//     upstream that plays a scenario's script in that dialect's wire format,
//     or says why it cannot (the reason lands in COMPATIBILITY.md);
//   - then one pair{inbound, outbound} per supported combination in
//     matrixPairs.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

var updateCompat = flag.Bool("update-compat", false, "rewrite COMPATIBILITY.md from the translation matrix's results")

// clientDriver is an inbound dialect's client, as the harness plays it.
type clientDriver interface {
	dialect() string
	describe() string
	// cannot says why the dialect cannot express a scenario; "" when it can.
	cannot(scenario string) string
	// limits lists what the dialect cannot carry, and why.
	limits() []string
	// send runs one turn to its end and normalizes what came back. Every
	// stream goes through the dialect's validator.
	send(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *observation
	// open starts a streamed turn, to read it frame by frame and drop it.
	open(ctx context.Context, t *testing.T, b *bridgeUT, tr turn) *liveStream
	// events reads a run's events after lastEventID ("" for all) to the end,
	// as the dialect's replay renders them; tr is the turn that started the
	// run (a replay is rendered as its client first saw it).
	events(ctx context.Context, t *testing.T, b *bridgeUT, runID, lastEventID string, tr turn) *observation
}

// liveStream is a streamed response being read.
type liveStream struct {
	status int
	header http.Header
	runID  string
	frames []frame
	// next reads one more frame; drop closes the connection and returns
	// what was read, validated as a stream prefix.
	next func(t *testing.T) frame
	drop func(t *testing.T) *observation
}

// outboundSide is an outbound dialect: its upstream factory.
type outboundSide struct {
	name     string
	describe string
	// play makes an upstream that plays sc in the dialect's wire format, or
	// returns why it cannot.
	play   func(t *testing.T, sc *script) (*fakeUpstream, string)
	limits func() []string
}

// pair is one row of the matrix.
type pair struct {
	inbound  clientDriver
	outbound outboundSide
	// notes say more about what this combination carries.
	notes []string
}

func (p pair) name() string { return p.inbound.dialect() + "->" + p.outbound.name }

func (p pair) title() string { return p.inbound.dialect() + " → " + p.outbound.name }

var (
	openaiOut = outboundSide{
		name: "openai",
		describe: "The bridge's Chat Completions client (outbound/openai) against openaitest.Server, " +
			"a fake upstream that writes OpenAI's SSE by hand.",
		play: openaiUpstream,
		limits: func() []string {
			return []string{
				"Reasoning signatures and encrypted reasoning cannot be sent back to a Chat Completions " +
					"upstream: its messages have no field for them. Reasoning text is read from " +
					"reasoning_content or reasoning (DeepSeek, OpenRouter, vLLM); OpenAI's own API sends none.",
				"No upstream resume: Chat Completions has none, so a broken upstream stream fails the run.",
				"Tool-call ids OpenAI refuses (empty, or over 40 bytes) are replaced by call_ ids, mapped back by " +
					"the engine.",
			}
		},
	}
	echoOut = outboundSide{
		name:     "echo",
		describe: "The built-in echo upstream (outbound/echo), paced by echo_delay where a scenario needs a slow stream.",
		play:     echoUpstream,
		limits:   echoLimits,
	}
)

// matrixPairs lists every (inbound, outbound) pair the bridge supports.
func matrixPairs() []pair {
	return append([]pair{
		{inbound: openaiClient{}, outbound: openaiOut, notes: []string{
			"Everything the Chat Completions wire carries goes through unchanged in meaning: text, " +
				"streamed tool-call arguments byte for byte, parallel calls with their indices and ids, " +
				"reasoning_content, usage, and upstream errors with their status, type, code and message.",
		}},
		{inbound: openaiClient{}, outbound: echoOut},
	}, slices.Concat(anthropicPairs(), a2aMatrixPairs(), adkMatrixPairs(), hermesMatrixPairs(), crossPairs(), responsesPairs())...)
}

// scenario is one column of the matrix.
type scenario struct {
	name, title, desc string
	run               func(h *harness)
}

// harness is what a scenario runs with.
type harness struct {
	t      *testing.T
	ctx    context.Context
	pair   pair
	client clientDriver
	na     string // why the scenario is not applicable, once known
}

// upstream asks the pair's outbound for an upstream playing sc; when it
// cannot, the scenario is not applicable (and ends there).
func (h *harness) upstream(sc *script) *fakeUpstream {
	h.t.Helper()
	up, reason := h.pair.outbound.play(h.t, sc)
	if reason != "" {
		h.notApplicable(reason)
	}
	return up
}

// notApplicable ends the scenario, from its own goroutine, as not
// applicable to the pair: the cell is n/a with reason in COMPATIBILITY.md,
// which TestMatrix checks, so the subtest passes rather than skips (a
// clean run skips nothing).
func (h *harness) notApplicable(reason string) {
	h.t.Helper()
	h.na = reason
	h.t.Log("not applicable: " + reason)
	panic(naExit{})
}

// naExit is notApplicable's panic, recovered by the scenario's subtest.
type naExit struct{}

// outcome is one cell of the matrix.
type outcome struct {
	result string // pass, n/a, FAIL
	reason string
}

func TestMatrix(t *testing.T) {
	pairs, scenarios := matrixPairs(), matrixScenarios()
	var mu sync.Mutex
	cells := map[string]map[string]outcome{}
	for _, p := range pairs {
		t.Run(p.name(), func(t *testing.T) {
			for _, sc := range scenarios {
				var h *harness
				ok := t.Run(sc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
					defer cancel()
					h = &harness{t: t, ctx: ctx, pair: p, client: p.inbound}
					defer func() {
						if r := recover(); r != nil && r != (naExit{}) {
							panic(r)
						}
					}()
					if reason := p.inbound.cannot(sc.name); reason != "" {
						h.notApplicable(reason)
					}
					sc.run(h)
				})
				if h == nil {
					continue // filtered out by -run
				}
				o := outcome{result: "pass"}
				switch {
				case h.na != "":
					o = outcome{result: "n/a", reason: h.na}
				case !ok:
					o = outcome{result: "FAIL"}
				}
				mu.Lock()
				if cells[p.name()] == nil {
					cells[p.name()] = map[string]outcome{}
				}
				cells[p.name()][sc.name] = o
				mu.Unlock()
			}
		})
	}
	for _, p := range pairs {
		if len(cells[p.name()]) != len(scenarios) {
			t.Logf("not every cell of the matrix ran (-run filter): COMPATIBILITY.md is not checked")
			return
		}
	}
	if *updateCompat && t.Failed() {
		t.Fatalf("not writing %s: the matrix has failures", compatFile)
	}
	checkCompat(t, renderCompat(pairs, scenarios, cells))
}

const compatFile = "../../COMPATIBILITY.md"

// checkCompat writes COMPATIBILITY.md with -update-compat, else fails when
// the committed file differs from got.
func checkCompat(t *testing.T, got []byte) {
	t.Helper()
	if *updateCompat {
		if err := os.WriteFile(compatFile, got, 0o644); err != nil {
			t.Fatalf("write %s: %v", compatFile, err)
		}
		t.Logf("wrote %s", filepath.Clean(compatFile))
		return
	}
	want, err := os.ReadFile(compatFile)
	if err != nil {
		t.Fatalf("read %s: %v\nGenerate it with: go test ./cmd/bridge -run TestMatrix -args -update-compat", compatFile, err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
		line++
	}
	at := func(l []string) string {
		if line < len(l) {
			return l[line]
		}
		return "<end of file>"
	}
	t.Errorf("COMPATIBILITY.md is stale: it differs from what the matrix renders at line %d:\n  file:   %s\n  matrix: %s\n"+
		"Regenerate it with: go test ./cmd/bridge -run TestMatrix -args -update-compat", line+1, at(wl), at(gl))
}

// renderCompat renders the matrix's results. It depends only on the tables
// and the outcomes, so it is deterministic. The file has one section per
// inbound dialect: a grid of scenarios by upstream whose cells say pass, or
// n/a with a footnote giving the reason once; what a client's or an
// upstream's dialect cannot carry is said once, in its own section, not in
// every pair that shares it.
func renderCompat(pairs []pair, scenarios []scenario, cells map[string]map[string]outcome) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Compatibility\n\n")
	p("What each (inbound → outbound) pair of dialects carries, as the translation matrix proves it.\n")
	p("This file is generated by `TestMatrix` (cmd/bridge/matrix_test.go) from its tables and results; do not\n")
	p("edit it by hand. The test fails when this file differs from what it renders. Regenerate it with:\n\n")
	p("    go test ./cmd/bridge -run TestMatrix -args -update-compat\n\n")

	// The inbound dialects and the upstreams, in the order pairs name them.
	var clients []clientDriver
	byClient := map[string][]pair{}
	var outs []outboundSide
	seenOut := map[string]bool{}
	for _, pr := range pairs {
		d := pr.inbound.dialect()
		if byClient[d] == nil {
			clients = append(clients, pr.inbound)
		}
		byClient[d] = append(byClient[d], pr)
		if !seenOut[pr.outbound.name] {
			seenOut[pr.outbound.name] = true
			outs = append(outs, pr.outbound)
		}
	}
	p("Clients: ")
	for i, c := range clients {
		if i > 0 {
			p(", ")
		}
		p("[%s](#%s-clients)", c.dialect(), c.dialect())
	}
	p(". Then [the scenarios](#scenarios) and [the upstreams](#upstreams).\n")

	for _, c := range clients {
		d := c.dialect()
		prs := byClient[d]
		p("\n## %s clients\n\n%s\n\n", d, c.describe())
		p("| scenario \\ upstream |")
		for _, pr := range prs {
			p(" %s |", pr.outbound.name)
		}
		p("\n|---|")
		for range prs {
			p("---|")
		}
		p("\n")
		var notes []string // footnotes: each reason once
		note := func(reason string) int {
			if i := slices.Index(notes, reason); i >= 0 {
				return i + 1
			}
			notes = append(notes, reason)
			return len(notes)
		}
		for _, sc := range scenarios {
			p("| %s |", sc.title)
			for _, pr := range prs {
				switch o := cells[pr.name()][sc.name]; o.result {
				case "n/a":
					p(" n/a [%d] |", note(o.reason))
				default:
					p(" %s |", o.result)
				}
			}
			p("\n")
		}
		if len(notes) > 0 {
			p("\n")
			for i, n := range notes {
				p("[%d] %s.  \n", i+1, n)
			}
		}
		p("\nWhat %s clients cannot be given, whatever the upstream:\n\n", d)
		lim := c.limits()
		if len(lim) == 0 {
			p("- nothing known\n")
		}
		for _, l := range lim {
			p("- %s\n", l)
		}
		for _, pr := range prs {
			if len(pr.notes) == 0 {
				continue
			}
			p("\n### %s\n", pr.title())
			for _, n := range pr.notes {
				p("\n%s\n", n)
			}
		}
	}

	p("\n## Scenarios\n\n")
	for _, sc := range scenarios {
		p("- **%s** (`%s`): %s\n", sc.title, sc.name, sc.desc)
	}

	p("\n## Upstreams\n")
	for _, o := range outs {
		p("\n### %s\n\n%s\n\nWhat it cannot carry, whatever the client:\n\n", o.name, o.describe)
		lim := o.limits()
		if len(lim) == 0 {
			p("- nothing known\n")
		}
		for _, l := range lim {
			p("- %s\n", l)
		}
	}
	return b.Bytes()
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sameCalls compares tool calls exactly (index, id, name, arguments).
func sameCalls(a, b []toolCall) bool { return slices.Equal(a, b) }
