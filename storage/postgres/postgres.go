// Package postgres is a bridge.Store in PostgreSQL (github.com/jackc/pgx/v5),
// for several bridge replicas that share one log: the same behaviour as
// storage/sqlite (it passes the same conformance suite), the same schema in
// PostgreSQL's types, embedded versioned migrations that a replica applies
// at start under an advisory lock, and a database a newer bridge migrated is
// refused rather than misread.
//
// A commit is one transaction; events go in with one statement per batch
// (unnest of arrays), so a batch of deltas costs one round trip.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.Store = (*Store)(nil)

// Options configures a Store. The zero value means the defaults.
type Options struct {
	// Now is the clock for times the store fills in itself (a zero
	// Created). Default time.Now.
	Now func() time.Time
	// MaxConns caps the connection pool (default: pgxpool's, the larger
	// of 4 and the number of CPUs).
	MaxConns int32
	// OpTimeout bounds each call to the database (default 5s): a replica
	// the database does not answer fails the call with CodeUnavailable
	// rather than holding its client.
	OpTimeout time.Duration
	// Lease is how long a run this process creates or takes over stays
	// leased to it unless the engine renews the lease (default 10s): a
	// replica that dies leaves its runs to the others after that long.
	Lease time.Duration
}

// Store is a bridge.Store in a PostgreSQL database. It is safe for
// concurrent use, within a process and across processes: every method is
// its own transaction.
type Store struct {
	pool  *pgxpool.Pool
	now   func() time.Time
	watch watch
	// owner names this process in the leases it holds (random per Open).
	owner string
	lease time.Duration
	// opTimeout and reach: reach.go.
	opTimeout time.Duration
	reach     reach
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

// IsURL reports whether db names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Open connects to the database at url (a postgres:// URL or key=value
// string, as pgx takes it) and applies the migrations it lacks.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s", redact(err))
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if cfg.ConnConfig.ConnectTimeout == 0 { // a connection the network drops fails, not waits
		cfg.ConnConfig.ConnectTimeout = cmp.Or(opt.OpTimeout, defaultOpTimeout)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s", redact(err))
	}
	s := &Store{pool: pool, now: opt.Now, owner: bridge.NewID("replica_"), lease: cmp.Or(opt.Lease, defaultLease),
		opTimeout: cmp.Or(opt.OpTimeout, defaultOpTimeout), closed: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}

// redact keeps a connection string's password out of an error's text.
func redact(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return "invalid database URL"
	}
	return err.Error()
}

// Close stops the listener, if any, and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.closeWatch()
	s.pool.Close()
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock replicas take to migrate one at a time.
const migrationLock = 0x6272696467650001 // "bridge" 1

