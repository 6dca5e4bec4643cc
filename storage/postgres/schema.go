package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// CreateSchema creates the schema name in the database of url, for a
// bridge (or several) of its own there (the soak's), and returns url with
// its connections' search_path set to it, and a func that drops it with
// everything in it.
func CreateSchema(ctx context.Context, url, name string) (string, func(context.Context) error, error) {
	ident := pgx.Identifier{name}.Sanitize()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %s", redact(err))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return "", nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	drop := func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "DROP SCHEMA "+ident+" CASCADE")
		return err
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + name, drop, nil
}
