package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/inbound"
	"github.com/bridge-dev/bridge/inbound/inboundtest"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/storage/memory"
)

// serve runs the Chat Completions handler and the run API over up.
func serve(t *testing.T, up bridge.Upstream) string {
	t.Helper()
	e := bridgetest.NewEngine(t, memory.New(nil), up)
	h := inopenai.New(inopenai.Config{Engine: e})
	return inboundtest.Serve(t, h, inboundtest.RunAPI(e, h, runs.Config{}))
}

// TestDroppedIsSaid: what the Chat Completions stream cannot carry (an
// agent's artifact, a reasoning signature) is named in the X-Bridge-Dropped
// trailer, kept on the run, and shown in the history.
func TestDroppedIsSaid(t *testing.T) {
	evs := []bridge.Event{
		{Kind: bridge.KindMessageStarted},
		{Kind: bridge.KindReasoningDelta, Text: "hmm", Signature: "sig-1"},
		{Kind: bridge.KindTextDelta, Text: "answer"},
		{Kind: bridge.KindArtifact, Artifact: &bridge.Artifact{ID: "a1", Parts: []bridge.Part{bridge.TextPart("file")}}},
		{Kind: bridge.KindMessageDone},
		{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn}},
	}
	base := serve(t, &bridgetest.Upstream{Events: evs})
	resp, body := inboundtest.Do(t, "POST", base+"/v1/chat/completions",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"q"}]}`, "X-Session-Id", "s-dropped")
	if !strings.Contains(string(body), `"reasoning_content":"hmm"`) || !strings.Contains(string(body), `"content":"answer"`) {
		t.Errorf("stream lost what it can carry:\n%s", body)
	}
	trailer := resp.Trailer.Get(inbound.DroppedHeader)
	for _, want := range []string{"reasoning.signature", "artifact"} {
		if !strings.Contains(trailer, want) {
			t.Errorf("trailer %q does not name %s", trailer, want)
		}
	}
	_, hist := inboundtest.Do(t, "GET", base+"/v1/sessions/s-dropped/history", "")
	var h struct {
		Runs []struct {
			Dropped []string `json:"dropped"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(hist, &h); err != nil || len(h.Runs) != 1 {
		t.Fatalf("history: %v %+v", err, h)
	}
	if got := strings.Join(h.Runs[0].Dropped, ","); !strings.Contains(got, "artifact") || !strings.Contains(got, "reasoning.signature") {
		t.Errorf("history's run dropped = %q", got)
	}
}

// TestStreamWithoutFinalIsAnError: an upstream stream that ends without a
// stop reason fails the run (a 502 here); it is never passed off as "stop".
func TestStreamWithoutFinalIsAnError(t *testing.T) {
	evs := bridgetest.TextEvents("x")
	base := serve(t, &bridgetest.Upstream{Events: evs[:len(evs)-1]}) // no final: the stream just ends
	resp, b := inboundtest.Do(t, "POST", base+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
	if resp.StatusCode != 502 || !strings.Contains(string(b), "without a final") {
		t.Errorf("got %d %s, want a 502 error", resp.StatusCode, b)
	}
}