func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("lock for migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var newest *int64
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	known := len(names)
	if newest != nil && *newest > int64(known) {
		return fmt.Errorf("the database was migrated by a newer bridge (migration %d; this one knows up to %d)", *newest, known)
	}
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: no version", base)
		}
		if newest != nil && int64(v) <= *newest {
			continue
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES ($1, $2, $3)`,
				v, base, s.now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", base, err)
		}
	}
	return nil
}

// unixNano is t in unix nanoseconds; the zero time is 0.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// pgCode is the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// constraintOf is the name of the constraint err violated, or "".
func constraintOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

// write runs fn in a transaction and commits it when fn returns nil.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.db().tx(ctx, pgx.TxOptions{}, fn)
}

// read runs fn in a read-only transaction, so its queries see one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.db().tx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, fn)
}

// CreateSession inserts sess; CodeConflict if its id exists.
func (s *Store) CreateSession(ctx context.Context, sess *bridge.Session) error {
	if sess.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create session: empty id")
	}
	s.sessionTimes(sess)
	return s.write(ctx, func(tx pgx.Tx) error { return createSession(ctx, tx, sess) })
}

func (s *Store) sessionTimes(sess *bridge.Session) {
	if sess.Created.IsZero() {
		sess.Created = s.now()
	}
	if sess.Updated.IsZero() {
		sess.Updated = sess.Created
	}
}

func createSession(ctx context.Context, tx pgx.Tx, sess *bridge.Session) error {
	_, err := tx.Exec(ctx, `INSERT INTO sessions (id, principal, created, updated, state) VALUES ($1, $2, $3, $4, $5)`,
		sess.ID, sess.Principal, unixNano(sess.Created), unixNano(sess.Updated), nullText(sess.State))
	if pgCode(err) == uniqueViolation {
		return bridge.Errorf(bridge.CodeConflict, "session %q exists", sess.ID)
	}
	if err != nil {
		return fmt.Errorf("create session id=%s: %w", sess.ID, err)
	}
	return nil
}

// nullText is b as a text column's value: NULL when empty.
func nullText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	v := string(b)
	return &v
}

// Session returns principal's session id; another principal's session of
// that id is not found.
func (s *Store) Session(ctx context.Context, principal, id string) (*bridge.Session, error) {
	var (
		sess             = bridge.Session{ID: id, Principal: principal}
		created, updated int64
		state            *string
	)
	err := s.db().QueryRow(ctx, `SELECT created, updated, state FROM sessions WHERE principal = $1 AND id = $2`, principal, id).
		Scan(&created, &updated, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "session %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("session id=%s: %w", id, err)
	}
	sess.Created, sess.Updated = fromUnixNano(created), fromUnixNano(updated)
	if state != nil {
		sess.State = []byte(*state)
	}
	return &sess, nil
}

// UpdateSession writes sess.Updated and sess.State of the session
// (sess.Principal, sess.ID).
func (s *Store) UpdateSession(ctx context.Context, sess *bridge.Session) error {
	tag, err := s.db().Exec(ctx, `UPDATE sessions SET updated = $1, state = $2 WHERE principal = $3 AND id = $4`,
		unixNano(sess.Updated), nullText(sess.State), sess.Principal, sess.ID)
	if err != nil {
		return fmt.Errorf("update session id=%s: %w", sess.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return bridge.Errorf(bridge.CodeNotFound, "session %q not found", sess.ID)
	}
	return nil
}

// runColumns is the column list of a run row, as createRun writes it.
const runColumns = `id, session_id, client_run_id, principal, inbound, outbound, upstream, model,
	status, stop_reason, reason, usage, dropped, trace_id, upstream_run_id, created, finished, last_seq, render,
	owner, lease_until`

// runSelect is what scanRun reads. Commits of events do not touch the run's
// row (no row version per batch), so a running run takes its last seq from
// its events; an ended run's row has it.
const runSelect = `id, session_id, client_run_id, principal, inbound, outbound, upstream, model,
	status, stop_reason, reason, usage, dropped, trace_id, upstream_run_id, created, finished,
	CASE WHEN status = 'running'
		THEN GREATEST(last_seq, coalesce((SELECT max(seq) FROM events WHERE run_id = runs.id), 0))
		ELSE last_seq END,
	render, superseded, first_commit, first_byte`

// CreateRun inserts r and the messages that start it in one transaction.
func (s *Store) CreateRun(ctx context.Context, r *bridge.Run, input []bridge.Message) error {
	if err := s.checkRun(r); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := s.createRun(ctx, tx, r); err != nil {
			return err
		}
		return s.addMessages(ctx, tx, input, r.ID, r.Created)
	})
}

func (s *Store) checkRun(r *bridge.Run) error {
	if r.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create run: empty id")
	}
	if r.Status == "" {
		return bridge.Errorf(bridge.CodeInvalid, "create run %q: empty status", r.ID)
	}
	if r.Created.IsZero() {
		r.Created = s.now()
	}
	return nil
}

func (s *Store) createRun(ctx context.Context, tx pgx.Tx, r *bridge.Run) error {
	usage, err := json.Marshal(&r.Usage)
	if err != nil {
		return fmt.Errorf("create run id=%s: usage: %w", r.ID, err)
	}
	dropped, err := marshalList(r.Dropped)
	if err != nil {
		return fmt.Errorf("create run id=%s: dropped: %w", r.ID, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO runs (`+runColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, `+dbNow+` + $21)`,
		r.ID, r.SessionID, r.ClientRunID, r.Principal, r.Inbound, r.Outbound, r.Upstream, r.Model,
		string(r.Status), string(r.StopReason), r.Reason, string(usage), dropped, r.TraceID, r.UpstreamRunID,
		unixNano(r.Created), unixNano(r.Finished), r.LastSeq, string(r.Render),
		s.owner, s.lease.Nanoseconds())
	if pgCode(err) == uniqueViolation {
		if bridge.IdempotencyKeyed(r) && constraintOf(err) == "runs_by_idempotency_key" {
			return bridge.Errorf(bridge.CodeConflict, "create run %q: its idempotency key is another run's", r.ID)
		}
		return bridge.Errorf(bridge.CodeConflict, "run %q exists", r.ID)
	}
	if err != nil {
		return fmt.Errorf("create run id=%s: %w", r.ID, err)
	}
	return nil
}

func marshalList(v []string) (*string, error) {
	if len(v) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := string(b)
	return &out, nil
}

func scanRun(row pgx.Row) (*bridge.Run, error) {
	var (
		r                 bridge.Run
		status, stop      string
		usage             string
		dropped           *string
		created, finished int64
		render            string
		superseded        int64
		commit, firstByte int64
	)
	err := row.Scan(&r.ID, &r.SessionID, &r.ClientRunID, &r.Principal, &r.Inbound, &r.Outbound, &r.Upstream, &r.Model,
		&status, &stop, &r.Reason, &usage, &dropped, &r.TraceID, &r.UpstreamRunID, &created, &finished, &r.LastSeq, &render, &superseded,
		&commit, &firstByte)
	if err != nil {
		return nil, err
	}
	r.Status, r.StopReason = bridge.Status(status), bridge.StopReason(stop)
	if usage != "" {
		if err := json.Unmarshal([]byte(usage), &r.Usage); err != nil {
			return nil, fmt.Errorf("run id=%s: usage: %w", r.ID, err)
		}
	}
	if dropped != nil {
		if err := json.Unmarshal([]byte(*dropped), &r.Dropped); err != nil {
			return nil, fmt.Errorf("run id=%s: dropped: %w", r.ID, err)
		}
	}
	r.Created, r.Finished = fromUnixNano(created), fromUnixNano(finished)
	r.FirstCommit, r.FirstClientByte = fromUnixNano(commit), fromUnixNano(firstByte)
	r.Superseded = superseded != 0
	if render != "" {
		r.Render = json.RawMessage(render)
	}
	return &r, nil
}

func (s *Store) Run(ctx context.Context, id string) (*bridge.Run, error) {
	r, err := scanRun(s.db().QueryRow(ctx, `SELECT `+runSelect+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "run %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("run id=%s: %w", id, err)
	}
	return r, nil
}

// RunByClientID returns the run principal's client created with
// clientRunID, the newest if it did so more than once.
func (s *Store) RunByClientID(ctx context.Context, principal, clientRunID string) (*bridge.Run, error) {
	if clientRunID == "" {
		return nil, bridge.Errorf(bridge.CodeNotFound, "run with empty client run id not found")
	}
	r, err := scanRun(s.db().QueryRow(ctx, `SELECT `+runSelect+` FROM runs
		WHERE principal = $1 AND client_run_id = $2 AND client_run_id <> ''
		ORDER BY created DESC, ord DESC LIMIT 1`, principal, clientRunID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bridge.Errorf(bridge.CodeNotFound, "run with client run id %q not found", clientRunID)
	}
	if err != nil {
		return nil, fmt.Errorf("run by client id: %w", err)
	}
	return r, nil
}

// ListRuns returns the runs f selects, newest first.
func (s *Store) ListRuns(ctx context.Context, f bridge.RunFilter) ([]*bridge.Run, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.SessionID != "" {
		add("session_id = $%d", f.SessionID)
	}
	if f.Principal != "" {
		add("principal = $%d", f.Principal)
	}
	if f.Status != "" {
		add("status = $%d", string(f.Status))
	}
	if f.Inbound != "" {
		add("inbound = $%d", f.Inbound)
	}
	if f.Outbound != "" {
		add("outbound = $%d", f.Outbound)
	}
	if f.Model != "" {
		add("model = $%d", f.Model)
	}
	if !f.Since.IsZero() {
		add("created >= $%d", f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		add("created < $%d", f.Until.UnixNano())
	}
	if f.Before != "" {
		add("(created, ord) < (SELECT created, ord FROM runs WHERE id = $%d)", f.Before)
	}
	q := `SELECT ` + runSelect + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created DESC, ord DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := s.db().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []*bridge.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// Commit writes b atomically: its new sessions and runs, its events, the
// changes of its runs and its messages, or nothing. An event already
// stored fails the batch with CodeConflict; an event, run or message of a
// run that does not exist fails it with CodeNotFound.
func (s *Store) Commit(ctx context.Context, b *bridge.Batch) error {
	if b == nil || len(b.Sessions) == 0 && len(b.NewRuns) == 0 && len(b.Events) == 0 && len(b.Runs) == 0 && len(b.Messages) == 0 && len(b.Timings) == 0 {
		return nil
	}
	for _, sess := range b.Sessions {
		if sess.ID == "" {
			return bridge.Errorf(bridge.CodeInvalid, "create session: empty id")
		}
		s.sessionTimes(sess)
	}
	for _, r := range b.NewRuns {
		if err := s.checkRun(r); err != nil {
			return err
		}
	}
	if len(b.Sessions) == 0 && len(b.NewRuns) == 0 && len(b.Runs) == 0 && len(b.Messages) == 0 && len(b.Timings) == 0 {
		// The hot path, a batch of deltas: one statement, no transaction.
		return s.db().appendEvents(ctx, b.Events)
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		for _, sess := range b.Sessions {
			if err := createSession(ctx, tx, sess); err != nil {
				return err
			}
		}
		for _, r := range b.NewRuns {
			if err := s.createRun(ctx, tx, r); err != nil {
				return err
			}
		}
		if err := appendEvents(ctx, tx, b.Events); err != nil {
			return err
		}
		for _, r := range b.Runs {
			if err := s.updateRun(ctx, tx, r); err != nil {
				return err
			}
		}
		for _, t := range b.Timings {
			if _, err := tx.Exec(ctx, `UPDATE runs SET first_commit = coalesce(nullif(first_commit, 0), $1),
				first_byte = coalesce(nullif(first_byte, 0), $2) WHERE id = $3`, unixNano(t.FirstCommit), unixNano(t.FirstClientByte), t.RunID); err != nil {
				return fmt.Errorf("set timing run=%s: %w", t.RunID, err)
			}
		}
		return s.addMessages(ctx, tx, b.Messages, "", time.Time{})
	})
}

// querier is a transaction or the pool (db): what appendEvents runs on.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// eventsSQL inserts the events of its arrays ($1-$6) if every run of $7
// (their runs, each once, in the order of their first event) exists,
// numbers them in their sessions' commit order, and notifies those runs'
// followers on channel $8 (with the notification bodies of $9, one a run
// of $7: watch.go's channel; a run of a session gets its principal and
// session as the notification's last line, within PostgreSQL's 8000
// bytes: without its events when they no longer fit): one statement, so a batch of nothing but events
// is one round trip, atomic with no transaction around it. Each run of a
// session takes the session's next number (session_seqs, whose rows it
// updates in one order, (principal, id), so two batches that touch the
// same sessions cannot deadlock; a row stays locked until the statement's
// transaction commits, so a session's numbers are committed in order). It
// answers how many events it inserted (0 when a run is missing), how many
// runs it notified, and the numbered runs with their numbers. Events have
// no foreign key to runs (migration 0008): its check, a trigger per row,
// cost half a batch's time; runs are never deleted, so the check here
// suffices. The first event (the lowest seq) of each numbered run of a
// batch ($10) is marked as opening the run's commit (events.opens): the
// index of those, one entry a run's commit rather than one an event,
// finds a session's events from a number on (SessionEvents).
const eventsSQL = `WITH batch AS (
		SELECT b.id, b.i, r.principal, r.session_id
		FROM unnest($7::text[]) WITH ORDINALITY AS b(id, i) JOIN runs r ON r.id = b.id),
	ok AS (SELECT count(*) = cardinality($7::text[]) AS ok FROM batch),
	numbered AS (
		SELECT id, principal, session_id,
			row_number() OVER (PARTITION BY principal, session_id ORDER BY i) AS k,
			count(*) OVER (PARTITION BY principal, session_id) AS n
		FROM batch WHERE session_id <> '' AND (SELECT ok FROM ok)),
	counted AS (
		INSERT INTO session_seqs (principal, session_id, last_seq)
		SELECT DISTINCT ON (principal, session_id) principal, session_id, n FROM numbered ORDER BY principal, session_id
		ON CONFLICT (principal, session_id) DO UPDATE SET last_seq = session_seqs.last_seq + EXCLUDED.last_seq
		RETURNING principal, session_id, last_seq),
	run_sseq AS (
		SELECT n.id, c.last_seq - n.n + n.k AS sseq, json_build_array(n.principal, n.session_id)::text AS named
		FROM numbered n JOIN counted c USING (principal, session_id)),
	ins AS (
		INSERT INTO events (run_id, seq, kind, payload, upstream_id, time, sseq, opens)
		SELECT e.run_id, e.seq, e.kind, e.payload, e.up, e.time, coalesce(rs.sseq, 0), e.opens AND rs.sseq IS NOT NULL
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $10::bool[])
			AS e(run_id, seq, kind, payload, up, time, opens)
		LEFT JOIN run_sseq rs ON rs.id = e.run_id
		WHERE (SELECT ok FROM ok)
		RETURNING 1),
	note AS (SELECT pg_notify($8, CASE
			WHEN rs.id IS NULL THEN CASE WHEN b.body = '' THEN b.id ELSE '0 ' || b.body END
			WHEN b.body <> '' AND octet_length(b.body) + octet_length(rs.named) < 7960
				THEN rs.sseq::text || ' ' || b.body || E'\n' || rs.named
			WHEN octet_length(b.id) + octet_length(rs.named) < 7960 THEN rs.sseq::text || ' ' || b.id || E'\n' || rs.named
			ELSE b.id END)
		FROM unnest($7::text[], $9::text[]) AS b(id, body) LEFT JOIN run_sseq rs ON rs.id = b.id
		WHERE EXISTS (SELECT 1 FROM ins))
	SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM note),
		coalesce((SELECT array_agg(id ORDER BY id) FROM run_sseq), '{}'::text[]),
		coalesce((SELECT array_agg(sseq ORDER BY id) FROM run_sseq), '{}'::bigint[])`

// appendEvents inserts evs and notifies their runs' followers (delivered
// when q's transaction commits), in one statement.
func appendEvents(ctx context.Context, q querier, evs []bridge.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var (
		runs     = make([]string, len(evs))
		seqs     = make([]int64, len(evs))
		kinds    = make([]string, len(evs))
		payloads = make([]string, len(evs))
		ups      = make([]string, len(evs))
		times    = make([]int64, len(evs))
		distinct []string
	)
	opens := make([]bool, len(evs))
	var first []int // of each run of distinct, the index of its lowest seq
	for i := range evs {
		e := evs[i]
		runs[i], seqs[i], kinds[i], ups[i], times[i] = e.RunID, e.Seq, string(e.Kind), e.UpstreamID, unixNano(e.Time)
		switch k := slices.Index(distinct, e.RunID); {
		case k < 0:
			distinct = append(distinct, e.RunID)
			first = append(first, i)
		case e.Seq < seqs[first[k]]:
			first[k] = i
		}
		e.RunID, e.Seq, e.Time, e.SessionSeq = "", 0, time.Time{}, 0 // the columns hold them
		p, err := json.Marshal(&e)
		if err != nil {
			return fmt.Errorf("append event run=%s seq=%d: encode: %w", runs[i], seqs[i], err)
		}
		payloads[i] = string(p)
	}
	var (
		inserted, notified int64
		numbered           []string // the runs of a session, and their numbers
		numbers            []int64
	)
	for _, i := range first {
		opens[i] = true
	}
	notes := notifyBodies(distinct, runs, seqs, times, payloads)
	err := q.QueryRow(ctx, eventsSQL, runs, seqs, kinds, payloads, ups, times, distinct, channel, notes, opens).Scan(&inserted, &notified, &numbered, &numbers)
	switch {
	case pgCode(err) == uniqueViolation:
		return bridge.Errorf(bridge.CodeConflict, "append events run=%s seq=%d..: already committed", runs[0], seqs[0])
	case err != nil:
		return fmt.Errorf("append events run=%s seq=%d..: %w", runs[0], seqs[0], err)
	case inserted != int64(len(evs)):
		return bridge.Errorf(bridge.CodeNotFound, "append events run=%s seq=%d..: run not found", runs[0], seqs[0])
	}
	for i := range evs {
		if k := slices.Index(numbered, evs[i].RunID); k >= 0 && k < len(numbers) {
			evs[i].SessionSeq = numbers[k]
		}
	}
	return nil
}

// notifyBodies makes the notification of each run of distinct that
// carries its events (watch.go's channel, but for the session seq the
// statement puts before it), or "" where they do not fit: that run's
// notification is its id alone, and its followers read the store.
func notifyBodies(distinct, runs []string, seqs, times []int64, payloads []string) []string {
	notes := make([]string, len(distinct))
	size := make([]int, len(distinct))
	for k, run := range distinct {
		size[k] = 24 + len(run) // the session seq, a space, the id and a newline
	}
	at := func(run string) int {
		if len(distinct) == 1 {
			return 0
		}
		return slices.Index(distinct, run)
	}
	for i, run := range runs {
		size[at(run)] += 2*20 + 3 + len(payloads[i])
		if strings.IndexByte(payloads[i], '\n') >= 0 { // not in JSON as json.Marshal writes it, but a line is an event's
			size[at(run)] = notifyLimit + 1
		}
	}
	var b strings.Builder
	for k, run := range distinct {
		if size[k] > notifyLimit {
			continue
		}
		b.Reset()
		b.Grow(size[k])
		b.WriteString(run)
		for i := range runs {
			if runs[i] != run {
				continue
			}
			b.WriteByte('\n')
			b.WriteString(strconv.FormatInt(seqs[i], 10))
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(times[i], 10))
			b.WriteByte('\n')
			b.WriteString(payloads[i])
		}
		notes[k] = b.String()
	}
	return notes
}

// updateRun writes the mutable fields of r.
//
// A run that goes back to running (continued with the client's tool
// results) is leased to this process, which drives it from then on.
func (s *Store) updateRun(ctx context.Context, tx pgx.Tx, r *bridge.Run) error {
	usage, err := json.Marshal(&r.Usage)
	if err != nil {
		return fmt.Errorf("update run id=%s: usage: %w", r.ID, err)
	}
	dropped, err := marshalList(r.Dropped)
	if err != nil {
		return fmt.Errorf("update run id=%s: dropped: %w", r.ID, err)
	}
	tag, err := tx.Exec(ctx, `UPDATE runs SET outbound = $1, upstream = $2, model = $3, status = $4, stop_reason = $5,
		reason = $6, usage = $7, dropped = $8, trace_id = $9, upstream_run_id = $10, finished = $11,
		last_seq = GREATEST(last_seq, $12, coalesce((SELECT max(seq) FROM events WHERE run_id = runs.id), 0)),
		owner = CASE WHEN status <> 'running' AND $4 = 'running' THEN $14 ELSE owner END,
		lease_until = CASE WHEN status <> 'running' AND $4 = 'running' THEN `+dbNow+` + $15 ELSE lease_until END,
		first_commit = coalesce(nullif(first_commit, 0), $16), first_byte = coalesce(nullif(first_byte, 0), $17)
		WHERE id = $13`,
		r.Outbound, r.Upstream, r.Model, string(r.Status), string(r.StopReason), r.Reason, string(usage), dropped,
		r.TraceID, r.UpstreamRunID, unixNano(r.Finished), r.LastSeq, r.ID, s.owner, s.lease.Nanoseconds(),
		unixNano(r.FirstCommit), unixNano(r.FirstClientByte))
	if err != nil {
		return fmt.Errorf("update run id=%s: %w", r.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return bridge.Errorf(bridge.CodeNotFound, "update run: run %q not found", r.ID)
	}
	return nil
}

// addMessages appends msgs to their runs' sessions, in order. With run set,
// every message belongs to it, and a zero Created is def.
func (s *Store) addMessages(ctx context.Context, tx pgx.Tx, msgs []bridge.Message, run string, def time.Time) error {
	if len(msgs) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	for i := range msgs {
		m := msgs[i]
		if run != "" {
			m.RunID = run
		}
		if m.Created.IsZero() {
			m.Created = def
			if m.Created.IsZero() {
				m.Created = s.now()
			}
		}
		runID, created := m.RunID, unixNano(m.Created)
		m.ID, m.Created = "", time.Time{}
		p, err := json.Marshal(&m)
		if err != nil {
			return fmt.Errorf("add message run=%s: encode: %w", runID, err)
		}
		batch.Queue(`INSERT INTO messages (session_id, principal, run_id, role, payload, created, superseded)
			SELECT session_id, principal, id, $2, $3, $4, superseded <> 0 FROM runs WHERE id = $1`, runID, string(m.Role), string(p), created)
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	for i := range msgs {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("add message run=%s: %w", msgs[i].RunID, err)
		}
		if tag.RowsAffected() == 0 {
			return bridge.Errorf(bridge.CodeNotFound, "add message: run %q not found", cmpOr(run, msgs[i].RunID))
		}
	}
	return br.Close()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Events returns up to limit events of run with seq > after, in seq order.
func (s *Store) Events(ctx context.Context, run string, after int64, limit int) ([]bridge.Event, error) {
	lim := int64(math.MaxInt64)
	if limit > 0 {
		lim = int64(limit)
	}
	rows, err := s.db().Query(ctx, `SELECT run_id, seq, sseq, payload, time FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		run, after, lim)
	if err != nil {
		return nil, fmt.Errorf("events run=%s after=%d: %w", run, after, err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("events run=%s after=%d: %w", run, after, err)
	}
	return evs, nil
}

