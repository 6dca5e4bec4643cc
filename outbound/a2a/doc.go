// Package a2a is the client for an A2A agent upstream (JSON-RPC over HTTP
// and SSE; A2A 0.3, or 1.0 when the agent's card offers only that). It
// fetches and caches the agent card, sends message/stream when the card
// says streaming and message/send otherwise, and decodes the agent's
// frames with mapping/a2a in the profile the config names (a2a or adk).
//
// A run is one upstream task: the task id, the context id and the
// transcript fingerprints that lead to a context are kept in the id map,
// so a stateless client's next turn sends only its new message into the
// same upstream context, and an edited history opens a new one. Abort
// calls tasks/cancel; a stream that breaks mid-task is resubscribed from
// the last upstream event id (then read with tasks/get if the agent cannot
// resubscribe), so the client sees no gap.
//
// A task that stops input-required with function calls nothing answered
// asks the client for their results: they reach the client as its tool
// calls, and its results go back into the same task (function_response
// data parts with its taskId). A steer is a message to the working task.
// A Client is safe for concurrent use.
package a2a
