// Package adk is the wire codec of the Google ADK api_server dialect: the
// Event, Content and Session JSON of /run, /run_sse and the sessions
// routes, in both directions.
//
// Upstream frames to events: StreamDecoder turns ADK events (a run_sse
// stream or a /run array) into the hub's events. Partial text events become
// deltas and the complete event that repeats their text adds only what the
// partials did not carry; function calls and responses are the agent's own
// tool activity (bridge.SourceAgent); errorCode and {"error": ...} end the
// run as failed; a stream that ends before a final response is broken.
//
// Events to client frames: StreamEncoder turns the hub's events of a run into ADK
// events (partial ones while streaming, then the complete event), with
// resumable ids: a complete event's id is the bridge cursor of the last
// hub event folded into it (a message_done, usage or tool call, never a
// delta), a partial event's id is its delta's cursor.
//
// Timestamps are read in milliseconds (ADK-JS) or float seconds (Python);
// they are written as float seconds. Request keys are read in camelCase
// or snake_case and always written in camelCase, the only case the ADK-JS
// server reads. The package holds no I/O.
package adk
