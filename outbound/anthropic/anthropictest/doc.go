// Package anthropictest is test support for the Anthropic Messages dialect:
// a fake Anthropic upstream (an httptest server on 127.0.0.1 that answers
// with scripted named-event SSE written by hand here, not by the bridge's
// own encoder, so the codecs are tested against the wire rather than
// against themselves), and CheckStream, the one validator of the Messages
// stream grammar every test of an emitted stream uses.
package anthropictest
