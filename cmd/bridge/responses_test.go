package main

// The Responses dialect end to end: the official openai-go client's
// Responses API against a bridge serving an OpenAI (Chat Completions)
// upstream and echo; Chat clients over a Responses upstream; every request
// of the captured official SDK served. Every stream the SDK reads goes
// through the Responses stream validator too.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// sdkTap keeps every response body the SDK reads, one entry a request.
type sdkTap struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
	heads  []http.Header
}

func (tp *sdkTap) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err != nil {
		return resp, err
	}
	b := &bytes.Buffer{}
	tp.mu.Lock()
	tp.bodies = append(tp.bodies, b)
	tp.heads = append(tp.heads, resp.Header.Clone())
	tp.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, (*tapWriter)(&tapBuf{tp: tp, b: b})), resp.Body}
	return resp, err
}

type tapBuf struct {
	tp *sdkTap
	b  *bytes.Buffer
}

type tapWriter tapBuf

func (w *tapWriter) Write(p []byte) (int, error) {
	w.tp.mu.Lock()
	defer w.tp.mu.Unlock()
	return w.b.Write(p)
}

// last returns the body and headers of the n-th last response read.
func (tp *sdkTap) last(n int) ([]byte, http.Header) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	i := len(tp.bodies) - n
	return bytes.Clone(tp.bodies[i].Bytes()), tp.heads[i]
}

// checkTappedStream validates the last stream the SDK read.
func checkTappedStream(t *testing.T, tp *sdkTap, c responsestest.Check) *responsestest.Summary {
	t.Helper()
	body, head := tp.last(1)
	if c.RunID == "" {
		c.RunID = head.Get("X-Run-Id")
	}
	frames, err := responsestest.ParseFrames(body)
	if err != nil {
		t.Errorf("stream: %v", err)
	}
	sum, problems := responsestest.CheckStream(frames, c)
	for _, p := range problems {
		t.Errorf("Responses stream: %s", p)
	}
	return sum
}

func sdkResponses(t *testing.T, m *Main, tp *sdkTap) openai.Client {
	t.Helper()
	opts := []option.RequestOption{option.WithBaseURL("http://" + m.Addr() + "/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0)}
	if tp != nil {
		opts = append(opts, option.WithMiddleware(tp.middleware))
	}
	return openai.NewClient(opts...)
}

// chatUpstream is an openaitest upstream that answers by the last user
// message: text words, or a weather call.
func chatUpstream(t *testing.T, delay time.Duration) *openaitest.Server {
	t.Helper()
	up := openaitest.New(func(n int, body []byte) openaitest.Reply {
		last := lastUserText(body)
		c := &openaitest.Chunks{ID: fmt.Sprintf("chatcmpl-%d", n), Model: "gpt-4o-mini"}
		c.Role()
		switch {
		case strings.Contains(body2str(body), `"role":"tool"`):
			c.Text(openaitest.Words("It is 21 °C and clear in Paris.")...).Finish("stop")
		case strings.Contains(last, "weather"):
			c.ToolCall(0, "call_weather_1", "get_weather", `{"city":`, `"Paris"}`).Finish("tool_calls")
		default:
			c.Text(openaitest.Words("You said: " + last)...).Finish("stop")
		}
		return openaitest.Reply{Chunks: c.Usage(11, 7).List(), Delay: delay}
	})
	t.Cleanup(up.Close)
	return up
}

func body2str(b []byte) string { return string(b) }

// functionCallOutput is a function_call_output input item.
func functionCallOutput(callID, output string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	it.OfFunctionCallOutput.CallID = openai.String(callID)
	return it
}

func bridgeOver(t *testing.T, dialect, url string) *Main {
	t.Helper()
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: dialect, URL: url}}
	return startMain(t, cfg)
}

