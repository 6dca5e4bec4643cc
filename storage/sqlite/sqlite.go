package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/bridge-dev/bridge/bridge"
)

var _ bridge.Store = (*Store)(nil)

// Options configures a Store. The zero value means the defaults.
type Options struct {
	// Now is the clock for times the store fills in itself (a zero Created
	// of a session, run or message, the time a migration was applied).
	// Default time.Now.
	Now func() time.Time
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before it fails. Default 5s.
	BusyTimeout time.Duration
	// ReadConns caps the pool of read connections. Default
	// max(4, runtime.NumCPU()).
	ReadConns int
	// ReadOnly opens the file for reading only, for a tool that inspects a
	// database another process may be writing (the soak's checks): no
	// writer, no migrations (the file must be at this bridge's schema), no
	// checkpointer; every write fails.
	ReadOnly bool
}

// Store is a bridge.Store in one SQLite database file.
//
// A Store is safe for concurrent use by any number of goroutines. Every
// method runs in its own transaction. Writes are serialized in the process
// on a single connection, in the order callers arrive, so a write never fails
// with SQLITE_BUSY because of another write of this Store; reads run on a
// separate pool of connections, concurrently with each other and with the
// writer, and see every write that returned before they began. Another
// process writing the same file is tolerated but waits up to
// Options.BusyTimeout for the lock.
//
// Close must be called once, after every other call has returned; it closes
// the prepared statements and both connection pools.
type Store struct {
	w   *sql.DB // the one writer connection
	r   *sql.DB // read connections (the writer itself for ":memory:")
	c   *sql.DB // the checkpointer's connection (nil for ":memory:")
	now func() time.Time

	closeOnce sync.Once
	closeErr  error

	// The checkpointer moves WAL pages into the database file off the commit
	// path: the writer never checkpoints (and never pays the fsync) itself.
	ckptStop chan struct{}
	ckptDone chan struct{}

	// wsem is held by the one write transaction in progress; it guards the
	// scratch state below.
	wsem chan struct{}

	// Statements prepared once on the writer connection.
	insertEvent   *sql.Stmt
	insertEvents  *sql.Stmt // eventChunk rows at once
	insertPack    *sql.Stmt // a row of consecutive deltas
	lastEvent     *sql.Stmt // the row holding a run's events up to a seq
	updateRun     *sql.Stmt
	setTiming     *sql.Stmt
	insertRun     *sql.Stmt
	insertSession *sql.Stmt
	insertMessage *sql.Stmt
	lastSSeqSt    *sql.Stmt // a session's last SessionSeq (lastSSeqSQL)
	dataVersion   *sql.Stmt // PRAGMA data_version: changes when another connection commits

	// Scratch state of Commit, reused across batches (guarded by wsem).
	buf     bytes.Buffer
	enc     *json.Encoder
	args    []any
	ends    []int
	payload bridge.Event // an event as its payload column holds it
	num     [24]byte

	byRun    map[string][]*bridge.Event // a batch's events by run
	runOrder []string                   // byRun's keys, in batch order
	singles  []*bridge.Event            // a batch's events a row each
	newEnds  []runEnd                   // the batch's last seq of each run
	created  []string                   // the runs the batch creates

	// sessionOf is the session (principal, id) of runs this process
	// created or wrote events of: it never changes, so a batch looks it up
	// once.
	sessionOf map[string]sessionKey

	// lastSSeq is the last SessionSeq of sessions this process numbered
	// events of, while the database's data version is version (no other
	// connection has written since); takenSSeq the numbers the write in
	// progress took, kept in lastSSeq once it commits; sseqChecked that
	// it has compared the data version (event.go, nextSessionSeq).
	lastSSeq    map[sessionKey]int64
	takenSSeq   map[sessionKey]int64
	version     int64
	sseqChecked bool

	// runEnds is the last seq committed of runs this process writes while
	// they run: a batch that goes on after it cannot hold a stored event,
	// so it needs no probe for one. Only committed state is in it.
	runEnds map[string]int64
}

// sessionKey names a session: its principal's, of its id.
type sessionKey struct{ principal, id string }

type runEnd struct {
	run string
	seq int64
}

