// Package responses is the OpenAI Responses dialect (POST /v1/responses and
// the stored-response endpoints): its wire types and pure codecs, both
// directions, and its error table. Nothing here does I/O beyond reading and
// writing the io.Reader and io.Writer it is handed.
//
//   - DecodeRequest parses a client's create body into a *Request: the hub
//     request, plus what only the Responses API has (store, background,
//     previous_response_id, the input as normalized items for input_items,
//     and the members the Response object echoes). EncodeRequest renders a
//     hub request as the body sent to a Responses upstream.
//   - DecodeStream turns an upstream's typed event stream into hub events;
//     NewStreamEncoder writes hub events as the typed event stream a client
//     reads (sequence_number on every event, item ids and output_index
//     consistent), and NewAccumulator folds them into one Response object.
//   - EncodeError and DecodeError are the two-way table between bridge error
//     codes and the OpenAI error object, which this API shares with Chat
//     Completions (mapping/openai holds the table; this package adds the
//     Responses-only codes and the in-stream error shapes).
//
// # How the hub holds a Responses request
//
// input (a string, or items) becomes the request's Messages: a message item
// is a message of its role; consecutive reasoning, assistant message and
// function_call items make one assistant message (reasoning parts, text,
// ToolCalls with call_id as the id), as a model step produced them; a
// function_call_output is a tool message. instructions become
// Request.Instructions (a system message sent in front of the transcript on
// every model call, never stored in the session: the API does not carry
// them over to the next turn). Item ids a client sends back are the
// bridge's own and are not kept. An assistant message's phase rides in
// its Opaque.
//
// Hub reasoning is rendered as a reasoning item with summary_text parts
// (the reasoning summary events); reasoning read from an upstream, whether
// summary_text or reasoning_text, is hub reasoning. Encrypted reasoning
// (encrypted_content) travels in the reasoning part's Encrypted, with the
// upstream's item id in its Opaque, so a Responses upstream gets it back.
//
// The codecs are safe for concurrent use; a StreamEncoder or an Accumulator
// belongs to one response and is not.
package responses
