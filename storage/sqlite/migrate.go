package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A file is
// named NNNN_what.sql; its version is NNNN.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	ms := make([]migration, 0, len(names))
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", base)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: bad version %q", base, num)
		}
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// migrate applies, in order, every embedded migration the database has not
// recorded in schema_migrations, each in its own transaction.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name    TEXT NOT NULL,
		applied INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	// A database a newer bridge migrated holds what this one cannot read
	// (rows of formats it does not know): refuse it rather than misread it.
	var newest sql.NullInt64
	if err := s.w.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	if known := ms[len(ms)-1].version; newest.Valid && newest.Int64 > int64(known) {
		return fmt.Errorf("the database was migrated by a newer bridge (migration %d; this one knows up to %d)", newest.Int64, known)
	}
	for _, m := range ms {
		if err := s.apply(ctx, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// checkSchema fails unless the database holds every migration this bridge
// knows and none it does not: a reader that cannot migrate reads only the
// schema it was written for.
func (s *Store) checkSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var newest sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	if known := int64(ms[len(ms)-1].version); newest.Int64 != known {
		return fmt.Errorf("the database is at migration %d; this bridge reads migration %d", newest.Int64, known)
	}
	return nil
}

// apply runs m unless it is recorded as applied.
func (s *Store) apply(ctx context.Context, m migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)`,
		m.version, m.name, unixNano(s.now())); err != nil {
		return err
	}
	return tx.Commit()
}
