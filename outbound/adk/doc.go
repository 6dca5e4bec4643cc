// Package adk is the client for a Google ADK api_server upstream (adk
// api_server, ADK-JS or Python). The app is the request's model name (or
// the configured one); the ADK user is the bridge principal.
//
// ADK sessions are stateful: the client keeps, in the store's id map, the
// upstream session a transcript leads to, so a turn whose history extends
// a known transcript (an OpenAI client resending its messages, or one
// X-Session-Id) sends only its new message to the same ADK session. A
// transcript the client edited opens a new session with the earlier turns
// carried in the first message (recorded as dropped).
//
// A run completes at the run's final response (not partial, no function
// call left unanswered) or [DONE]; the ADK server closes the stream after
// it. A close before that is a broken connection: the client asks for the
// rest with a run_sse request carrying lastEventId and no newMessage (the
// chatkit convention, which a bridge's ADK endpoint answers); ADK itself
// has no resume and answers an empty stream, and the run ends
// interrupted, never completed.
//
// A long-running functionCall is the client's tool call; the run waits for
// its result, which goes to the same session as a functionResponse. An
// upstream that names its run in X-Run-Id is a bridge: stop and steer use
// its run API. ADK's own server has none: a stop closes run_sse (ADK-JS
// means to abort the invocation then), and a steer waits for the next
// invocation.
package adk
