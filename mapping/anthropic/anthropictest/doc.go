// Package anthropictest is test support for the Anthropic Messages wire:
// Events writes a Messages stream by hand, the way the real API sends it
// (not with the bridge's own encoder, so the codecs are tested against the
// wire rather than against themselves), and CheckStream is the one
// validator of the Messages stream grammar every test of an emitted stream
// uses, the codec's and the server side's alike. The fake upstream that
// serves these streams is outbound/anthropic/anthropictest.
package anthropictest
