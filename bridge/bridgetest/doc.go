// Package bridgetest holds helpers for testing code built on package bridge.
// Its centrepiece is TestStore, the conformance suite every bridge.Store
// implementation passes: a store package's own test calls it with a function
// that opens a fresh, empty store.
package bridgetest
