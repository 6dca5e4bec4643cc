package pgtest_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestSchema: the server starts, and each schema URL is an empty schema of
// its own.
func TestSchema(t *testing.T) {
	ctx := t.Context()
	for range 2 {
		conn, err := pgx.Connect(ctx, pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE x (a int)"); err != nil {
			t.Fatalf("create a table in the new schema: %v", err)
		}
		conn.Close(ctx)
	}
}
