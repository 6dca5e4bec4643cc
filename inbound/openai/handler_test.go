package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/inbound"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/storage/memory"
)

// serve runs the Chat Completions handler and the run API over up.
func serve(t *testing.T, up bridge.Upstream) string {
	t.Helper()
	store := memory.New(nil)
	e, err := bridge.New(bridge.Config{Store: store, Route: func(string) (bridge.Upstream, error) { return up, nil }})
	if err != nil {
		t.Fatal(err)
	}
	h := inopenai.New(inopenai.Config{Engine: e})
	ra := runs.New(runs.Config{Engine: e, Default: h, Dialects: map[string]inbound.Dialect{"openai": h}})
	mux := http.NewServeMux()
	for _, p := range h.Routes() {
		mux.Handle(p, h)
	}
	for _, p := range ra.Routes() {
		mux.Handle(p, ra)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Close(ctx)
		store.Close()
	})
	return srv.URL
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
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"q"}]}`))
	req.Header.Set("X-Session-Id", "s-dropped")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"reasoning_content":"hmm"`) || !strings.Contains(string(body), `"content":"answer"`) {
		t.Errorf("stream lost what it can carry:\n%s", body)
	}
	trailer := resp.Trailer.Get(inbound.DroppedHeader)
	for _, want := range []string{"reasoning.signature", "artifact"} {
		if !strings.Contains(trailer, want) {
			t.Errorf("trailer %q does not name %s", trailer, want)
		}
	}
	hr, err := http.Get(base + "/v1/sessions/s-dropped/history")
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Body.Close()
	var h struct {
		Runs []struct {
			Dropped []string `json:"dropped"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(hr.Body).Decode(&h); err != nil || len(h.Runs) != 1 {
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
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"q"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 502 || !strings.Contains(string(b), "without a final") {
		t.Errorf("got %d %s, want a 502 error", resp.StatusCode, b)
	}
}
