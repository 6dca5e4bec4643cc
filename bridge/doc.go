// Package bridge is the hub of the protocol bridge: the normalized model of a
// conversation turn (Request, Message, Event), the run engine that drives an
// upstream call and commits every event to a durable log before any client
// sees it, and the store interfaces that log is written through.
//
// Dialect packages translate to and from these types; nothing here knows a
// wire format. The engine sees tracing only through the OpenTelemetry trace
// API handed to it in Config.
package bridge
