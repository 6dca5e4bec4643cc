// Package anthropic is the client for an Anthropic Messages upstream
// (api.anthropic.com or any server that speaks the Messages API): it sends
// every request as a stream (POST {base}/v1/messages with x-api-key and
// anthropic-version), reads the named-event SSE into hub events, forwards
// count_tokens, and mints tool_use ids for ids minted elsewhere that
// Anthropic would refuse (bridge.ToolCallMinter).
package anthropic
