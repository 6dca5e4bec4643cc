package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/google/go-cmp/cmp"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/golden"
)

// sdkStream reads an encoded stream with the official Go SDK's SSE reader
// and its message accumulator, as a client would.
func sdkStream(t *testing.T, sse []byte) (sdk.Message, error) {
	t.Helper()
	res := &http.Response{
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(sse)),
		Request: &http.Request{Method: http.MethodPost},
	}
	s := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	var msg sdk.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("the SDK accumulator rejected %s: %v", s.Current().RawJSON(), err)
		}
	}
	return msg, s.Err()
}

// sdkBlock is a content block as compared between the SDK and us.
type sdkBlock struct {
	Type, Text, Thinking, Signature, Data, ID, Name, Input string
}

func blocksOf(t *testing.T, content []sdk.ContentBlockUnion) []sdkBlock {
	var out []sdkBlock
	for _, c := range content {
		b := sdkBlock{Type: c.Type, Text: c.Text, Thinking: c.Thinking, Signature: c.Signature, Data: c.Data, ID: c.ID, Name: c.Name}
		if c.Type == "tool_use" {
			var v any
			if err := json.Unmarshal(c.Input, &v); err != nil {
				t.Errorf("tool_use input %s: %v", c.Input, err)
			}
			in, _ := json.Marshal(v)
			b.Input = string(in)
		}
		out = append(out, b)
	}
	return out
}

// TestSDKReadsEncodedStreams: every golden want.sse parses with the SDK;
// the message it accumulates matches what our Accumulator builds (blocks,
// stop reason, usage), and error events surface as SDK errors of the same
// type.
func TestSDKReadsEncodedStreams(t *testing.T) {
	golden.Run(t, func(t *testing.T, a *golden.Archive) {
		sse, _ := a.File("want.sse")
		jl, _ := a.File("events.jsonl")
		events := golden.ParseEvents(t, jl)
		got, err := sdkStream(t, sse)

		body, oerr := golden.Accumulate(NewAccumulator(goldenOptions), events)
		if oerr != nil {
			var ae *sdk.Error
			if !errors.As(err, &ae) {
				t.Fatalf("the SDK saw %v (%T); our Accumulator: %v", err, err, oerr)
			}
			_, eb := EncodeError(bridge.AsError(oerr))
			var env struct {
				Error struct{ Type, Message string }
			}
			_ = json.Unmarshal(eb, &env)
			if ae.Type() != sdkErrorType(env.Error.Type) {
				t.Errorf("SDK error type %q, ours %q", ae.Type(), env.Error.Type)
			}
			return
		}
		if err != nil {
			t.Fatalf("SDK: %v", err)
		}
		var want sdk.Message
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if a.Flag("continued") {
			// The SDK keeps the last message of a multi-turn replay; ours
			// holds every turn's blocks.
			return
		}
		if diff := cmp.Diff(blocksOf(t, want.Content), blocksOf(t, got.Content)); diff != "" {
			t.Errorf("content (-ours +SDK):\n%s", diff)
		}
		if got.StopReason != want.StopReason || got.ID != "msg_test" || got.Model != "claude-test" {
			t.Errorf("SDK stop_reason %q id %q model %q; ours %q", got.StopReason, got.ID, got.Model, want.StopReason)
		}
		if got.Usage.InputTokens != want.Usage.InputTokens || got.Usage.OutputTokens != want.Usage.OutputTokens ||
			got.Usage.CacheReadInputTokens != want.Usage.CacheReadInputTokens ||
			got.Usage.CacheCreationInputTokens != want.Usage.CacheCreationInputTokens {
			t.Errorf("usage: SDK %+v, ours %+v", got.Usage, want.Usage)
		}
	}, "stream_*.txtar")
}

func sdkErrorType(s string) sdk.ErrorType { return sdk.ErrorType(s) }

// TestSDKReadsEncodedRequests: the SDK's request type reads what
// EncodeRequest writes, with the same number of messages and tools.
func TestSDKReadsEncodedRequests(t *testing.T) {
	files, _ := filepath.Glob("testdata/request_*.txtar")
	for _, path := range files {
		a := golden.Read(t, path)
		out, ok := a.File("upstream.json")
		if !ok {
			continue
		}
		var p sdk.MessageNewParams
		if err := json.Unmarshal(out, &p); err != nil {
			t.Errorf("%s: the SDK cannot read upstream.json: %v", path, err)
			continue
		}
		var raw struct {
			Messages []json.RawMessage `json:"messages"`
			Tools    []json.RawMessage `json:"tools"`
		}
		_ = json.Unmarshal(out, &raw)
		if string(p.Model) == "" || p.MaxTokens == 0 || len(p.Messages) != len(raw.Messages) || len(p.Tools) != len(raw.Tools) {
			t.Errorf("%s: SDK read model %q, max_tokens %d, %d messages, %d tools", path, p.Model, p.MaxTokens, len(p.Messages), len(p.Tools))
		}
	}
}
