// Package a2a serves the bridge as an A2A agent (JSON-RPC over HTTP and
// SSE, A2A 0.3, and 1.0's shapes for requests with A2A-Version: 1.0):
// POST /a2a for message/send, message/stream, tasks/get, tasks/cancel and
// tasks/resubscribe (and their 1.0 names, with ListTasks), and the agent
// card at /.well-known/agent-card.json and /.well-known/agent.json.
//
// The contextId is the bridge session, the taskId the run. The JSON-RPC
// and SSE server is the bridge's own, on the engine, rather than a2a-go's
// a2asrv: every frame carries a stable event id that Last-Event-ID takes
// back (a2asrv's ids are random), tasks/resubscribe replays what a client
// missed (a2asrv replays nothing and fails once the task ended), a message
// for a running task steers it (a2asrv answers -32603), HTTP headers reach
// the handler, and a context's tasks can be listed. A Handler is safe for
// concurrent use.
package a2a
