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

// TestPrivateRestart: a private server stops (connections refused) and
// starts again with what it acknowledged before.
func TestPrivateRestart(t *testing.T) {
	ctx := t.Context()
	srv := pgtest.Private(t)
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (a int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	srv.Stop(t)
	if c, err := pgx.Connect(ctx, srv.URL()); err == nil {
		c.Close(ctx)
		t.Fatal("the stopped server accepts a connection")
	}
	srv.Start(t)
	conn, err = pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var a int
	if err := conn.QueryRow(ctx, "SELECT a FROM kept").Scan(&a); err != nil || a != 7 {
		t.Fatalf("after the restart: %d %v, want the row written before", a, err)
	}
}