func TestResponsesSDKStream(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	tp := &sdkTap{}
	cl := sdkResponses(t, m, tp)
	s := cl.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
		Model:        "gpt-4o-mini",
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there")},
		Instructions: openai.String("Be terse."),
	})
	var text strings.Builder
	var final responses.Response
	var n int64
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber != n {
			t.Errorf("event %d (%s) has sequence_number %d", n, ev.Type, ev.SequenceNumber)
		}
		n++
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "You said: hello there" || final.Status != "completed" || final.OutputText() != text.String() {
		t.Errorf("text %q, final %s %q", text.String(), final.Status, final.OutputText())
	}
	if final.Usage.InputTokens != 11 || final.Usage.OutputTokens != 7 || final.Usage.TotalTokens != 18 {
		t.Errorf("usage %+v", final.Usage)
	}
	sum := checkTappedStream(t, tp, responsestest.Check{Complete: true, Model: "gpt-4o-mini"})
	if sum.Text != text.String() {
		t.Errorf("the stream says %q", sum.Text)
	}
	// The instructions went first, as a system message.
	var sent struct {
		Messages []struct{ Role string } `json:"messages"`
	}
	_ = json.Unmarshal(up.Requests()[0].Body, &sent)
	if len(sent.Messages) != 2 || sent.Messages[0].Role != "system" {
		t.Errorf("upstream request %s", up.Requests()[0].Body)
	}
}

