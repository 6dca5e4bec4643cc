// Package anthropictest is a fake Anthropic upstream for tests: an
// httptest server on 127.0.0.1 that answers with scripted named-event SSE
// written by hand (Events, from mapping/anthropic/anthropictest, beside
// CheckStream, the validator of the Messages stream grammar).
package anthropictest
