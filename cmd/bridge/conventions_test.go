package main

// The chatkit conventions suite (issue 14, "What it must show"). Each of
// chatkit's four adapters (OpenAI-compatible, A2A, ADK, Hermes), written
// as a client shim that sends exactly the requests the adapter sends
// (conventions_adapters_test.go), talks to a front bridge over each
// upstream (conventions_chain_test.go): an OpenAI model, a second bridge
// serving A2A, ADK and Hermes over that model, and an ADK api_server.
// Every capability the conventions name is a sub-test:
//
//	TestConventions/<adapter>/over-<upstream>/<capability>
//
// A case that does not hold is in convGaps with its reason and does not
// run; docs/CONVENTIONS.md, the table capability × adapter the README
// links, is rendered from the grid and the gaps and checked here
// (-update-conventions rewrites it). -conventions-all runs the gaps too,
// to see which a change made hold.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
)

var (
	updateConventions = flag.Bool("update-conventions", false, "rewrite docs/CONVENTIONS.md from the conventions suite's grid")
	conventionsAll    = flag.Bool("conventions-all", false, "run the conventions cases the gaps table says do not hold, too")
)

// caseTimeout bounds one case, all its requests.
const caseTimeout = 30 * time.Second

// convCapability is one row of the table.
type convCapability struct {
	name, title, desc string
	run               func(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string)
}

func convCapabilities() []convCapability {
	return []convCapability{
		{"run", "run", "a turn streams the whole answer and its run completes", caseRun},
		{"stop", "stop", "stopping a running turn cancels its run, and the upstream's run stops (the model's request is dropped; over a second bridge, its one run of the turn is cancelled; the ADK api_server's session never gets the whole answer)", caseStop},
		{"resume", "resume from every frame", "for every frame k of a short run, the frames up to k and those resumed from k's id together equal the uncut stream, byte for byte", caseResume},
		{"reload", "reload", "the history of a running run, then a resume from the cursor it gives: the history's partial answer and the resumed answer together are the whole answer, no duplicate", caseReload},
		{"tool-loop", "tool loop", "the model calls a client tool, the client sends its result: one run id for both legs, one run in the history (over a second bridge, one run there too); the A2A and ADK clients declare no tools, so theirs is over the ADK agent: its own tool, then its call of a client tool (an input-required task with a function_call data part, a long-running functionCall) answered with a function response", caseToolLoop},
		{"regenerate", "regenerate", "the last turn again with `X-Replace-From`: the history holds the earlier run and the new one, and the upstream's request holds no discarded turn (the ADK api_server, which cannot discard, gets a fresh session seeded with the kept turns as text, as the conventions allow: its agent answers them as its first turn)", caseRegenerate},
		{"edit", "edit", "the first turn edited with `X-Replace-From` (two turns discarded): the history holds the new run alone, and the upstream's request only the edited turn", caseEdit},
		{"steer", "steer", "a message added to a running turn reaches the model in the same run, and that run's stream carries the answer to it; over a second bridge the steer lands in its run of the turn (one run there)", caseSteer},
		{"subscribe", "subscribe", "a session channel (`GET /v1/sessions/{s}/events?format=<dialect>`) carries runs sent with `Prefer: respond-async` (202, nothing streamed): the first frame of a run is its start frame with the client's local run id, two runs in a row come in order each between its start and end frame, a channel cut mid-run resumes from its last id with no gap and no duplicate, and another client's run of the session shows on it", caseSubscribe},
	}
}

func convAdapters() []convAdapter {
	return []convAdapter{openaiAdapter{}, a2aAdapter{}, adkAdapter{}, hermesAdapter{}}
}

// convGap is a case that does not hold, and why. Each field is one name,
// several space-separated, or "*" for any.
type convGap struct {
	adapter, upstream, capability string
	reason                        string
}

