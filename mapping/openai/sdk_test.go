package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// sdkStream reads an encoded stream with the official Go SDK's SSE reader
// and its chunk accumulator, as a client would.
func sdkStream(t *testing.T, sse []byte) (sdk.ChatCompletionAccumulator, error) {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(sse)),
	}
	s := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var acc sdk.ChatCompletionAccumulator
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			t.Fatalf("the SDK accumulator rejected chunk %s", s.Current().RawJSON())
		}
	}
	return acc, s.Err()
}

// TestSDKReadsEncodedStreams: every golden want.sse parses with the SDK;
// the accumulated message matches what our Accumulator builds, and error
// frames surface as SDK errors.
func TestSDKReadsEncodedStreams(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		sse, _ := a.File("want.sse")
		jl, _ := a.File("events.jsonl")
		events := golden.ParseEvents(t, jl)
		acc, err := sdkStream(t, sse)

		body, oerr := golden.Accumulate(NewAccumulator(goldenOptions), events)
		if oerr != nil {
			if err == nil {
				t.Fatalf("the SDK saw no error; our Accumulator: %v", oerr)
			}
			return
		}
		if err != nil {
			t.Fatalf("SDK: %v", err)
		}
		var want sdk.ChatCompletion
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 {
			t.Fatalf("SDK saw %d choices", len(acc.Choices))
		}
		got, w := acc.Choices[0], want.Choices[0]
		if got.Message.Content != w.Message.Content || got.Message.Refusal != w.Message.Refusal || got.FinishReason != w.FinishReason {
			t.Errorf("SDK message %q/%q/%s, ours %q/%q/%s", got.Message.Content, got.Message.Refusal, got.FinishReason,
				w.Message.Content, w.Message.Refusal, w.FinishReason)
		}
		if len(got.Message.ToolCalls) != len(w.Message.ToolCalls) {
			t.Fatalf("SDK tool calls %d, ours %d", len(got.Message.ToolCalls), len(w.Message.ToolCalls))
		}
		for i := range got.Message.ToolCalls {
			g, o := got.Message.ToolCalls[i], w.Message.ToolCalls[i]
			if g.ID != o.ID || g.Function.Name != o.Function.Name || g.Function.Arguments != o.Function.Arguments {
				t.Errorf("tool call %d: SDK %+v, ours %+v", i, g.Function, o.Function)
			}
		}
		if acc.Usage.TotalTokens != want.Usage.TotalTokens || acc.Usage.PromptTokens != want.Usage.PromptTokens {
			t.Errorf("usage: SDK %+v, ours %+v", acc.Usage, want.Usage)
		}
		if acc.ID != "chatcmpl-test" || acc.Model != "gpt-test" {
			t.Errorf("id/model %q %q", acc.ID, acc.Model)
		}
	}, "stream_*.txtar")
}

// TestSDKReadsEncodedRequests: the SDK's request type reads what
// EncodeRequest writes.
func TestSDKReadsEncodedRequests(t *testing.T) {
	var reqs []*bridge.Request
	for _, body := range golden.InOrder(corpusBodies(t)) {
		r, err := DecodeRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	files, _ := filepath.Glob("testdata/request_*.txtar")
	for _, path := range files {
		a := golden.Read(t, path)
		if b, ok := a.File("request.json"); ok {
			r, err := DecodeRequest(b)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, r)
		}
	}
	for _, r := range reqs {
		body, _, err := EncodeRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		var p sdk.ChatCompletionNewParams
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("SDK cannot read %s: %v", body, err)
			continue
		}
		if p.Model != r.Model || len(p.Messages) != len(r.Messages) || len(p.Tools) != len(r.Tools) {
			t.Errorf("SDK read model %q, %d messages, %d tools from %s", p.Model, len(p.Messages), len(p.Tools), body)
		}
		if !p.StreamOptions.IncludeUsage.Value {
			t.Errorf("SDK read no include_usage from %s", body)
		}
	}
}
