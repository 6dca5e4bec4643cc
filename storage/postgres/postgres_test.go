package postgres_test

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestStore runs the store conformance suite storage/sqlite passes, against
// a real PostgreSQL server, each subtest in an empty schema of its own.
func TestStore(t *testing.T) {
	bridgetest.TestStore(t, func(t *testing.T) bridge.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
