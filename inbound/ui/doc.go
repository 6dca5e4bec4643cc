// Package ui is the run inspector `bridge serve` serves at /ui/: a few
// embedded pages (plain HTML, CSS and JavaScript, no build step) and the
// JSON they read under /ui/api/.
//
// The pages list runs (newest first, filtered, paged), show a session as a
// chat, and show one run: its header, every event with its offset, a
// latency waterfall, tool calls, the dropped features, and both wires side
// by side: what the client received, rendered again in the client's
// dialect by the dialect's own encoder (inbound.Dialect.ServeEvents), and
// what the upstream sent, when the run's upstream calls were recorded
// (Recorder). A running run's page follows it by a stream of its events
// and its client frames (live.go) and can stop or steer it.
//
// Access is decided per request by Config.Access: an admin sees every
// principal's runs, any other principal its own only.
package ui
