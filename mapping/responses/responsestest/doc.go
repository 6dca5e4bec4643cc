// Package responsestest is test support for the OpenAI Responses wire:
// Events writes a response's typed events by hand, the way OpenAI sends
// them (not with the bridge's own encoder, so the codecs are tested against
// the wire rather than against themselves), and CheckStream and
// CheckResponse hold a stream or a Response object the bridge wrote to the
// Responses grammar, including the members the Open Responses schema
// requires, for the codec's tests and the server side's alike. The fake
// upstream that serves these events is outbound/responses/responsestest.
package responsestest
