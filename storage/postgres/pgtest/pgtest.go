// Package pgtest runs a private PostgreSQL server for tests: initdb into a
// temporary directory, then postgres on 127.0.0.1 and a free port, with
// trust authentication, shared by every test of the binary.
//
// The server exits with the test binary however it ends: it runs under a
// small shell that waits on its stdin, which the binary holds open, and
// stops the server (an immediate shutdown) when it reads EOF. As root (CI),
// the server runs as the postgres user, which refuses to run as root.
//
// For faults, Private starts a server of one test's own that the test stops
// and starts again, and NewProxy puts a link the test cuts between a
// replica and a server.
//
// It needs PostgreSQL's server binaries (Debian: postgresql); without them
// Start fails the test, saying so (.ci/run installs them when missing).
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTimeout bounds initdb and the server's start.
const startTimeout = 2 * time.Minute

// Start returns the URL of the shared server's postgres database
// (postgres://postgres@127.0.0.1:<port>/postgres), starting the server on
// the first call. It fails tb when the server cannot be started or has
// died since.
func Start(tb testing.TB) string {
	tb.Helper()
	s, err := shared()
	if err == nil {
		err = s.alive()
	}
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return s.url
}

var schemas atomic.Int64

// Schema returns a URL of the shared server whose connections work in a
// new, empty schema of their own (search_path), so each test gets an empty
// database without the cost of creating one.
func Schema(tb testing.TB) string {
	tb.Helper()
	base := Start(tb)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), schemas.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	return URLWithSchema(base, name)
}

var shared = sync.OnceValues(start)

type server struct {
	url   string
	stdin io.WriteCloser // held open for the life of the binary: its EOF stops the server
	exit  chan struct{}
	log   *bytes.Buffer
	mu    *sync.Mutex
}

func (s *server) alive() error {
	select {
	case <-s.exit:
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("the PostgreSQL server at %s exited; its output:\n%s", s.url, s.log)
	default:
		return nil
	}
}

// binDir finds PostgreSQL's server binaries: on PATH, else the newest of
// Debian's /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql; .ci/run installs it when missing)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// credential is the user the server runs as: the postgres user when this
// process is root, else this process's own.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres user to run the server as: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func start() (*server, error) { return startServer(false) }

// startServer initdbs a data directory and starts a server on it. A durable
// server commits synchronously (an acknowledged commit survives its
// restart); the shared one need not, and commits faster.
func startServer(durable bool) (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bridge-pgtest-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}

	port, err := freePort()
	if err != nil {
		return nil, err
	}
	syncCommit := "off"
	if durable {
		syncCommit = "on"
	}
	// The shell starts the server, then reads its stdin: "stop" stops the
	// server (a fast shutdown, as a restart of the service does), "start"
	// starts it again; at EOF (the test binary's end) it stops it at once
	// and removes the directory.
	script := `run() { "$1/postgres" -D "$2/data" -p "$3" -k "$2" -c listen_addresses=127.0.0.1 -c fsync=off ` +
		`-c synchronous_commit="$4" -c full_page_writes=off -c max_connections=200 & pid=$!; }; run "$@"; ` +
		`while read -r cmd; do case "$cmd" in stop) kill -INT $pid; wait $pid;; start) run "$@";; esac; done; ` +
		`kill -QUIT $pid 2>/dev/null; wait $pid; rm -rf "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, "pgtest", bin, dir, strconv.Itoa(port), syncCommit)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	var mu sync.Mutex
	log := &bytes.Buffer{}
	w := &lockedWriter{mu: &mu, w: log}
	cmd.Stdout, cmd.Stderr = w, w
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &server{url: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stdin: stdin,
		exit: make(chan struct{}), log: log, mu: &mu}
	go func() { _ = cmd.Wait(); close(s.exit) }()
	if err := s.waitUp(ctx); err != nil {
		_ = stdin.Close()
		return nil, err
	}
	return s, nil
}

// waitUp waits for the server to accept connections.
func (s *server) waitUp(ctx context.Context) error {
	for {
		if err := s.alive(); err != nil {
			return err
		}
		c, err := pgx.Connect(ctx, s.url)
		if err == nil {
			c.Close(ctx)
			return nil
		}
		if ctx.Err() != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Errorf("postgres did not accept connections in %s: %v; its output:\n%s", startTimeout, err, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Server is a private PostgreSQL server a test stops and starts again
// (Private).
type Server struct{ s *server }

// Private starts a server of the test's own, which it may stop and start
// (the shared one serves every test of the binary and must stay up). Its
// commits are synchronous: one the server acknowledged survives a
// restart. It stops with the test.
func Private(tb testing.TB) *Server {
	tb.Helper()
	s, err := startServer(true)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { _ = s.stdin.Close(); <-s.exit })
	return &Server{s}
}

// URL is the server's postgres database.
func (p *Server) URL() string { return p.s.url }

// Stop shuts the server down (a fast shutdown: its clients are
// disconnected, what it acknowledged is kept) and returns once it refuses
// connections.
func (p *Server) Stop(tb testing.TB) {
	tb.Helper()
	p.send(tb, "stop")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, p.s.url)
		if err != nil {
			return
		}
		c.Close(ctx)
		if ctx.Err() != nil {
			tb.Fatalf("pgtest: the server still accepts connections %s after stop", startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Start starts the stopped server again and returns once it accepts
// connections.
func (p *Server) Start(tb testing.TB) {
	tb.Helper()
	p.send(tb, "start")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := p.s.waitUp(ctx); err != nil {
		tb.Fatalf("pgtest: restart: %v", err)
	}
}

func (p *Server) send(tb testing.TB, cmd string) {
	if _, err := io.WriteString(p.s.stdin, cmd+"\n"); err != nil {
		tb.Fatalf("pgtest: %s: %v", cmd, err)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.w.(*bytes.Buffer); ok && b.Len() > 1<<20 {
		return len(p), nil // bounded: the first MiB says what went wrong
	}
	return l.w.Write(p)
}

// URLWithSchema is base with its connections' search_path set to schema.
func URLWithSchema(base, schema string) string {
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
