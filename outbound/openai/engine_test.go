package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	outopenai "github.com/bridge-dev/bridge/outbound/openai"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/storage/memory"
)

func TestMintToolCallID(t *testing.T) {
	c := outopenai.New(outopenai.Config{})
	for _, id := range []string{"call_abc", "toolu_01A09q90qw90lq917835lq9", "adk-0f3c6f3e-8b1e-4c2a-9d8e-2f1c0a7b6d5e", strings.Repeat("x", 40)} {
		if got := c.MintToolCallID(id); got != id {
			t.Errorf("MintToolCallID(%q) = %q, want it kept", id, got)
		}
	}
	long := "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f"
	for _, id := range []string{"", long, strings.Repeat("x", 41)} {
		got := c.MintToolCallID(id)
		if got == "" || len(got) > outopenai.MaxToolCallID || !strings.HasPrefix(got, "call_") || got != c.MintToolCallID(id) {
			t.Errorf("MintToolCallID(%q) = %q", id, got)
		}
	}
	if c.MintToolCallID(long) == c.MintToolCallID(long+"y") {
		t.Error("two ids minted to one")
	}
}

// TestMintedToolCallIDs: a transcript whose tool-call id OpenAI would
// refuse (longer than 40 bytes, minted by another upstream) reaches the
// upstream with a minted id, in the assistant's tool_calls and the tool
// message alike.
func TestMintedToolCallIDs(t *testing.T) {
	srv := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-1", Model: "gpt-x"}
		return openaitest.Reply{Chunks: c.Role().Text("ok").Finish("stop").List()}
	})
	t.Cleanup(srv.Close)
	c := outopenai.New(outopenai.Config{BaseURL: srv.BaseURL()})
	store := memory.New(nil)
	e := bridgetest.NewEngine(t, store, c)
	const long = "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f"
	bridgetest.Run(t, e, &bridge.Request{Inbound: "test", Model: "m", Full: true, Messages: bridgetest.ToolTurn(long)})
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	var body struct {
		Messages []struct {
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || len(body.Messages) != 3 || len(body.Messages[1].ToolCalls) != 1 {
		t.Fatalf("upstream body %s (%v)", reqs[0].Body, err)
	}
	minted := c.MintToolCallID(long)
	if got, res := body.Messages[1].ToolCalls[0].ID, body.Messages[2].ToolCallID; got != minted || res != minted || minted == long {
		t.Errorf("tool_calls id %q, tool_call_id %q, want %q", got, res, minted)
	}
	if r, err := store.RemoteID(t.Context(), bridge.IDToolCall, c.Name(), long); err != nil || r != minted {
		t.Errorf("the store maps %s to %q (%v), want %q", long, r, err, minted)
	}
}
