// Package outbound holds what every upstream client shares: the go-kit
// endpoint seam that tracing, logging, retries and the circuit breaker wrap
// (the breaker counting each call's whole stream), timeouts, and Fallback,
// which tries other upstreams when one fails before answering. Each
// subpackage is the client for one dialect.
package outbound
