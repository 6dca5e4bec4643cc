// Package adktest is a fake ADK api_server for tests, written from the
// protocol note and the ADK-JS 2.0.0 captures: the same routes, the same
// camelCase-only request keys, the same event shapes (8-character ids,
// e-<uuid> invocation ids, millisecond timestamps, the four action maps),
// partial events then a complete event that repeats their text, no SSE
// ids and no [DONE] (the stream just ends), {"error": "..."} bodies.
//
// The agent is scripted by the user's text: "weather:<city>" calls the
// get_weather tool and answers from its result; "error:<code>" answers
// with an errorCode event; "cut:<text>" streams the partials of text and
// drops the connection before the complete event; "say:<text>" answers
// text; "client:<city>" asks the client for get_weather (a long-running
// call, then the stream ends) and a newMessage carrying a
// functionResponse answers "the tool said: <response JSON>"; anything
// else answers "turn <n>: <text>", n counting the user events of the
// session (so a test sees whether a session was reused).
package adktest