func TestResponsesSDKFunctionCallRoundTrip(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	tp := &sdkTap{}
	cl := sdkResponses(t, m, tp)
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: "get_weather", Description: openai.String("Get the weather"), Strict: openai.Bool(false),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}}}
	s := cl.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
		Model: "gpt-4o-mini", Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
	})
	var first responses.Response
	var args strings.Builder
	for s.Next() {
		switch ev := s.Current(); ev.Type {
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.completed":
			first = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	sum := checkTappedStream(t, tp, responsestest.Check{Complete: true})
	if len(first.Output) != 1 || first.Output[0].Type != "function_call" || first.Output[0].CallID != "call_weather_1" ||
		first.Output[0].Arguments.OfString != `{"city":"Paris"}` || args.String() != `{"city":"Paris"}` {
		t.Fatalf("first output %+v (arguments streamed %q)", first.Output, args.String())
	}
	if len(sum.Calls) != 1 || sum.Calls[0].Args != `{"city":"Paris"}` {
		t.Errorf("the stream's calls %v", sum.Calls)
	}
	second, err := cl.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: "gpt-4o-mini", Tools: tools, PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			functionCallOutput("call_weather_1", `{"temp_c":21,"sky":"clear"}`),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "It is 21 °C and clear in Paris." || second.PreviousResponseID != first.ID {
		t.Errorf("second %q (previous %q)", second.OutputText(), second.PreviousResponseID)
	}
	_, head := tp.last(1)
	_, head1 := tp.last(2)
	if head.Get("X-Run-Id") != head1.Get("X-Run-Id") {
		t.Errorf("the tool output started run %s, want run %s continued", head.Get("X-Run-Id"), head1.Get("X-Run-Id"))
	}
	got := parseUpstreamRequest(t, up.Requests()[1].Body).messages
	want := []msg{
		userMsg("What is the weather in Paris?"),
		{role: "assistant", toolCalls: []toolCall{{index: 0, id: "call_weather_1", name: "get_weather", args: `{"city":"Paris"}`}}},
		{role: "tool", text: `{"temp_c":21,"sky":"clear"}`, toolCallID: "call_weather_1"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("upstream transcript\n  got  %+v\n  want %+v", got, want)
	}
}

func TestResponsesSDKPreviousResponseID(t *testing.T) {
	for _, dialect := range []string{"openai", "echo"} {
		t.Run(dialect, func(t *testing.T) {
			var m *Main
			var up *openaitest.Server
			if dialect == "echo" {
				m = startMain(t, defaultConfig())
			} else {
				up = chatUpstream(t, 0)
				m = bridgeOver(t, "openai", up.BaseURL())
			}
			cl := sdkResponses(t, m, nil)
			first, err := cl.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Alice.")}})
			if err != nil {
				t.Fatal(err)
			}
			second, err := cl.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini",
				PreviousResponseID: openai.String(first.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")}})
			if err != nil {
				t.Fatal(err)
			}
			if second.Status != "completed" || second.PreviousResponseID != first.ID || second.OutputText() == "" {
				t.Errorf("second %+v", second)
			}
			if up != nil {
				got := parseUpstreamRequest(t, up.Requests()[1].Body).messages
				want := []msg{userMsg("My name is Alice."), {role: "assistant", text: first.OutputText()}, userMsg("What is my name?")}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("the upstream did not get the whole transcript:\n  got  %+v\n  want %+v", got, want)
				}
			}
			// An unknown previous response is a 404 in OpenAI's shape.
			_, err = cl.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini",
				PreviousResponseID: openai.String("resp_nope"),
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != "previous_response_not_found" || ae.Param != "previous_response_id" {
				t.Errorf("unknown previous response: %v", err)
			}
		})
	}
}

func TestResponsesSDKStoredResponses(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	cl := sdkResponses(t, m, nil)
	r, err := cl.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("first line", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("second line", responses.EasyInputMessageRoleUser),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.OutputText() != r.OutputText() || got.Status != "completed" || got.Output[0].ID != r.Output[0].ID {
		t.Errorf("GET %+v, created %+v", got, r)
	}
	items, err := cl.Responses.InputItems.List(t.Context(), r.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Data) != 2 || items.Data[0].Type != "message" || items.HasMore ||
		len(items.Data[0].AsMessage().Content) != 1 || items.Data[0].AsMessage().Content[0].Text != "first line" || items.Data[0].ID == "" {
		t.Errorf("input items %+v", items.Data)
	}
	if err := cl.Responses.Delete(t.Context(), r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Errorf("GET after DELETE: %v", err)
	}
}

func TestResponsesSDKBackgroundResume(t *testing.T) {
	up := chatUpstream(t, 15*time.Millisecond)
	m := bridgeOver(t, "openai", up.BaseURL())
	cl := sdkResponses(t, m, nil)
	long := slowText("word", 30)
	ctx, cancel := context.WithCancel(t.Context())
	s := cl.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(long)}})
	var head strings.Builder
	var id string
	var last int64
	for i := 0; i < 8 && s.Next(); i++ {
		ev := s.Current()
		if ev.Type == "response.created" {
			id = ev.Response.ID
			if ev.Response.Status != "queued" || !ev.Response.Background {
				t.Errorf("a background response is created %s, background %v", ev.Response.Status, ev.Response.Background)
			}
		}
		if ev.Type == "response.output_text.delta" {
			head.WriteString(ev.Delta)
		}
		last = ev.SequenceNumber
	}
	cancel() // the client goes away
	_ = s.Close()
	if id == "" {
		t.Fatal("no response.created")
	}
	rest := cl.Responses.GetStreaming(t.Context(), id, responses.ResponseGetParams{StartingAfter: openai.Int(last)})
	var tail strings.Builder
	next := last + 1
	var final responses.Response
	for rest.Next() {
		ev := rest.Current()
		if ev.SequenceNumber != next {
			t.Errorf("resumed event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, next)
		}
		next = ev.SequenceNumber + 1
		if ev.Type == "response.output_text.delta" {
			tail.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := rest.Err(); err != nil {
		t.Fatal(err)
	}
	want := "You said: " + long
	if head.String()+tail.String() != want || final.OutputText() != want {
		t.Errorf("read %q + resumed %q; final %q", head.String(), tail.String(), final.OutputText())
	}
	got, err := cl.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	if err != nil || got.Status != "completed" {
		t.Errorf("GET after the resume: %v %+v", err, got)
	}
}

func TestResponsesSDKCancel(t *testing.T) {
	up := chatUpstream(t, 20*time.Millisecond)
	m := bridgeOver(t, "openai", up.BaseURL())
	cl := sdkResponses(t, m, nil)
	r, err := cl.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(slowText("w", 100))}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "queued" {
		t.Errorf("status %s", r.Status)
	}
	// Cancel while the upstream is answering (a cancel before the call is
	// made never reaches the upstream at all, which is right but tests less).
	waitFor(t.Context(), t, "the upstream call", func() bool { return len(up.Requests()) == 1 })
	c, err := cl.Responses.Cancel(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != "cancelled" {
		t.Errorf("after cancel: %s", c.Status)
	}
	got, err := cl.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	if err != nil || got.Status != "cancelled" {
		t.Errorf("GET after cancel: %v %+v", err, got.Status)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("%d upstream calls, want the one that was cancelled", n)
	}
}

// TestResponsesCorpus serves every request the official SDK was captured
// sending, through the bridge to an OpenAI upstream (previous_response_id
// naming a response made first).
func TestResponsesCorpus(t *testing.T) {
	up := chatUpstream(t, 0)
	m := bridgeOver(t, "openai", up.BaseURL())
	base := "http://" + m.Addr()
	bodies := corpusBodies(t, "openai-responses/client")
	post := func(t *testing.T, body []byte) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Post(base+"/v1/responses", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	_, seed := post(t, []byte(`{"model":"gpt-4o-mini","input":"It is sunny today."}`))
	var prev struct{ ID string }
	_ = json.Unmarshal(seed, &prev)
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			body = bytes.ReplaceAll(body, []byte(`"resp_rec"`), []byte(`"`+prev.ID+`"`))
			resp, b := post(t, body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if strings.Contains(string(body), `"stream":true`) {
				frames, err := responsestest.ParseFrames(b)
				if err != nil {
					t.Fatal(err)
				}
				sum, problems := responsestest.CheckStream(frames, responsestest.Check{RunID: resp.Header.Get("X-Run-Id"), Complete: true})
				for _, p := range problems {
					t.Errorf("stream: %s", p)
				}
				if sum.Status != "completed" || sum.Text == "" {
					t.Errorf("stream says %+v", sum)
				}
				return
			}
			sum, problems := responsestest.CheckResponse(b)
			for _, p := range problems {
				t.Errorf("response: %s", p)
			}
			if sum.Status != "completed" || sum.Text == "" {
				t.Errorf("response %s", b)
			}
		})
	}
}

// TestChatOverResponsesUpstream: Chat Completions clients (the official
// SDK) over a Responses upstream: streamed text, and a tool call round
// trip whose second request sends the call and its output as items.
func TestChatOverResponsesUpstream(t *testing.T) {
	up := responsestest.New(func(n int, body []byte) responsestest.Reply {
		e := &responsestest.Events{ID: fmt.Sprintf("resp_up_%d", n), Model: "gpt-4o-mini"}
		e.Created()
		switch {
		case strings.Contains(string(body), `"function_call_output"`):
			e.Text("It is ", "sunny.").Completed(30, 4)
		case strings.Contains(string(body), "weather"):
			e.FunctionCall("call_w", "get_weather", `{"city"`, `:"Paris"}`).Completed(20, 9)
		default:
			e.Text("Hi", " there.").Completed(5, 3)
		}
		return responsestest.Reply{Events: e.List()}
	})
	t.Cleanup(up.Close)
	m := bridgeOver(t, "responses", up.BaseURL())
	cl := openai.NewClient(option.WithBaseURL("http://"+m.Addr()+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	s := cl.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "Hi there." || acc.Usage.PromptTokens != 5 || acc.Usage.CompletionTokens != 3 {
		t.Errorf("chat answer %q usage %+v", acc.Choices[0].Message.Content, acc.Usage)
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather?")}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object"}})}
	first, err := cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	tc := first.Choices[0].Message.ToolCalls
	if first.Choices[0].FinishReason != "tool_calls" || len(tc) != 1 || tc[0].ID != "call_w" || tc[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("first %+v", first.Choices[0])
	}
	msgs = append(msgs, first.Choices[0].Message.ToParam(), openai.ToolMessage("sunny", "call_w"))
	second, err := cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if second.Choices[0].Message.Content != "It is sunny." {
		t.Errorf("second %q", second.Choices[0].Message.Content)
	}
	var sent struct {
		Store bool              `json:"store"`
		Input []json.RawMessage `json:"input"`
		Tools []struct {
			Strict *bool `json:"strict"`
		} `json:"tools"`
	}
	reqs := up.Requests()
	if err := json.Unmarshal(reqs[2].Body, &sent); err != nil {
		t.Fatal(err)
	}
	var ins []string
	for _, it := range sent.Input {
		ins = append(ins, string(it))
	}
	in := strings.Join(ins, ",")
	if sent.Store || len(sent.Input) != 3 || !strings.Contains(in, `"type":"function_call","call_id":"call_w"`) ||
		!strings.Contains(in, `"type":"function_call_output","call_id":"call_w","output":"sunny"`) {
		t.Errorf("upstream request %s", reqs[2].Body)
	}
	if len(sent.Tools) != 1 || sent.Tools[0].Strict == nil || *sent.Tools[0].Strict {
		t.Errorf("a Chat tool goes with strict: false: %s", reqs[2].Body)
	}
}
