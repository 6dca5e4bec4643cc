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
