// Package openai is the OpenAI Chat Completions dialect
// (POST /v1/chat/completions): its wire types and pure codecs, both
// directions, and its error table. Nothing here does I/O beyond reading and
// writing the io.Reader and io.Writer it is handed.
//
//   - DecodeRequest and EncodeRequest translate request bodies: a client's
//     body into a bridge.Request (wire -> hub) and a bridge.Request into the
//     body sent to an OpenAI-compatible upstream (hub -> wire). Fields the
//     hub does not model ride in Request.Extra and Message.Opaque, so a
//     same-dialect upstream gets them back.
//   - DecodeStream turns an upstream's chat.completion.chunk SSE stream into
//     hub events; NewStreamEncoder writes hub events as a client-facing SSE
//     stream, and NewAccumulator folds them into one chat.completion object
//     for a client that did not ask for a stream.
//   - EncodeError and DecodeError are the two-way table between bridge error
//     codes and OpenAI's (HTTP status, error type, code).
//   - EncodeHistory renders a session's history in the chatkit
//     OpenAI-compatible history shape.
//
// The codecs are safe for concurrent use; a StreamEncoder or an Accumulator
// belongs to one response and is not.
package openai