// scanMessages reads rows of (position, run_id, created, payload).
func scanMessages(rows pgx.Rows, msgs []bridge.Message) ([]bridge.Message, error) {
	for rows.Next() {
		var (
			pos, created int64
			run          *string
			payload      []byte
		)
		if err := rows.Scan(&pos, &run, &created, &payload); err != nil {
			return nil, err
		}
		var m bridge.Message
		if err := json.Unmarshal(payload, &m); err != nil {
			return nil, fmt.Errorf("message %d: decode: %w", pos, err)
		}
		m.ID = "m" + strconv.FormatInt(pos, 10)
		if run != nil {
			m.RunID = *run
		}
		m.Created = fromUnixNano(created)
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// Messages returns up to limit messages of principal's session, oldest first, ending
// before position before (0: the newest), and whether older ones exist.
//
// Messages leaves the superseded messages out; AllMessages does not.
func (s *Store) Messages(ctx context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	return s.messages(ctx, messagesInForce, principal, session, before, limit)
}

func (s *Store) AllMessages(ctx context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	return s.messages(ctx, messagesAll, principal, session, before, limit)
}

// The queries of Messages and AllMessages.
const (
	messagesInForce = `SELECT position, run_id, created, payload FROM messages
		WHERE session_id = $1 AND principal = $4 AND position < $2 AND NOT superseded ORDER BY position DESC LIMIT $3`
	messagesAll = `SELECT position, run_id, created, payload FROM messages
		WHERE session_id = $1 AND principal = $4 AND position < $2 ORDER BY position DESC LIMIT $3`
)

func (s *Store) messages(ctx context.Context, query, principal, session string, before int64, limit int) ([]bridge.Message, bool, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	fetch := int64(math.MaxInt64)
	if limit > 0 {
		fetch = int64(limit) + 1 // one more tells whether older ones exist
	}
	rows, err := s.db().Query(ctx, query, session, before, fetch, principal)
	if err != nil {
		return nil, false, fmt.Errorf("messages session=%s: %w", session, err)
	}
	defer rows.Close()
	msgs, err := scanMessages(rows, nil)
	if err != nil {
		return nil, false, fmt.Errorf("messages session=%s: %w", session, err)
	}
	more := limit > 0 && len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	slices.Reverse(msgs)
	return msgs, more, nil
}

// RunMessages returns the messages of run, oldest first.
func (s *Store) RunMessages(ctx context.Context, run string) ([]bridge.Message, error) {
	rows, err := s.db().Query(ctx, `SELECT position, run_id, created, payload FROM messages
		WHERE run_id = $1 ORDER BY position`, run)
	if err != nil {
		return nil, fmt.Errorf("run messages run=%s: %w", run, err)
	}
	defer rows.Close()
	msgs, err := scanMessages(rows, nil)
	if err != nil {
		return nil, fmt.Errorf("run messages run=%s: %w", run, err)
	}
	return msgs, nil
}

// Supersede marks run and every later run of its session (its principal's; by created,
// then creation order) superseded at at, with their messages, in one
// transaction; it returns the ids it marked, oldest first.
func (s *Store) Supersede(ctx context.Context, run string, at time.Time) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx pgx.Tx) error {
		ids = ids[:0]
		var (
			session, principal string
			created, ord       int64
		)
		err := tx.QueryRow(ctx, `SELECT session_id, principal, created, ord FROM runs WHERE id = $1`, run).
			Scan(&session, &principal, &created, &ord)
		if errors.Is(err, pgx.ErrNoRows) {
			return bridge.Errorf(bridge.CodeNotFound, "run %q not found", run)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE runs SET superseded = $1
			WHERE session_id = $2 AND principal = $5 AND superseded = 0 AND (created > $3 OR created = $3 AND ord >= $4)
			RETURNING id, created, ord`, max(unixNano(at), 1), session, created, ord, principal)
		if err != nil {
			return err
		}
		type marked struct {
			id           string
			created, ord int64
		}
		var ms []marked
		for rows.Next() {
			var m marked
			if err := rows.Scan(&m.id, &m.created, &m.ord); err != nil {
				rows.Close()
				return err
			}
			ms = append(ms, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(ms, func(a, b marked) int { return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.ord, b.ord)) })
		for _, m := range ms {
			ids = append(ids, m.id)
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE messages SET superseded = true WHERE run_id = ANY($1)`, ids); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && bridge.ErrorCode(err) != bridge.CodeNotFound {
		return nil, fmt.Errorf("supersede run=%s: %w", run, err)
	}
	return ids, err
}

// PutID records a mapping; an existing (kind, scope, local) is replaced.
func (s *Store) PutID(ctx context.Context, m bridge.IDMapping) error {
	_, err := s.db().Exec(ctx, `INSERT INTO id_map (kind, scope, local, remote) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, scope, local) DO UPDATE SET remote = excluded.remote`,
		string(m.Kind), m.Scope, m.Local, m.Remote)
	if err != nil {
		return fmt.Errorf("put id %s %s: %w", m.Kind, m.Scope, err)
	}
	return nil
}

func (s *Store) RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error) {
	return s.lookupID(ctx, `SELECT remote FROM id_map WHERE kind = $1 AND scope = $2 AND local = $3`, kind, scope, local)
}

