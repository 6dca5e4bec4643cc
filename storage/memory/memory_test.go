package memory_test

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/memory"
)

// TestStore runs the store conformance suite that storage/sqlite passes.
func TestStore(t *testing.T) {
	bridgetest.TestStore(t, func(t *testing.T) bridge.Store { return memory.New(nil) })
}

// TestResponseStore runs the stored-responses suite that storage/sqlite
// passes.
func TestResponseStore(t *testing.T) {
	bridgetest.TestResponseStore(t, func(t *testing.T) bridge.Store { return memory.New(nil) })
}

// TestRecordingStore runs the recordings suite that storage/sqlite passes.
func TestRecordingStore(t *testing.T) {
	bridgetest.TestRecordingStore(t, func(t *testing.T) bridge.Store { return memory.New(nil) })
}
