// Package anthropic is the Anthropic Messages dialect (POST /v1/messages and
// POST /v1/messages/count_tokens): its wire types and pure codecs, both
// directions, and its error table. Nothing here does I/O beyond reading and
// writing the io.Reader and io.Writer it is handed.
//
//   - DecodeRequest and EncodeRequest translate request bodies: a client's
//     body into a bridge.Request (wire -> hub) and a bridge.Request into the
//     body sent to an Anthropic upstream (hub -> wire). DecodeCountTokens
//     and EncodeCountTokens do the same for count_tokens bodies.
//   - DecodeStream turns an upstream's named-event SSE stream into hub
//     events; NewStreamEncoder writes hub events as a client-facing SSE
//     stream, and NewAccumulator folds them into one message object for a
//     client that did not ask for a stream.
//   - EncodeError and DecodeError are the two-way table between bridge error
//     codes and Anthropic's (HTTP status, error type).
//   - EstimateInputTokens answers count_tokens when the upstream cannot.
//
// # How the hub holds a Messages request
//
// The top-level system (a string or text blocks) becomes a leading system
// message. A user message's tool_result blocks become tool messages (one per
// block, in order, with IsError), and its other blocks a user message; a
// user message that mixes both is split where the kind changes. An
// assistant's thinking blocks are reasoning parts with their Signature,
// redacted_thinking blocks reasoning parts with Encrypted, and tool_use
// blocks its ToolCalls (input kept as compact JSON text). Blocks the hub has
// no type for (documents with a text source, search results, server tool
// blocks) are opaque parts that only this dialect writes back; fields the hub
// has no place for beside a known block (cache_control, citations) ride in
// the part's Opaque. Top-level fields the hub does not model (thinking,
// service_tier, container, server tools) stay in Request.Extra.
//
// Usage: the hub's InputTokens counts every prompt token, cached or not (the
// OpenAI convention); Anthropic's input_tokens counts only the uncached
// ones. The codecs convert: hub input = input_tokens +
// cache_read_input_tokens + cache_creation_input_tokens, and back.
//
// The codecs are safe for concurrent use; a StreamEncoder or an Accumulator
// belongs to one response and is not.
package anthropic
