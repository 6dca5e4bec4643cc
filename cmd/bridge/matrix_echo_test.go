package main

// The echo upstream in the matrix: the built-in, in-process model that
// streams the last user message back word by word. It has no wire, so
// there is nothing to fake: the factory only checks that echo can play the
// scenario's script, and says why not when it cannot.

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/outbound/echo"
)

func echoUpstream(_ *testing.T, sc *script) (*fakeUpstream, string) {
	if reason := echoCannot(sc); reason != "" {
		return nil, reason
	}
	return &fakeUpstream{configure: func(c *Config) {
		c.Upstreams = []Upstream{{Name: "echo", Dialect: "echo"}}
		c.EchoDelay = sc.calls[0].delay
	}}, ""
}

// echoCannot says why echo cannot play sc, "" when it can.
func echoCannot(sc *script) string {
	for _, c := range sc.calls {
		switch {
		case len(c.tools) > 0:
			return "echo makes no tool calls"
		case len(c.reasoning) > 0:
			return "echo produces no reasoning"
		case c.fail != nil || c.midError != nil:
			return "echo never fails: there is no upstream to return an error"
		}
	}
	for _, c := range sc.calls {
		switch {
		case strings.Join(c.text, "") != sc.input:
			return "echo can only repeat the last user message"
		case c.stop != bridge.StopEndTurn:
			return "echo always ends its turn with stop reason end_turn"
		case c.usage != nil && *c.usage != *wordUsage(sc.input):
			return "echo reports usage in words"
		}
	}
	if len(sc.calls) != 1 {
		return "echo answers every model call the same way"
	}
	return ""
}

// wordUsage is the usage echo reports for a one-message request: its words
// in and out. Scripts use it so one expectation holds for every upstream.
func wordUsage(input string) *usage {
	n := int64(len(echo.Split(input)))
	return &usage{in: n, out: n, total: 2 * n}
}

func echoLimits() []string {
	return []string{
		"Echo is in process: it repeats the last user message word by word and counts usage in words; " +
			"it has no wire, so no upstream request can be observed (a client cancel is seen in the run's final status only).",
	}
}