// Open opens (creating it if needed) the database file at path, applies the
// migrations it lacks and prepares the write statements. path ":memory:"
// opens a private in-memory database on one connection, for tests.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: open %s: path must not contain '?' or '#'", path)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = 5 * time.Second
	}
	if opt.ReadConns <= 0 {
		opt.ReadConns = max(4, runtime.NumCPU())
	}

	s := &Store{now: opt.Now, wsem: make(chan struct{}, 1), byRun: make(map[string][]*bridge.Event), runEnds: make(map[string]int64),
		sessionOf: make(map[string]sessionKey), lastSSeq: make(map[sessionKey]int64), takenSSeq: make(map[sessionKey]int64)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)

	params := url.Values{}
	params.Set("_journal_mode", "WAL")
	params.Set("_busy_timeout", strconv.FormatInt(opt.BusyTimeout.Milliseconds(), 10))
	params.Set("_synchronous", "NORMAL")
	params.Set("_foreign_keys", "on")

	memory := path == ":memory:"
	if opt.ReadOnly {
		return openReadOnly(ctx, s, path, params, opt)
	}
	if !memory {
		if err := createPrivate(path); err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
	}
	wp := cloneValues(params)
	wp.Set("_txlock", "immediate") // take the write lock at BEGIN, never upgrade
	w, err := sql.Open("sqlite3", path+"?"+wp.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = w
	if memory {
		s.r = w
	} else {
		rp := cloneValues(params)
		rp.Set("_query_only", "on")
		r, err := sql.Open("sqlite3", path+"?"+rp.Encode())
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		r.SetMaxOpenConns(opt.ReadConns)
		r.SetMaxIdleConns(opt.ReadConns)
		s.r = r
	}

	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if !memory {
		c, err := sql.Open("sqlite3", path+"?"+params.Encode())
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		c.SetMaxOpenConns(1)
		s.c = c
		if _, err := s.w.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = `+strconv.Itoa(walLimit)); err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		s.ckptStop, s.ckptDone = make(chan struct{}), make(chan struct{})
		go s.checkpointer(checkpointEvery)
	}
	return s, nil
}

// openReadOnly opens s's read pool only, on a file that must exist and be at
// this bridge's schema.
func openReadOnly(ctx context.Context, s *Store, path string, params url.Values, opt Options) (*Store, error) {
	if path == ":memory:" {
		return nil, errors.New("sqlite: open: a read-only :memory: database is empty")
	}
	rp := cloneValues(params)
	rp.Del("_journal_mode") // setting it writes
	rp.Set("mode", "ro")
	rp.Set("_query_only", "on")
	r, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?"+rp.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	r.SetMaxOpenConns(opt.ReadConns)
	r.SetMaxIdleConns(opt.ReadConns)
	s.r = r
	if err := s.checkSchema(ctx); err != nil {
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	return s, nil
}

// Integrity runs SQLite's integrity check: "ok", or what it found.
func (s *Store) Integrity(ctx context.Context) (string, error) {
	var out []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `PRAGMA integrity_check`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			out = append(out, line)
		}
		return rows.Err()
	})
	if err != nil {
		return "", fmt.Errorf("integrity check: %w", err)
	}
	return strings.Join(out, "; "), nil
}

// checkpointEvery is how often the checkpointer runs.
const checkpointEvery = 250 * time.Millisecond

// Bounds of the WAL. Past restartFrames frames (16 MiB of 4 KiB pages) the
// checkpointer makes the WAL restart; a file a burst made longer than
// walLimit bytes is cut back to it when it does.
const (
	restartFrames = 4096
	walLimit      = 64 << 20
)

// checkpointer checkpoints until Close. A passive checkpoint copies the
// committed WAL pages into the database while writes go on, so no commit
// waits for its copying or its fsyncs; it runs again while the last pass
// left many frames behind. But the WAL starts over only when a write begins
// with every frame copied, and under steady writes a checkpoint never
// catches up with them: the file would grow as long as the load lasts
// (1.6 GB in 7 s of BenchmarkCommitLatency). So once the WAL holds
// restartFrames, a last pass holds the writer off (wsem) to copy the few
// frames left, and the next commit starts the WAL over. That pass is the
// one stall a commit can meet: the copy of those frames and two fsyncs.
func (s *Store) checkpointer(every time.Duration) {
	defer close(s.ckptDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.ckptStop:
			return
		}
		frames := s.checkpoint()
		for pass := 0; pass < 3 && frames >= restartFrames; pass++ {
			next := s.checkpoint()
			if next < frames || next-frames < 512 {
				frames = next
				break
			}
			frames = next
		}
		if frames < restartFrames {
			continue // an idle moment restarts a short WAL
		}
		select {
		case s.wsem <- struct{}{}:
		case <-s.ckptStop:
			return
		}
		s.checkpoint()
		<-s.wsem
	}
}

// checkpoint runs a passive checkpoint and returns how many frames the WAL
// held (-1 when it could not run: it is retried at the next tick).
func (s *Store) checkpoint() int {
	var busy, frames, done int
	if err := s.c.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
		return -1
	}
	return frames
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v)+1)
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// init migrates the schema and prepares the write statements.
func (s *Store) init(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	var err error
	prepare := func(dst **sql.Stmt, query string) {
		if err == nil {
			*dst, err = s.w.PrepareContext(ctx, query)
		}
	}
	prepare(&s.insertEvent, `INSERT INTO events (run_id, seq, kind, payload, upstream_id, time, sseq)
		VALUES (?, ?, ?, CAST(? AS TEXT), ?, ?, ?)`)
	prepare(&s.insertPack, `INSERT INTO events (run_id, seq, kind, payload, upstream_id, time, last, sseq)
		VALUES (?, ?, 'pack', CAST(? AS TEXT), '', ?, ?, ?)`)
	prepare(&s.lastEvent, `SELECT seq, max(seq, last) FROM events WHERE run_id = ? AND seq <= ?
		ORDER BY seq DESC LIMIT 1`)
	prepare(&s.insertEvents, `INSERT INTO events (run_id, seq, kind, payload, upstream_id, time, sseq) VALUES `+
		strings.Repeat(`(?, ?, ?, CAST(? AS TEXT), ?, ?, ?), `, eventChunk-1)+`(?, ?, ?, CAST(? AS TEXT), ?, ?, ?)`)
	prepare(&s.lastSSeqSt, lastSSeqSQL)
	prepare(&s.dataVersion, `PRAGMA data_version`)
	prepare(&s.updateRun, `UPDATE runs SET outbound = ?, upstream = ?, model = ?, status = ?, stop_reason = ?,
		reason = ?, usage = CAST(? AS TEXT), dropped = CAST(? AS TEXT), trace_id = ?, upstream_run_id = ?,
		finished = ?, first_commit = coalesce(nullif(first_commit, 0), ?), first_byte = coalesce(nullif(first_byte, 0), ?),
		last_seq = max(last_seq, ?, coalesce((SELECT max(seq, last) FROM events WHERE run_id = runs.id ORDER BY seq DESC LIMIT 1), 0))
		WHERE id = ?`)
	prepare(&s.setTiming, `UPDATE runs SET first_commit = coalesce(nullif(first_commit, 0), ?), first_byte = coalesce(nullif(first_byte, 0), ?)
		WHERE id = ?`)
	prepare(&s.insertRun, `INSERT INTO runs (`+runColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ?, ?, ?, ?, ?, ?)`)
	prepare(&s.insertSession, `INSERT INTO sessions (id, principal, created, updated, state)
		VALUES (?, ?, ?, ?, CAST(? AS TEXT))`)
	prepare(&s.insertMessage, `INSERT INTO messages (session_id, principal, run_id, role, payload, fingerprint, created, superseded)
		SELECT session_id, principal, id, ?, CAST(? AS TEXT), ?, ?, superseded <> 0 FROM runs WHERE id = ?`)
	return err
}

// Close closes the prepared statements and the database. It must not be
// called while other calls are in progress. Closing again returns what the
// first Close did.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	var errs []error
	if s.ckptStop != nil {
		close(s.ckptStop)
		<-s.ckptDone
	}
	if s.c != nil {
		errs = append(errs, s.c.Close())
	}
	for _, st := range []*sql.Stmt{s.insertEvent, s.insertEvents, s.insertPack, s.lastEvent, s.updateRun, s.setTiming, s.insertRun, s.insertSession, s.insertMessage, s.lastSSeqSt, s.dataVersion} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	// Readers first: the last connection to close checkpoints the WAL.
	if s.r != nil && s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// errReadOnly is what a write to a store opened ReadOnly returns.
var errReadOnly = errors.New("the store is open read-only")

// write runs fn in a write transaction on the writer connection and commits
// it when fn returns nil.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.writeThen(ctx, fn, nil)
}

