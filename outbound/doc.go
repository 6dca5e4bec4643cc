// Package outbound holds what every upstream client shares: the go-kit
// endpoint seam that tracing, logging and the circuit breaker wrap. Each
// subpackage is the client for one dialect.
package outbound
