// Package wire holds the JSON and SSE helpers the dialect codecs of
// mapping/ share: a request-body decoder, a nesting-depth check run before
// any parse, typed accessors that name the offending field in a
// *bridge.Error, an append-based object writer and string escaper (no HTML
// escaping, no reflection on the hot path), and a line reader for
// server-sent events.
//
// Nothing here knows a dialect. The helpers are safe for concurrent use;
// an ObjWriter or an SSEReader belongs to one caller.
package wire
