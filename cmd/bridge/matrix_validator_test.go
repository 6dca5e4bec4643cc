package main

// The Chat Completions stream validator must itself be able to fail: each
// case breaks one rule of the grammar in a stream that is otherwise valid.

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

// grammarChunk renders one chunk frame for the validator's tests.
func grammarChunk(seq int, choice string) string {
	return fmt.Sprintf("id: run_g:%d\ndata: {\"id\":\"chatcmpl-g\",\"object\":\"chat.completion.chunk\",\"created\":1760000000,"+
		"\"model\":\"matrix-model\",\"choices\":[%s],\"usage\":null}\n\n", seq, choice)
}

func grammarDelta(delta, finish string) string {
	return fmt.Sprintf(`{"index":0,"delta":{%s},"logprobs":null,"finish_reason":%s}`, delta, finish)
}

const grammarUsage = "id: run_g:9\ndata: {\"id\":\"chatcmpl-g\",\"object\":\"chat.completion.chunk\",\"created\":1760000000," +
	"\"model\":\"matrix-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}\n\n"

// grammarStream is a valid include_usage stream: role, text, two parallel
// tool calls, the finish chunk, the usage chunk, [DONE].
func grammarStream() []string {
	return []string{
		grammarChunk(2, grammarDelta(`"role":"assistant","content":""`, "null")),
		grammarChunk(3, grammarDelta(`"content":"Hi"`, "null")),
		grammarChunk(4, grammarDelta(`"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]`, "null")),
		grammarChunk(5, grammarDelta(`"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{"}}]`, "null")),
		grammarChunk(6, grammarDelta(`"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]`, "null")),
		grammarChunk(7, grammarDelta(`"tool_calls":[{"index":1,"function":{"arguments":"}"}}]`, "null")),
		// The final's two frames: the finish chunk its first (run:N.1), the
		// usage chunk its last (run:N).
		strings.Replace(grammarChunk(9, grammarDelta(``, `"tool_calls"`)), "id: run_g:9\n", "id: run_g:9.1\n", 1),
		grammarUsage,
		"data: [DONE]\n\n",
	}
}

// checkGrammar runs a stream grammar's check over the frames, joined and
// read back; a stream that does not read (it ends inside a frame) is one
// more problem.
func checkGrammar(frames []string, check func(*observation) []string) (*observation, []string) {
	fs, err := readFrames(bufio.NewReader(strings.NewReader(strings.Join(frames, ""))), 0)
	obs := &observation{frames: fs}
	problems := check(obs)
	if err != nil {
		problems = append(problems, err.Error())
	}
	return obs, problems
}

// expectProblem fails t unless one of the problems has want in it.
func expectProblem(t *testing.T, problems []string, want string) {
	t.Helper()
	for _, p := range problems {
		if strings.Contains(p, want) {
			return
		}
	}
	t.Errorf("the validator did not catch it (want a problem with %q); problems: %q", want, problems)
}

func grammarCheck(t *testing.T, frames []string, c streamCheck) (*observation, []string) {
	t.Helper()
	return checkGrammar(frames, func(obs *observation) []string { return checkChatStream(obs, c) })
}

var grammarOpts = streamCheck{runID: "run_g", model: matrixModel, includeUsage: true, complete: true}