// convGaps lists what does not hold. Each entry says why; an entry whose
// reason starts with "not yet" waits for a feature issue 14 asks for.
var convGaps = []convGap{
	// Tool loops: the A2A and ADK adapters send no tools.
	{"a2a", "openai a2a adk hermes", "tool-loop", noClientTools("an A2A")},
	{"adk", "openai a2a adk hermes", "tool-loop", noClientTools("an ADK")},

	// Stop and steer over an ADK api_server (item 8).
	{"*", "adk-server", "stop", "cannot: the ADK api_server has no stop; the bridge closes `run_sse`, all it offers, and its run " +
		"ends cancelled with nothing more for its client, but the invocation runs on to its end and its answer lands in the " +
		"ADK session (ADK-JS 2.0.0 means to abort an invocation whose request closed; this case watches the session for 2 s " +
		"and sees the whole answer arrive)"},
	{"*", "adk-server", "steer", "cannot: the ADK api_server takes no input for a running invocation; the bridge sends the steer as " +
		"the session's next turn once the answer is done, which the agent answers as a turn of its own; the run's `dropped` " +
		"in the history says so (`steer:next_upstream_call`)"},
}

func noClientTools(client string) string {
	return "cannot: " + client + " client declares no tools and the bridge runs none of its own (MCP is a later issue), so the " +
		"model behind it has no tool to call; over an agent with tools (adk-server) both the agent's own tool loop and its " +
		"call of a client tool, answered with a function response, hold"
}

func gapOf(adapter, upstream, capability string) *convGap {
	for i := range convGaps {
		g := &convGaps[i]
		in := func(set, v string) bool { return set == "*" || slices.Contains(strings.Fields(set), v) }
		if in(g.adapter, adapter) && in(g.upstream, upstream) && in(g.capability, capability) {
			return g
		}
	}
	return nil
}

func TestConventions(t *testing.T) {
	ups := convUpstreams()
	chains := map[string]*chain{}
	for _, u := range ups {
		chains[u.name] = u.start(t)
	}
	for _, a := range convAdapters() {
		t.Run(a.name(), func(t *testing.T) {
			for _, u := range ups {
				t.Run("over-"+u.name, func(t *testing.T) {
					for _, cp := range convCapabilities() {
						g := gapOf(a.name(), u.name, cp.name)
						if g != nil && !*conventionsAll {
							continue // listed in docs/CONVENTIONS.md with its reason
						}
						t.Run(cp.name, func(t *testing.T) {
							t.Parallel()
							if g != nil {
								t.Logf("listed as not holding: %s", g.reason)
							}
							ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
							defer cancel()
							// The ADK api_server outlives a -count run: tags differ.
							tag := strings.Join([]string{a.name(), u.name, cp.name, strconv.FormatInt(convSeq.Add(1), 10)}, "-")
							cp.run(ctx, t, a, chains[u.name], tag)
						})
					}
				})
			}
		})
	}
}

