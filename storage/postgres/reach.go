package postgres

// Reaching the database: every call bounded in time, and a database this
// replica cannot reach answered at once as CodeUnavailable (a 503 with
// Retry-After in the caller's dialect) instead of each request waiting.

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bridge-dev/bridge/bridge"
)

// defaultOpTimeout is Options.OpTimeout's default: long enough for a
// commit on a loaded database, short enough that a client of a replica
// cut off from it gets an answer rather than a hang.
const defaultOpTimeout = 5 * time.Second

// unreachableRetry is the Retry-After of a call the database did not
// answer: by then the connection is likely back, or a load balancer has
// sent the client to another replica.
const unreachableRetry = 2 * time.Second

// reach tracks whether the database answers. After a call fails for want
// of the database (a refused or dropped connection, a timeout), the
// replica counts it unreachable: every call fails at once while a
// goroutine pings the database every probeEvery, and the first answer
// clears it. So a client of a replica cut off from its database waits for
// no more than one call timeout, and most for none.
type reach struct {
	down atomic.Bool
}

// probeEvery is how often an unreachable database is tried again.
const probeEvery = 250 * time.Millisecond

// unavailable is the error of a call the database did not answer: it is a
// *bridge.Error (CodeUnavailable with Retry-After) for the client and
// keeps its cause for the log.
type unavailable struct {
	client *bridge.Error
	cause  error
}

func (u *unavailable) Error() string   { return "the database is unreachable: " + u.cause.Error() }
func (u *unavailable) Unwrap() []error { return []error{u.client, u.cause} }

func errUnreachable(cause error) error {
	return &unavailable{client: &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: unreachableRetry,
		Message: "the bridge cannot reach its database right now; retry, or another replica"}, cause: cause}
}

var errDown = errors.New("an earlier call found it unreachable")

// enter starts a call: it fails at once while the database is
// unreachable.
func (s *Store) enter() error {
	if s.reach.down.Load() {
		return errUnreachable(errDown)
	}
	return nil
}

// leave ends a call made under ctx with its error err, which it returns,
// as the client's error when the database did not answer. A call its
// caller gave up on (ctx done) says nothing of the database.
func (s *Store) leave(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || !unreachable(err) {
		return err
	}
	if s.reach.down.CompareAndSwap(false, true) {
		go s.probe()
	}
	return clientErr(ctx, err)
}

// probe pings the database until it answers (then calls go through again)
// or the store is closed.
func (s *Store) probe() {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
		err := s.pool.Ping(ctx)
		cancel()
		if err == nil {
			s.reach.down.Store(false)
			return
		}
	}
}

// clientErr is err, made the client's CodeUnavailable when it says the
// database did not answer a call made under ctx.
func clientErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || !unreachable(err) || errors.As(err, new(*unavailable)) {
		return err
	}
	return errUnreachable(err)
}

// unreachable reports whether err says the database did not answer (as
// opposed to answering with an error).
func unreachable(err error) bool {
	var (
		ce *pgconn.ConnectError
		ne net.Error
		u  *unavailable
	)
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.As(err, &u) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	switch code := pgCode(err); {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case code == "57P01", code == "57P02", code == "57P03": // shutting down, crashed, starting up
		return true
	}
	return err != nil && strings.Contains(err.Error(), "conn closed")
}

// bound is ctx limited to the store's call timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opTimeout)
}

// db is the pool as the store's calls use it: each call bounded by the
// call timeout, refused at once while the database is unreachable, and
// its failure for want of the database made the client's CodeUnavailable.
type db struct{ s *Store }

func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := d.s.enter(); err != nil {
		return pgconn.CommandTag{}, err
	}
	bctx, cancel := d.s.bound(ctx)
	defer cancel()
	tag, err := d.s.pool.Exec(bctx, sql, args...)
	return tag, d.s.leave(ctx, err)
}

func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := d.s.enter(); err != nil {
		return errRow{err}
	}
	bctx, cancel := d.s.bound(ctx)
	return &row{row: d.s.pool.QueryRow(bctx, sql, args...), s: d.s, ctx: ctx, cancel: cancel}
}

func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := d.s.enter(); err != nil {
		return nil, err
	}
	bctx, cancel := d.s.bound(ctx)
	rows, err := d.s.pool.Query(bctx, sql, args...)
	if err != nil {
		cancel()
		return nil, d.s.leave(ctx, err)
	}
	return &guardedRows{Rows: rows, s: d.s, ctx: ctx, cancel: cancel}, nil
}

// appendEvents is appendEvents (postgres.go) as one bounded, guarded call.
func (d db) appendEvents(ctx context.Context, evs []bridge.Event) error {
	if err := d.s.enter(); err != nil {
		return err
	}
	bctx, cancel := d.s.bound(ctx)
	defer cancel()
	return d.s.leave(ctx, appendEvents(bctx, d.s.pool, evs))
}

// tx runs fn in a transaction with opts, bounded and guarded as db's calls.
func (d db) tx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	if err := d.s.enter(); err != nil {
		return err
	}
	bctx, cancel := d.s.bound(ctx)
	defer cancel()
	return d.s.leave(ctx, pgx.BeginTxFunc(bctx, d.s.pool, opts, fn))
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type row struct {
	row    pgx.Row
	s      *Store
	ctx    context.Context // the caller's
	cancel context.CancelFunc
}

func (r *row) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	r.cancel()
	if errors.Is(err, pgx.ErrNoRows) {
		_ = r.s.leave(r.ctx, nil) // answered: no row
		return err
	}
	return r.s.leave(r.ctx, err)
}

// guardedRows ends its call when the rows are closed (pgx.CollectRows and
// every loop here close them).
type guardedRows struct {
	pgx.Rows
	s      *Store
	ctx    context.Context // the caller's
	cancel context.CancelFunc
	done   bool
	err    error
}

func (r *guardedRows) Close() {
	r.Rows.Close()
	if !r.done {
		r.done = true
		r.err = r.s.leave(r.ctx, r.Rows.Err())
		r.cancel()
	}
}

func (r *guardedRows) Err() error {
	if r.done {
		return r.err
	}
	return clientErr(r.ctx, r.Rows.Err())
}

func (s *Store) db() db { return db{s} }
