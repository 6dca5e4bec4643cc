package main

// crossPairs are the matrix rows between dialects that landed together,
// neither of them OpenAI's.
func crossPairs() []pair {
	return []pair{
		{inbound: anthropicClient{over: "a2a"}, outbound: a2aOut, notes: []string{
			"A Claude-style client over an A2A agent: the agent's answer text reaches the client as text blocks, " +
				"its reasoning as thinking (without a signature); tool calls stay the agent's own.",
		}},
		{inbound: a2aInClient{}, outbound: anthropicOut, notes: []string{
			"A Messages model served as an A2A agent: the context's transcript is replayed each turn with the " +
				"system lifted out and max_tokens set; thinking reaches the A2A client as adk_thought messages.",
		}},
	}
}
