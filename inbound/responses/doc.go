// Package responses serves the OpenAI Responses API over whatever upstream
// the engine routes the model to:
//
//	POST   /v1/responses                         create (stream or not, background or not)
//	GET    /v1/responses                         WebSocket mode (ws.go)
//	GET    /v1/responses/{id}                    retrieve; ?stream=true&starting_after=N re-streams
//	GET    /v1/responses/{id}/input_items        the response's input, as items
//	DELETE /v1/responses/{id}                    delete the stored response
//	POST   /v1/responses/{id}/cancel             cancel an in-progress response
//
//	POST   /v1/responses/compact                 compaction (compact.go)
//
// POST /v1/responses/input_tokens answers 400 unsupported in OpenAI's
// error shape.
//
// # State over any upstream
//
// A response is a segment of a run: the events of the run after the seq it
// started at, up to the first final. A stored response is a row of the
// store's bridge.ResponseStore (scoped by principal, so another principal's
// id is not found): its run, session and start, its input items, the
// finished Response object, and where it ended in its session once a later
// response began (0 while it is the session's latest). The transcript is
// the session's, the events are the run's. Without a ResponseStore, store:
// true is refused.
//
// store defaults to true. previous_response_id names the response whose
// session the new one continues: when it is that session's latest, the new
// input is appended to the session's transcript (Request.Full false), so
// function_call_output items that answer the calls of a run waiting in
// input_required continue that same run; when the client branches from an
// older response, the transcript up to it is copied into a new session.
// The engine sends the whole transcript to a stateless upstream, and each
// upstream its own context where it keeps one. An unknown
// previous_response_id, or another principal's, is a 404 in OpenAI's shape
// (code previous_response_not_found). instructions are sent in front of
// the transcript on the request's model calls and never stored, as the API
// does not carry them over.
//
// A background response runs on when its client leaves (the run is
// detached); GET with stream=true re-renders the run's events from the
// segment's start, deterministically, and writes the events after
// sequence_number starting_after, so a resumed stream goes on exactly where
// the first one stopped. Every frame also carries the hub event id in its
// SSE id: line, which the run API's resume takes.
//
// A stream holds its first frame until the upstream has answered, so a
// failure before the upstream's first byte is an ordinary error response
// (status and OpenAI error object); after that a failure is an `error`
// event and response.failed. A background stream is not held: the
// response exists once it is created.
//
// Handler.Close stops the goroutines that write each stored response's
// final object when its run ends; the handler is safe for concurrent use.
package responses