// writeThen is write that calls then, still holding wsem, once the
// transaction has committed.
func (s *Store) writeThen(ctx context.Context, fn func(tx *sql.Tx) error, then func()) error {
	select {
	case s.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.wsem }()

	if s.w == nil {
		return errReadOnly
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if then != nil {
		then()
	}
	return nil
}

// read runs fn in a transaction on a read connection, so every query of fn
// sees one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// unixNano is t in unix nanoseconds; the zero time is 0.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano reverses unixNano, in UTC.
func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// constraint reports which constraint err violated: sqlite3.ErrConstraintUnique,
// ErrConstraintPrimaryKey, ErrConstraintForeignKey..., or 0 for any other error.
func constraint(err error) sqlite3.ErrNoExtended {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrConstraint {
		return se.ExtendedCode
	}
	return 0
}

// isDuplicate reports whether err is a primary-key or unique violation.
func isDuplicate(err error) bool {
	c := constraint(err)
	return c == sqlite3.ErrConstraintPrimaryKey || c == sqlite3.ErrConstraintUnique
}

// marshalList marshals v, or returns nil (NULL) for an empty list.
func marshalList(v []string) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	return json.Marshal(v)
}

// nullBytes returns b, or nil (NULL) when it is empty.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// createPrivate creates the database file, when it does not exist, with
// mode 0600 whatever the umask: it holds every conversation. SQLite
// creates the -wal and -shm files with the mode of the database file. An
// existing file keeps the mode its owner gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil { // a umask may have taken the owner's bits
		f.Close()
		return err
	}
	return f.Close()
}
