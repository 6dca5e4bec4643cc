package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/bridge"
)

// PutID records m; an existing mapping of the same (Kind, Scope, Local) is
// replaced.
func (s *Store) PutID(ctx context.Context, m bridge.IDMapping) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO id_map (kind, scope, local, remote) VALUES (?, ?, ?, ?)
			ON CONFLICT (kind, scope, local) DO UPDATE SET remote = excluded.remote`,
			string(m.Kind), m.Scope, m.Local, m.Remote)
		return err
	})
	if err != nil {
		return fmt.Errorf("put id kind=%s scope=%s local=%s: %w", m.Kind, m.Scope, m.Local, err)
	}
	return nil
}

// RemoteID returns the remote id mapped to local; CodeNotFound if none is.
func (s *Store) RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error) {
	var remote string
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT remote FROM id_map WHERE kind = ? AND scope = ? AND local = ?`,
			string(kind), scope, local).Scan(&remote)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", bridge.Errorf(bridge.CodeNotFound, "no %s id mapped to local %q in %q", kind, local, scope)
	}
	if err != nil {
		return "", fmt.Errorf("remote id kind=%s scope=%s local=%s: %w", kind, scope, local, err)
	}
	return remote, nil
}

// LocalID returns the local id mapped to remote; CodeNotFound if none is.
// When several locals map to remote, the one recorded first wins.
func (s *Store) LocalID(ctx context.Context, kind bridge.IDKind, scope, remote string) (string, error) {
	var local string
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT local FROM id_map WHERE kind = ? AND scope = ? AND remote = ?
			ORDER BY rowid LIMIT 1`, string(kind), scope, remote).Scan(&local)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", bridge.Errorf(bridge.CodeNotFound, "no %s id mapped to remote %q in %q", kind, remote, scope)
	}
	if err != nil {
		return "", fmt.Errorf("local id kind=%s scope=%s remote=%s: %w", kind, scope, remote, err)
	}
	return local, nil
}