func TestChatStreamGrammar(t *testing.T) {
	obs, problems := grammarCheck(t, grammarStream(), grammarOpts)
	if len(problems) > 0 {
		t.Fatalf("a valid stream was rejected: %q", problems)
	}
	eq(t, "text", obs.text, "Hi")
	eq(t, "finish", obs.finish, bridge.StopToolUse)
	expectCalls(t, "valid stream", obs.toolCalls, []toolCall{{0, "call_a", "f", "{}"}, {1, "call_b", "g", "{}"}})
	expectUsage(t, obs.usage, &usage{1, 2, 3})

	set := func(i int, s string) func([]string) []string {
		return func(f []string) []string { f[i] = s; return f }
	}
	cut := func(i int) func([]string) []string {
		return func(f []string) []string { return append(f[:i:i], f[i+1:]...) }
	}
	replace := func(i int, old, new string) func([]string) []string {
		return func(f []string) []string { f[i] = strings.Replace(f[i], old, new, 1); return f }
	}
	cases := []struct {
		name   string
		break_ func([]string) []string
		opts   func(streamCheck) streamCheck
		want   string // a word of the problem
	}{
		{name: "no id", break_: replace(1, "id: run_g:3\n", ""), want: "id lines"},
		{name: "two ids", break_: replace(1, "id: run_g:3\n", "id: run_g:3\nid: run_g:3\n"), want: "id lines"},
		{name: "another run's id", break_: replace(1, "run_g:3", "run_h:3"), want: "not an event id"},
		{name: "seq goes back", break_: replace(3, "run_g:5", "run_g:3"), want: "does not follow"},
		{name: "two data lines", break_: replace(1, "data: {", "data: {}\ndata: {"), want: "data lines"},
		{name: "an event line", break_: replace(1, "data: {", "event: chunk\ndata: {"), want: "other than id and data"},
		{name: "wrong object", break_: replace(1, "chat.completion.chunk", "chat.completion"), want: "object"},
		{name: "chunk id changes", break_: replace(1, "chatcmpl-g", "chatcmpl-x"), want: "earlier chunks"},
		{name: "created changes", break_: replace(1, "1760000000", "1760000001"), want: "created"},
		{name: "wrong model", break_: replace(1, "matrix-model", "other"), want: "model"},
		{name: "no role first", break_: set(0, grammarChunk(2, grammarDelta(`"content":"x"`, "null"))), want: "role"},
		{name: "role again", break_: replace(1, `"content":"Hi"`, `"role":"assistant","content":"Hi"`), want: "role"},
		{name: "empty content", break_: replace(1, `"content":"Hi"`, `"content":""`), want: "empty"},
		{name: "empty chunk", break_: replace(1, `"content":"Hi"`, ``), want: "empty chunk"},
		{name: "unknown delta field", break_: replace(1, `"content":"Hi"`, `"contents":"Hi"`), want: "unknown delta"},
		{name: "no finish_reason key", break_: replace(1, `,"finish_reason":null`, ``), want: "finish_reason"},
		{name: "two choices", break_: replace(1, `"choices":[{`, `"choices":[{"index":0,"delta":{"content":"y"},"finish_reason":null},{`), want: "choices"},
		{name: "tool id repeated", break_: replace(4, `{"index":0,"function"`, `{"index":0,"id":"call_a","function"`), want: "repeats"},
		{name: "tool name repeated", break_: replace(4, `"function":{"arguments"`, `"function":{"name":"f","arguments"`), want: "repeats"},
		{name: "empty arguments delta", break_: replace(4, `"arguments":"{}"`, `"arguments":""`), want: "empty arguments"},
		{name: "first tool delta without id", break_: replace(2, `"id":"call_a",`, ``), want: "lacks id"},
		{name: "index gap", break_: replace(3, `"index":1,"id"`, `"index":2,"id"`), want: "contiguous"},
		{name: "no finish", break_: cut(6), want: "finish"},
		{name: "two finishes", break_: replace(5, `"finish_reason":null`, `"finish_reason":"stop"`), want: "after the finish"},
		{name: "usage before finish", break_: func(f []string) []string { f[5], f[7] = f[7], f[5]; return f }, want: "before the finish"},
		{name: "usage not asked", opts: func(c streamCheck) streamCheck { c.includeUsage = false; return c }, want: "include_usage"},
		{name: "usage asked, none came", break_: cut(7), want: "no usage chunk"},
		{name: "usage not null", break_: replace(1, `"usage":null`, `"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`), want: "usage"},
		{name: "no [DONE]", break_: cut(8), want: "[DONE]"},
		{name: "after [DONE]", break_: func(f []string) []string {
			return append(f, grammarChunk(10, grammarDelta(`"content":"late"`, "null")))
		}, want: "after data: [DONE]"},
		{name: "[DONE] with an id", break_: set(8, "id: run_g:10\ndata: [DONE]\n\n"), want: "[DONE] carries an id"},
		{name: "cut mid-frame", break_: set(8, "data: [DO"), want: "inside an SSE frame"},
		{name: "blank frame", break_: func(f []string) []string { f[1] = "\n" + f[1]; return f }, want: "data lines"},
		{name: "error frame after finish", break_: func(f []string) []string {
			return append(f[:7:7], "id: run_g:10\ndata: {\"error\":{\"message\":\"m\",\"type\":\"t\",\"param\":null,\"code\":null}}\n\n", "data: [DONE]\n\n")
		}, want: "error frame after the finish"},
		{name: "error object without code", break_: func(f []string) []string {
			return append(f[:6:6], "id: run_g:10\ndata: {\"error\":{\"message\":\"m\",\"type\":\"t\",\"param\":null}}\n\n", "data: [DONE]\n\n")
		}, want: `"code"`},
		{name: "chunk after error frame", break_: func(f []string) []string {
			return append(f[:2:2], "id: run_g:10\ndata: {\"error\":{\"message\":\"m\",\"type\":\"t\",\"param\":null,\"code\":null}}\n\n",
				grammarChunk(11, grammarDelta(`"content":"late"`, "null")), "data: [DONE]\n\n")
		}, want: "after the error frame"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			frames := grammarStream()
			if c.break_ != nil {
				frames = c.break_(frames)
			}
			opts := grammarOpts
			if c.opts != nil {
				opts = c.opts(opts)
			}
			_, problems := grammarCheck(t, frames, opts)
			expectProblem(t, problems, c.want)
		})
	}

	// An error frame instead of the finish is a complete stream.
	errStream := append(grammarStream()[:2:2],
		"id: run_g:5\ndata: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n", "data: [DONE]\n\n")
	obs, problems = grammarCheck(t, errStream, grammarOpts)
	if len(problems) > 0 || !obs.errFrame || obs.err.message != "boom" || !obs.err.codeNull {
		t.Errorf("a stream ended by an error frame: problems %q, error %v", problems, obs.err)
	}
	// A dropped stream is checked as a prefix.
	_, problems = grammarCheck(t, grammarStream()[:3], streamCheck{runID: "run_g", model: matrixModel, includeUsage: true})
	if len(problems) > 0 {
		t.Errorf("a valid prefix was rejected: %q", problems)
	}
}
