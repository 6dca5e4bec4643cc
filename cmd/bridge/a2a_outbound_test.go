package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
)

// a2aUpstreamBridge starts a bridge whose upstream is the A2A agent at url.
func a2aUpstreamBridge(t *testing.T, url, profile string) string {
	t.Helper()
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "a2a", URL: url, Profile: profile}}
	return "http://" + startMain(t, cfg).Addr()
}

func oaClient(base string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(base + "/v1"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0)}, opts...)...)
}

// streamText streams a completion and returns its text and the response.
func streamText(t *testing.T, ctx context.Context, c openai.Client, msgs []openai.ChatCompletionMessageParamUnion) (string, *http.Response) {
	t.Helper()
	var resp *http.Response
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "agent", Messages: msgs}, option.WithResponseInto(&resp))
	var b strings.Builder
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			b.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return b.String(), resp
}

// TestOpenAIOverA2A: the openai-go client against an a2a-go server
// (a2asrv) as the upstream: streamed text; a second turn that sends only
// the new message into the same upstream context; an edited history that
// opens a new context with the earlier turns inlined, and says so.
func TestOpenAIOverA2A(t *testing.T) {
	agent := a2atest.New(func(n int, m *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: []string{"answer ", "number ", string(rune('A' + n))}}
	})
	t.Cleanup(agent.Close)
	base := a2aUpstreamBridge(t, agent.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()
	c := oaClient(base)

	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")}
	first, _ := streamText(t, ctx, c, msgs)
	if first != "answer number A" {
		t.Fatalf("first answer %q", first)
	}
	msgs = append(msgs, openai.AssistantMessage(first), openai.UserMessage("and more"))
	second, resp := streamText(t, ctx, c, msgs)
	if second != "answer number B" {
		t.Fatalf("second answer %q", second)
	}
	got := agent.Received()
	if len(got) != 2 {
		t.Fatalf("the agent got %d messages", len(got))
	}
	if !strings.Contains(got[0].Text, "be brief") || !strings.Contains(got[0].Text, "hello") {
		t.Errorf("first message %q lacks the system text and the question", got[0].Text)
	}
	if got[1].Text != "and more" || got[1].ContextID != got[0].ContextID || got[1].ContextID == "" {
		t.Errorf("second message %q in context %q, want only %q in %q", got[1].Text, got[1].ContextID, "and more", got[0].ContextID)
	}
	if d := resp.Header.Get("X-Bridge-Dropped") + resp.Trailer.Get("X-Bridge-Dropped"); strings.Contains(d, "history") {
		t.Errorf("a continued context says %q", d)
	}

	// An edited history: a new context, carrying the earlier turns.
	edited := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello EDITED"),
		openai.AssistantMessage(first), openai.UserMessage("again")}
	// Not streamed, so the header says it (a stream says it in a trailer,
	// which an SDK stopping at [DONE] does not read).
	var hresp *http.Response
	done, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "agent", Messages: edited}, option.WithResponseInto(&hresp))
	if err != nil {
		t.Fatal(err)
	}
	if third := done.Choices[0].Message.Content; third != "answer number C" {
		t.Fatalf("third answer %q", third)
	}
	resp = hresp
	got = agent.Received()
	if got[2].ContextID == got[0].ContextID || !strings.Contains(got[2].Text, "hello EDITED") || !strings.Contains(got[2].Text, "again") {
		t.Errorf("edited history: message %q in context %q (first context %q)", got[2].Text, got[2].ContextID, got[0].ContextID)
	}
	if d := resp.Header.Get("X-Bridge-Dropped") + resp.Trailer.Get("X-Bridge-Dropped"); !strings.Contains(d, "history_inlined") {
		t.Errorf("X-Bridge-Dropped %q does not say the history was inlined into a new context", d)
	}
}

// TestOpenAIOverA2ACancel: cancelling the run (the run API) sends
// tasks/cancel to the agent, whose execution stops; a stateless client that
// drops its stream cancels the agent's task too.
func TestOpenAIOverA2ACancel(t *testing.T) {
	agent := a2atest.New(func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: words("c", 200), Delay: 20 * time.Millisecond}
	})
	t.Cleanup(agent.Close)
	base := a2aUpstreamBridge(t, agent.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), a2aTimeout)
	defer cancel()

	c := oaClient(base, option.WithHeader("X-Session-Id", "cancel-1"))
	var resp *http.Response
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")}}, option.WithResponseInto(&resp))
	var text strings.Builder
	n := 0
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		if n++; n == 4 {
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/runs/"+resp.Header.Get("X-Run-Id")+"/cancel", nil)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
		}
	}
	_ = s.Close()
	waitUntil(t, "the agent's task to be canceled", func() bool { return agent.Cancels() == 1 })
	if len(text.String()) >= len(strings.Join(words("c", 200), "")) {
		t.Errorf("the whole answer came despite the cancel")
	}
	run := runOf(t, base, resp.Header.Get("X-Run-Id"))
	if run.Status != bridge.StatusCancelled {
		t.Errorf("run %s, want cancelled", run.Status)
	}

	// A stateless client that leaves.
	sctx, drop := context.WithCancel(ctx)
	plain := oaClient(base)
	s = plain.Chat.Completions.NewStreaming(sctx, openai.ChatCompletionNewParams{Model: "agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go again")}})
	for i := 0; i < 3 && s.Next(); i++ {
	}
	drop()
	_ = s.Close()
	waitUntil(t, "the agent's second task to be canceled", func() bool { return agent.Cancels() == 2 })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runOf(t *testing.T, base, id string) *bridge.Run {
	t.Helper()
	var run bridge.Run
	waitUntil(t, "run "+id+" to end", func() bool {
		r, err := http.Get(base + "/v1/runs/" + id)
		if err != nil {
			return false
		}
		defer r.Body.Close()
		run = bridge.Run{}
		_ = jsonDecode(r, &run)
		return run.Status != "" && run.Status != bridge.StatusRunning
	})
	return &run
}
