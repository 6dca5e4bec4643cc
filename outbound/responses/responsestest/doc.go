// Package responsestest is a fake OpenAI Responses upstream for tests and
// the Responses stream validator. The server is an httptest server on
// 127.0.0.1 answering POST /v1/responses with scripted, real-wire typed
// events (written by hand in Events, the way OpenAI sends them, not by the
// bridge's own encoder, so the codecs are tested against the wire rather
// than against themselves). CheckStream and CheckResponse hold a stream or
// a Response object the bridge wrote to the Responses grammar, including
// the members the Open Responses schema requires.
package responsestest