// TestConventionsTable checks docs/CONVENTIONS.md and the README's table
// against the grid.
func TestConventionsTable(t *testing.T) {
	adapters, ups, caps := convAdapters(), convUpstreams(), convCapabilities()
	table := renderConventionsTable(adapters, ups, caps)
	const (
		docFile    = "../../docs/CONVENTIONS.md"
		readmeFile = "../../README.md"
		start, end = "<!-- conventions:start -->\n", "<!-- conventions:end -->\n"
	)
	doc := renderConventions(adapters, ups, caps, table)
	readme, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(readme, []byte(start)), bytes.Index(readme, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q section for the conventions table", start, end)
	}
	newReadme := slices.Concat(readme[:i+len(start)], table, readme[j:])
	if *updateConventions {
		for f, b := range map[string][]byte{docFile: doc, readmeFile: newReadme} {
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	const regen = "regenerate it with: go test ./cmd/bridge -run TestConventionsTable -args -update-conventions"
	if want, err := os.ReadFile(docFile); err != nil || !bytes.Equal(doc, want) {
		t.Errorf("docs/CONVENTIONS.md is stale (%v); %s", err, regen)
	}
	if !bytes.Equal(readme, newReadme) {
		t.Errorf("the README's conventions table is stale; %s", regen)
	}
}

// ---- the cases -------------------------------------------------------------

// convTurn sends a turn and reads its stream to the end.
func convTurn(ctx context.Context, t *testing.T, a convAdapter, c *chain, s *convSession, text string, o turnOpts) (string, []sseFrame) {
	t.Helper()
	st := a.start(ctx, t, c, s, text, o)
	frames := st.all(t)
	run := a.runOf(st)
	if run == "" {
		t.Fatalf("turn %q: no run id in the stream: %s", text, rawOf(frames))
	}
	if !a.ended(frames) {
		t.Fatalf("turn %q: the stream has no end: %s", text, rawOf(frames))
	}
	return run, frames
}

// words counts the words of text.
func wordCount(text string) int { return len(strings.Fields(text)) }

func caseRun(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s := a.session(ctx, t, c, tag)
	prompt := sayPrompt("hello " + tag + " brave new world")
	run, frames := convTurn(ctx, t, a, c, s, prompt, turnOpts{})
	if got, want := a.answer(frames), c.answer(prompt, 1); got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	if r := waitRunState(ctx, t, c.front, run); r.Status != bridge.StatusCompleted {
		t.Errorf("run %s: %s (%s), want completed", run, r.Status, r.Reason)
	}
}

func caseStop(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s := a.session(ctx, t, c, tag)
	prompt := sayPrompt(convSlowAnswer(tag, 60))
	st := a.start(ctx, t, c, s, prompt, turnOpts{})
	if !st.until(func(f []sseFrame) bool { return wordCount(a.answer(f)) >= 3 }) {
		t.Fatalf("the stream ended before its third word: %s", rawOf(st.frames))
	}
	run := a.runOf(st)
	a.stop(ctx, t, c, s, run)
	frames := st.all(t)
	if got := a.answer(frames); got == c.answer(prompt, 1) {
		t.Errorf("the whole answer came despite the stop")
	}
	r := waitRunState(ctx, t, c.front, run)
	if r.Status != bridge.StatusCancelled {
		t.Errorf("run %s: %s (%s), want cancelled", run, r.Status, r.Reason)
	}
	if c.backMain != nil {
		oneUpstreamRun(ctx, t, c, tag, bridge.StatusCancelled)
	}
	if c.model != nil {
		waitCond(ctx, t, "the model's request to be dropped", func() bool {
			reqs := c.model.requests(tag)
			return len(reqs) == 1 && reqs[0].done
		})
		if reqs := c.model.requests(tag); !reqs[0].cancelled {
			t.Errorf("the model's request ran to its end")
		}
	}
	if c.adkURL != "" {
		// The agent's session never gets the complete answer: watched
		// until well past the time the whole answer takes.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) && !t.Failed() {
			for _, e := range adkServerEvents(ctx, t, c, tag) {
				if !e.Partial && e.Author != "user" && e.text() == c.answer(prompt, 1) {
					t.Errorf("the ADK agent's session holds the whole answer: the invocation ran to its end after the stop")
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// adkServerEvents are the events of the ADK api_server's session (of the
// front bridge's ADK user) whose user turn mentions tag.
func adkServerEvents(ctx context.Context, t *testing.T, c *chain, tag string) []adkFrameEvent {
	t.Helper()
	sessions := c.adkURL + "/apps/" + convModelName + "/users/" + convADKServerUser + "/sessions"
	status, body := convHTTP(ctx, t, "GET", sessions, nil, nil)
	if status != 200 {
		t.Fatalf("ADK sessions: %d %s", status, body)
	}
	var list struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	if json.Unmarshal(body, &list) != nil { // ADK-JS answers an object; Python a list
		decodeJSON(t, "ADK sessions", body, &list.Sessions)
	}
	for _, ss := range list.Sessions {
		status, body := convHTTP(ctx, t, "GET", sessions+"/"+ss.ID, nil, nil)
		if status != 200 {
			continue
		}
		var detail struct{ Events []adkFrameEvent }
		decodeJSON(t, "ADK session", body, &detail)
		for _, e := range detail.Events {
			if e.Author == "user" && strings.Contains(e.text(), tag) {
				return detail.Events
			}
		}
	}
	t.Fatalf("the ADK api_server has no session of %s", tag)
	return nil
}

// convADKServerUser is the ADK user a bridge without keys calls an ADK
// upstream as.
const convADKServerUser = "bridge"

func caseResume(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s := a.session(ctx, t, c, tag)
	prompt := sayPrompt("resume " + tag + " one two")
	run, frames := convTurn(ctx, t, a, c, s, prompt, turnOpts{})
	// Keep-alive comments are left out on both sides (readSSEFrame): they
	// come when they come.
	checkResumeEveryFrame(t, []byte(rawOf(frames)), func(t *testing.T, id string) []byte {
		return []byte(rawOf(a.resume(ctx, t, c, s, run, id).all(t)))
	})
}

func caseReload(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s := a.session(ctx, t, c, tag)
	prompt := sayPrompt(convSlowAnswer(tag, 60))
	whole := c.answer(prompt, 1)
	st := a.start(ctx, t, c, s, prompt, turnOpts{})
	if !st.until(func(f []sseFrame) bool { return wordCount(a.answer(f)) >= 4 }) {
		t.Fatalf("the stream ended before its fourth word")
	}
	run := a.runOf(st)
	h := a.history(ctx, t, c, s)
	st.close() // the page reloads: its stream is gone
	if h.running != run || h.cursor == "" {
		t.Fatalf("history: running run %q cursor %q, want run %s with a cursor", h.running, h.cursor, run)
	}
	if h.partial == "" || !strings.HasPrefix(whole, h.partial) {
		t.Errorf("history: partial answer %q, want a beginning of %q", h.partial, whole)
	}
	rest := a.answer(a.resume(ctx, t, c, s, run, h.cursor).all(t))
	if h.partial+rest != whole {
		t.Errorf("history's partial %q + resumed %q != the whole answer %q", h.partial, rest, whole)
	}
}

func caseToolLoop(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	tc, ok := a.(toolCalling)
	if !ok {
		agentToolLoop(ctx, t, a, c, tag)
		return
	}
	s := a.session(ctx, t, c, tag)
	prompt, tool, answered := c.toolTurn(tag)
	r1, f1 := convTurn(ctx, t, a, c, s, prompt, turnOpts{tools: true})
	calls := tc.toolCalls(f1)
	if len(calls) != 1 || calls[0].name != tool || calls[0].id == "" {
		t.Fatalf("tool calls %v, want one %s call: %s", calls, tool, rawOf(f1))
	}
	results := []msg{{role: bridge.RoleAssistant, text: a.answer(f1), toolCalls: calls},
		{role: bridge.RoleTool, toolCallID: calls[0].id, text: "20C"}}
	r2, f2 := convTurn(ctx, t, a, c, s, "", turnOpts{tools: true, transcript: append(slices.Clone(s.transcript), userMsg(prompt)), toolResults: results})
	if r2 != r1 {
		t.Errorf("the tool result's leg is run %s, want %s (one run for the turn)", r2, r1)
	}
	if got := a.answer(f2); !answered(got) {
		t.Errorf("answer %q, not the one to the tool's result", got)
	}
	if r := waitRunState(ctx, t, c.front, r1); r.Status != bridge.StatusCompleted {
		t.Errorf("run %s: %s (%s), want completed", r1, r.Status, r.Reason)
	}
	if h := a.history(ctx, t, c, s); !slices.Equal(h.runIDs(), []string{r1}) {
		t.Errorf("history runs %v, want [%s]", h.runIDs(), r1)
	}
	if c.backMain != nil {
		oneUpstreamRun(ctx, t, c, tag, bridge.StatusCompleted) // the result continued the upstream's run
	}
}

// agentToolLoop is the tool loop of an adapter whose client declares no
// tools (A2A, ADK), over the ADK api_server: the agent's own tool
// ("weather:<city>" calls its get_weather, then answers), then the
// agent's client tool ("client:<city>", a long-running client_weather the
// client answers with a function response, which continues the run).
func agentToolLoop(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	if c.adkURL == "" {
		t.Fatalf("the %s adapter's client runs no tools, and no agent upstream has tools of its own", a.name())
	}
	s := a.session(ctx, t, c, tag)
	run, frames := convTurn(ctx, t, a, c, s, "weather:"+tag, turnOpts{})
	if got, want := a.answer(frames), "The weather in "+tag+": clear, 21 C."; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	if r := waitRunState(ctx, t, c.front, run); r.Status != bridge.StatusCompleted {
		t.Errorf("run %s: %s (%s), want completed", run, r.Status, r.Reason)
	}
	if h := a.history(ctx, t, c, s); !slices.Equal(h.runIDs(), []string{run}) {
		t.Errorf("history runs %v, want [%s]", h.runIDs(), run)
	}

	ta, ok := a.(agentToolAnswering)
	if !ok {
		return
	}
	s = a.session(ctx, t, c, tag+"-client")
	prompt, tool, answered := c.toolTurn(tag)
	r1, f1 := convTurn(ctx, t, a, c, s, prompt, turnOpts{})
	calls := ta.agentToolCalls(f1)
	if len(calls) != 1 || calls[0].name != tool || calls[0].id == "" {
		t.Fatalf("the agent's client tool calls %v, want one %s call: %s", calls, tool, rawOf(f1))
	}
	st := ta.answerTools(ctx, t, c, s, r1, calls, "20C")
	f2 := st.all(t)
	if r2 := a.runOf(st); r2 != r1 {
		t.Errorf("the tool result's leg is run %q, want %s (one run for the turn)", r2, r1)
	}
	if got := a.answer(f2); !answered(got) {
		t.Errorf("answer %q, not the one to the tool's result: %s", got, rawOf(f2))
	}
	if r := waitRunState(ctx, t, c.front, r1); r.Status != bridge.StatusCompleted {
		t.Errorf("run %s: %s (%s), want completed", r1, r.Status, r.Reason)
	}
	if h := a.history(ctx, t, c, s); !slices.Equal(h.runIDs(), []string{r1}) {
		t.Errorf("history runs %v, want [%s]", h.runIDs(), r1)
	}
}

// twoTurns runs two turns in a fresh session.
func twoTurns(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) (s *convSession, q1, q2, r1, r2 string) {
	t.Helper()
	s = a.session(ctx, t, c, tag)
	q1, q2 = sayPrompt("first "+tag), sayPrompt("second "+tag)
	r1, f1 := convTurn(ctx, t, a, c, s, q1, turnOpts{})
	s.record(q1, a.answer(f1))
	r2, f2 := convTurn(ctx, t, a, c, s, q2, turnOpts{})
	s.record(q2, a.answer(f2))
	return s, q1, q2, r1, r2
}

// oneUpstreamRun checks that over a second bridge the case's turn is one
// run there too, which ends with status want.
func oneUpstreamRun(ctx context.Context, t *testing.T, c *chain, tag string, want bridge.Status) {
	t.Helper()
	var runs []*bridge.Run
	waitCond(ctx, t, "the second bridge's run to end", func() bool {
		runs = c.upstreamRuns(ctx, t, tag)
		return !slices.ContainsFunc(runs, func(r *bridge.Run) bool { return r.Status == bridge.StatusRunning })
	})
	if len(runs) != 1 || runs[0].Status != want {
		var got []string
		for _, r := range runs {
			got = append(got, r.ID+" "+string(r.Status))
		}
		t.Errorf("the second bridge's session holds runs %v, want one, %s", got, want)
	}
}

// checkModelContext checks the model's last request of the case's tag:
// written out as "role: text" lines (a seeded context's inlined turns
// among them, in whatever frame the upstream's dialect puts them), it
// holds each kept text once, in order, and no discarded text.
func checkModelContext(t *testing.T, c *chain, tag string, kept, discarded []string) {
	t.Helper()
	if c.model == nil {
		return // the ADK agent: its answer counts the turns it holds
	}
	reqs := c.model.requests(tag)
	if len(reqs) == 0 {
		t.Fatalf("the model got no request")
	}
	var lines []string
	for _, m := range reqs[len(reqs)-1].req.messages {
		if m.role == bridge.RoleUser || m.role == bridge.RoleAssistant {
			lines = append(lines, string(m.role)+": "+m.text)
		}
	}
	flat := strings.Join(lines, "\n")
	at := 0
	for _, k := range kept {
		if n := strings.Count(flat, k); n != 1 {
			t.Errorf("the model's last request holds %q %d times, want once:\n%s", k, n, flat)
			continue
		}
		i := strings.Index(flat, k)
		if i < at {
			t.Errorf("the model's last request holds %q out of order:\n%s", k, flat)
		}
		at = i
	}
	for _, d := range discarded {
		if strings.Contains(flat, d) {
			t.Errorf("the model's last request holds the discarded %q:\n%s", d, flat)
		}
	}
}

func caseRegenerate(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s, q1, q2, r1, r2 := twoTurns(ctx, t, a, c, tag)
	a1, a2 := c.answer(q1, 1), c.answer(q2, 2)
	r3, f3 := convTurn(ctx, t, a, c, s, q2, turnOpts{replaceFrom: r2, transcript: slices.Clone(s.transcript[:2])})
	if r3 == r2 || r3 == r1 {
		t.Errorf("the regenerated turn is run %s, want a new run", r3)
	}
	a3 := a.answer(f3)
	if c.adkURL != "" {
		// The agent counts the user turns its session holds: the second
		// turn again (its session rewound), or the first of a fresh
		// session seeded with the kept turns; never a third.
		seeded := strings.HasPrefix(a3, "turn 1: ") && strings.HasSuffix(a3, q2) && strings.Contains(a3, q1) && strings.Contains(a3, a1)
		if a3 != a2 && !seeded {
			t.Errorf("answer %q, want %q, or the first turn of a session seeded with the kept one", a3, a2)
		}
	} else if a3 != a2 {
		t.Errorf("answer %q, want %q", a3, a2)
	}
	h := a.history(ctx, t, c, s)
	if !slices.Equal(h.runIDs(), []string{r1, r3}) {
		t.Errorf("history runs %v, want [%s %s] (%s discarded)", h.runIDs(), r1, r3, r2)
	}
	if got := h.texts(bridge.RoleUser); !slices.Equal(got, []string{q1, q2}) {
		t.Errorf("history user messages %q, want %q", got, []string{q1, q2})
	}
	if got, want := h.texts(bridge.RoleAssistant), []string{a1, a3}; !slices.Equal(got, want) {
		t.Errorf("history answers %q, want %q", got, want)
	}
	checkModelContext(t, c, tag, []string{"user: " + q1, "assistant: " + a1, q2}, []string{"assistant: " + a2})
}

func caseEdit(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s, _, _, r1, r2 := twoTurns(ctx, t, a, c, tag)
	q := sayPrompt("edited " + tag)
	r3, f3 := convTurn(ctx, t, a, c, s, q, turnOpts{replaceFrom: r1, transcript: []msg{}})
	if r3 == r2 || r3 == r1 {
		t.Errorf("the edited turn is run %s, want a new run", r3)
	}
	if got, want := a.answer(f3), c.answer(q, 1); got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	h := a.history(ctx, t, c, s)
	if !slices.Equal(h.runIDs(), []string{r3}) {
		t.Errorf("history runs %v, want [%s] (%s and %s discarded)", h.runIDs(), r3, r1, r2)
	}
	if got := h.texts(bridge.RoleUser); !slices.Equal(got, []string{q}) {
		t.Errorf("history user messages %q, want %q", got, []string{q})
	}
	checkModelContext(t, c, tag, []string{q}, []string{"first " + tag, "second " + tag})
}

func caseSteer(ctx context.Context, t *testing.T, a convAdapter, c *chain, tag string) {
	s := a.session(ctx, t, c, tag)
	prompt := sayPrompt(convSlowAnswer(tag, 60))
	st := a.start(ctx, t, c, s, prompt, turnOpts{})
	if !st.until(func(f []sseFrame) bool { return wordCount(a.answer(f)) >= 3 }) {
		t.Fatalf("the stream ended before its third word")
	}
	run := a.runOf(st)
	a.steer(ctx, t, c, s, run, convSteerText+" "+tag)
	frames := st.all(t)
	got := a.answer(frames)
	if !strings.HasPrefix(got, c.answer(prompt, 1)) || !strings.HasSuffix(got, convSteerAns) {
		t.Errorf("answer %q, want the first answer then %q", got, convSteerAns)
	}
	if r := waitRunState(ctx, t, c.front, run); r.Status != bridge.StatusCompleted {
		t.Errorf("run %s: %s (%s), want completed", run, r.Status, r.Reason)
	}
	if c.backMain != nil {
		oneUpstreamRun(ctx, t, c, tag, bridge.StatusCompleted) // the steer landed in the upstream's turn
	}
	if c.model != nil {
		reqs := c.model.requests(tag)
		if len(reqs) != 2 {
			t.Fatalf("the model got %d requests, want 2 (the turn, then its steer)", len(reqs))
		}
		msgs := reqs[1].req.messages
		if last := msgs[len(msgs)-1]; last.role != bridge.RoleUser || last.text != convSteerText+" "+tag {
			t.Errorf("the model's second request ends with %s %q, want the steer", last.role, last.text)
		}
	}
}

// ---- the table ---------------------------------------------------------------

// renderConventionsTable renders the table capability × adapter and the
// reasons of what does not hold, from the grid and the gaps.
func renderConventionsTable(adapters []convAdapter, ups []convUpstream, caps []convCapability) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	var reasons []string
	note := func(r string) int {
		if i := slices.Index(reasons, r); i >= 0 {
			return i + 1
		}
		reasons = append(reasons, r)
		return len(reasons)
	}
	p("| capability |")
	for _, a := range adapters {
		p(" %s |", a.name())
	}
	p("\n|---|")
	for range adapters {
		p("---|")
	}
	p("\n")
	for _, cp := range caps {
		p("| %s |", cp.title)
		for _, a := range adapters {
			var holds []string
			not := map[int][]string{} // reason number -> upstreams
			var order []int
			for _, u := range ups {
				g := gapOf(a.name(), u.name, cp.name)
				if g == nil {
					holds = append(holds, u.name)
					continue
				}
				n := note(g.reason)
				if _, ok := not[n]; !ok {
					order = append(order, n)
				}
				not[n] = append(not[n], u.name)
			}
			var cell []string
			switch {
			case len(holds) == len(ups):
				cell = append(cell, "holds")
			case len(holds) > 0:
				cell = append(cell, "holds over "+strings.Join(holds, ", "))
			}
			for _, n := range order {
				if len(not[n]) == len(ups) {
					cell = append(cell, fmt.Sprintf("not [%d]", n))
				} else {
					cell = append(cell, fmt.Sprintf("not over %s [%d]", strings.Join(not[n], ", "), n))
				}
			}
			p(" %s |", strings.Join(cell, "; "))
		}
		p("\n")
	}
	if len(reasons) > 0 {
		p("\nWhy not:\n\n")
	}
	for i, r := range reasons {
		p("%d. %s\n", i+1, r)
	}
	return b.Bytes()
}

// renderConventions renders docs/CONVENTIONS.md: the table, then what
// each capability checks, the upstreams and the adapters' requests.
func renderConventions(adapters []convAdapter, ups []convUpstream, caps []convCapability, table []byte) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Chatkit conventions: what holds\n\n")
	p("What each capability of the chatkit conventions (issue 14; shared/protocols/chatkit-conventions.md) does in each\n")
	p("chatkit adapter, over each upstream, as the conventions suite (`TestConventions`, cmd/bridge/conventions_test.go)\n")
	p("proves it. Every \"holds\" is a sub-test, `TestConventions/<adapter>/over-<upstream>/<capability>`, run by\n")
	p("`go test ./...`; every \"not\" is an entry of the suite's gaps table with its reason. This file and the README's\n")
	p("table are generated from the suite's tables and checked by `TestConventionsTable`; regenerate them with:\n\n")
	p("    go test ./cmd/bridge -run TestConventionsTable -args -update-conventions\n\n")
	p("and see which listed gaps now hold with `go test ./cmd/bridge -run TestConventions -args -conventions-all`.\n\n")
	b.Write(table)
	p("\n## Capabilities\n\n")
	for _, cp := range caps {
		p("- **%s** (`%s`): %s.\n", cp.title, cp.name, cp.desc)
	}
	p("\n## Upstreams\n\nEach adapter talks to a front `bridge serve`, configured with one upstream:\n\n")
	for _, u := range ups {
		p("- **%s**: %s.\n", u.name, u.about)
	}
	p("\n## Adapters\n\nEach adapter is a client shim that sends the requests chatkit's adapter sends:\n\n")
	for _, a := range adapters {
		p("- **%s**: %s.\n", a.name(), a.about())
	}
	return b.Bytes()
}