func (s *Store) LocalID(ctx context.Context, kind bridge.IDKind, scope, remote string) (string, error) {
	return s.lookupID(ctx, `SELECT local FROM id_map WHERE kind = $1 AND scope = $2 AND remote = $3 LIMIT 1`, kind, scope, remote)
}

func (s *Store) lookupID(ctx context.Context, q string, kind bridge.IDKind, scope, id string) (string, error) {
	var out string
	err := s.db().QueryRow(ctx, q, string(kind), scope, id).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", bridge.Errorf(bridge.CodeNotFound, "no %s id mapped for %q in %s", kind, id, scope)
	}
	if err != nil {
		return "", fmt.Errorf("id map %s %s: %w", kind, scope, err)
	}
	return out, nil
}

// InterruptRunning closes every run left running but those in keep as
// interrupted with reason at now, after its last event; it returns their
// ids, oldest first.
func (s *Store) InterruptRunning(ctx context.Context, reason string, now time.Time, keep ...string) ([]string, error) {
	return s.interrupt(ctx, reason, now, func(id string) bool { return !slices.Contains(keep, id) })
}

// interrupt closes the running runs pick picks as interrupted.
func (s *Store) interrupt(ctx context.Context, reason string, now time.Time, pick func(id string) bool) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx pgx.Tx) error {
		ids = ids[:0]
		rows, err := tx.Query(ctx, `SELECT id, GREATEST(last_seq, coalesce((SELECT max(seq) FROM events WHERE run_id = runs.id), 0))
			FROM runs WHERE status = $1 ORDER BY created, ord FOR UPDATE`, string(bridge.StatusRunning))
		if err != nil {
			return err
		}
		type open struct {
			id   string
			last int64
		}
		var runs []open
		for rows.Next() {
			var o open
			if err := rows.Scan(&o.id, &o.last); err != nil {
				rows.Close()
				return err
			}
			if pick(o.id) {
				runs = append(runs, o)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		finals := make([]bridge.Event, len(runs))
		for i, o := range runs {
			finals[i] = bridge.Event{RunID: o.id, Seq: o.last + 1, Time: now, Kind: bridge.KindFinal, Source: bridge.SourceBridge,
				Final: &bridge.Final{Status: bridge.StatusInterrupted, Reason: reason}}
		}
		// One statement for all: it numbers their sessions in one order.
		if err := appendEvents(ctx, tx, finals); err != nil {
			return err
		}
		for i, o := range runs {
			e := finals[i]
			if _, err := tx.Exec(ctx, `UPDATE runs SET status = $1, reason = $2, finished = $3, last_seq = $4 WHERE id = $5`,
				string(bridge.StatusInterrupted), reason, unixNano(now), e.Seq, o.id); err != nil {
				return err
			}
			ids = append(ids, o.id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("interrupt running runs: %w", err)
	}
	return ids, nil
}

// DeleteEventsBefore deletes the events (and the recordings) of every run
// that ended before t and is not running, and returns how many events it
// deleted.
func (s *Store) DeleteEventsBefore(ctx context.Context, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		// One janitor at a time: the replicas all run one, and the one
		// that finds the lock taken leaves the work to its holder.
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(janitorLock)).Scan(&locked); err != nil || !locked {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM events WHERE run_id IN
			(SELECT id FROM runs WHERE finished <> 0 AND finished < $1 AND status <> $2)`, t.UnixNano(), string(bridge.StatusRunning))
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		// The inspector's recordings of those runs go with their events.
		_, err = tx.Exec(ctx, `DELETE FROM recordings WHERE run_id IN
			(SELECT id FROM runs WHERE finished <> 0 AND finished < $1 AND status <> $2)`, t.UnixNano(), string(bridge.StatusRunning))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete events before %s: %w", t.UTC().Format(time.RFC3339Nano), err)
	}
	return n, nil
}

// janitorLock is the advisory lock of the retention janitor.
const janitorLock = 0x6272696467650002 // "bridge" 2
