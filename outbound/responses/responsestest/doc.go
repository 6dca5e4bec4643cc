// Package responsestest is a fake OpenAI Responses upstream for tests: an
// httptest server on 127.0.0.1 answering POST /v1/responses with scripted,
// real-wire typed events (Events, from mapping/responses/responsestest,
// beside CheckStream and CheckResponse, the Responses grammar's validators).
package responsestest
