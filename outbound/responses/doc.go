// Package responses is the client for an OpenAI Responses upstream
// (POST {base}/responses, streamed): OpenAI itself or any server that
// speaks the API (Open Responses implementations, vLLM, Ollama, ...).
//
// By default the bridge keeps the state: every call sends the whole
// transcript as input items with store: false. With Config.Stateful the
// upstream keeps it: calls are stored (store: true) and the next model
// call of the same session sends previous_response_id and only the
// messages the upstream does not have yet; a chain the upstream has lost
// (404 previous_response_not_found) or a transcript that no longer
// extends it (an edit, a branch) is sent whole again.
//
// With Config.WebSocket the calls go in WebSocket mode: one
// response.create message a call on a connection kept open between calls
// (websocket.go), falling back to HTTP when the upstream refuses the
// upgrade.
//
// The upstream's response id of every call is the run's UpstreamRunID and,
// with Config.IDs, an IDRun entry of the id map. A Client is safe for
// concurrent use; ranging over a call's events once, to its end or not,
// closes its connection.
package responses
