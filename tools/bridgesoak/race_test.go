//go:build race

package main

// raceEnabled: the test binary has the race detector, so the bridge it
// soaks is built with it too (and its packages come from the same cache).
const raceEnabled = true
