// Package inbound holds what every dialect's HTTP side shares: reading
// bounded request bodies, writing SSE frames that are flushed one at a time,
// and the Dialect interface the common run API renders through. Each
// subpackage serves one dialect.
package inbound
