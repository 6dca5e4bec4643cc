package main

// The A2A stream validator must itself be able to fail: each case breaks
// one rule of the grammar in a stream that is otherwise valid.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

func a2aGrammarFrame(seq int, result string) string {
	return fmt.Sprintf("id: run_g:%d\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"matrix\",\"result\":%s}\n\n", seq, result)
}

const a2aGrammarHead = `"taskId":"run_g","contextId":"ctx_g"`

// a2aGrammarStream is a valid stream: the task, working, a thought, two
// chunks, the closing chunk, completed with usage.
func a2aGrammarStream() []string {
	return []string{
		a2aGrammarFrame(1, `{"kind":"task","id":"run_g","contextId":"ctx_g","status":{"state":"submitted"},"history":[{"kind":"message","messageId":"u","role":"user","parts":[{"kind":"text","text":"hi"}]}]}`),
		a2aGrammarFrame(2, `{"kind":"status-update",`+a2aGrammarHead+`,"status":{"state":"working"},"final":false}`),
		a2aGrammarFrame(3, `{"kind":"status-update",`+a2aGrammarHead+`,"status":{"state":"working","message":{"kind":"message","messageId":"r","role":"agent","parts":[{"kind":"text","text":"hmm","metadata":{"adk_thought":true}}]}},"final":false}`),
		a2aGrammarFrame(4, `{"kind":"artifact-update",`+a2aGrammarHead+`,"artifact":{"artifactId":"answer","parts":[{"kind":"text","text":"Hel"}]},"append":false,"lastChunk":false}`),
		a2aGrammarFrame(5, `{"kind":"artifact-update",`+a2aGrammarHead+`,"artifact":{"artifactId":"answer","parts":[{"kind":"text","text":"lo"}]},"append":true,"lastChunk":false}`),
		a2aGrammarFrame(6, `{"kind":"artifact-update",`+a2aGrammarHead+`,"artifact":{"artifactId":"answer","parts":[{"kind":"text","text":""}]},"append":true,"lastChunk":true}`),
		a2aGrammarFrame(8, `{"kind":"status-update",`+a2aGrammarHead+`,"status":{"state":"completed"},"final":true,"metadata":{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}}`),
	}
}

func a2aGrammarCheck(t *testing.T, frames []string, c a2aCheck) (*observation, []string) {
	t.Helper()
	return checkGrammar(frames, func(obs *observation) []string { return checkA2AStream(obs, c) })
}

var a2aGrammarOpts = a2aCheck{runID: "run_g", fromStart: true, complete: true, reqID: matrixA2AReqID}

func TestA2AStreamGrammar(t *testing.T) {
	obs, problems := a2aGrammarCheck(t, a2aGrammarStream(), a2aGrammarOpts)
	if len(problems) > 0 {
		t.Fatalf("a valid stream was rejected: %q", problems)
	}
	eq(t, "text", obs.text, "Hello")
	eq(t, "reasoning", obs.reasoning, "hmm")
	eq(t, "finish", obs.finish, bridge.StopEndTurn)
	expectUsage(t, obs.usage, &usage{1, 2, 3})

	replace := func(i int, old, new string) func([]string) []string {
		return func(f []string) []string { f[i] = strings.Replace(f[i], old, new, 1); return f }
	}
	cut := func(i int) func([]string) []string {
		return func(f []string) []string { return append(f[:i:i], f[i+1:]...) }
	}
	cases := []struct {
		name   string
		break_ func([]string) []string
		want   string
	}{
		{"no id", replace(1, "id: run_g:2\n", ""), "id lines"},
		{"another task's id", replace(1, "run_g:2", "run_h:2"), "not an event id"},
		{"seq goes back", replace(4, "run_g:5", "run_g:3"), "seq"},
		{"two data lines", replace(1, "data: {", "data: {}\ndata: {"), "data lines"},
		{"an event line", replace(1, "data: {", "event: x\ndata: {"), "other than id and data"},
		{"another request id", replace(2, `"id":"matrix"`, `"id":"other"`), "JSON-RPC 2.0 response"},
		{"not 2.0", replace(2, `"2.0"`, `"1.0"`), "JSON-RPC 2.0 response"},
		{"an error frame", replace(2, `"result":`, `"error":{"code":-32603,"message":"x"},"x":`), "error frame"},
		{"unknown kind", replace(2, `"kind":"status-update"`, `"kind":"status-change"`), "cannot read"},
		{"no task first", cut(0), "open with the task"},
		{"task not submitted", replace(0, `"state":"submitted"`, `"state":"working"`), "want submitted"},
		{"task later", func(f []string) []string {
			f[0], f[1] = strings.Replace(f[1], "run_g:2", "run_g:1", 1), strings.Replace(f[0], "run_g:1", "run_g:2", 1)
			return f
		}, "does not open"},
		{"another context", replace(3, `"contextId":"ctx_g"`, `"contextId":"ctx_h"`), "names task"},
		{"first chunk appends", replace(3, `"append":false`, `"append":true`), "has append true"},
		{"later chunk replaces", replace(4, `"append":true`, `"append":false`), "append false"},
		{"chunk after lastChunk", func(f []string) []string {
			return append(f[:6:6], a2aGrammarFrame(7, `{"kind":"artifact-update",`+a2aGrammarHead+`,"artifact":{"artifactId":"answer","parts":[{"kind":"text","text":"!"}]},"append":true,"lastChunk":false}`), f[6])
		}, "after its lastChunk"},
		{"final while working", replace(6, `"state":"completed"`, `"state":"working"`), "no outcome"},
		{"completed without final", replace(6, `"final":true`, `"final":false`), "without final true"},
		{"no final", cut(6), "final status-updates"},
		{"after the final", func(f []string) []string {
			return append(f, a2aGrammarFrame(9, `{"kind":"status-update",`+a2aGrammarHead+`,"status":{"state":"working"},"final":false}`))
		}, "after the final"},
		{"cut mid-frame", func(f []string) []string { f[6] = f[6][:20]; return f }, "inside an SSE frame"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			_, problems := a2aGrammarCheck(t, c.break_(a2aGrammarStream()), a2aGrammarOpts)
			expectProblem(t, problems, c.want)
		})
	}

	// A failed task's last word is an error; a resumed stream starts mid-way.
	failed := append(a2aGrammarStream()[:4:4], a2aGrammarFrame(9, `{"kind":"status-update",`+a2aGrammarHead+
		`,"status":{"state":"failed","message":{"kind":"message","messageId":"e","role":"agent","parts":[{"kind":"text","text":"boom"}]}},"final":true}`))
	obs, problems = a2aGrammarCheck(t, failed, a2aGrammarOpts)
	if len(problems) > 0 || !obs.errFrame || obs.err.message != "boom" {
		t.Errorf("a failed stream: problems %q, error %v", problems, obs.err)
	}
	_, problems = a2aGrammarCheck(t, a2aGrammarStream()[4:], a2aCheck{runID: "run_g", complete: true, reqID: matrixA2AReqID})
	if len(problems) > 0 {
		t.Errorf("a resumed stream was rejected: %q", problems)
	}
}
