// Package adkreal runs the real ADK api_server for tests: `adk api_server`
// from @google/adk-devtools 2.0.0 (with @google/adk 2.0.0, versions pinned
// by testdata/package-lock.json), serving one app, "scripted", whose fake
// model answers "turn <n>: <last user text>" (n counts the user turns of
// its request, so a test sees whether the session kept the earlier ones),
// streamed word by word as partial events when the request streams.
//
// Start is the one entry point. The first call in a test binary installs
// the packages with `npm ci` into a cache directory keyed by the lockfile
// (os.UserCacheDir()/bridge-adkreal/<hash>; later runs and other packages
// reuse it, and it may be deleted at any time), then starts the server on
// 127.0.0.1 and a free port. Every test of the binary shares that server
// (an in-memory session store: tests keep apart by user or session id);
// it exits with the test binary, which holds its stdin open: when the
// binary ends, however it ends, the server reads EOF and stops.
//
// It needs Node.js (20) and npm on PATH and the npm registry on the first
// run; without them Start fails the test, saying so (.ci/run installs
// them when missing).
package adkreal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:embed testdata/package.json testdata/package-lock.json testdata/serve.mjs testdata/agents
var files embed.FS

// Bounds on the slow steps. The install downloads about 500 packages on a
// cold npm cache; the server loads @google/adk, seconds on a busy machine.
const (
	installTimeout = 5 * time.Minute
	startTimeout   = 2 * time.Minute
	attempts       = 3 // a free port taken by someone else before the server binds it
)

// App is the app the server serves (the fake model's agent).
const App = "scripted"

// Start returns the base URL (http://127.0.0.1:<port>, no trailing slash)
// of the real ADK api_server shared by the tests of this binary, starting
// it on the first call. It fails tb when the server cannot be installed
// or started, or has died since.
func Start(tb testing.TB) string {
	tb.Helper()
	s, err := shared()
	if err == nil {
		err = s.alive()
	}
	if err != nil {
		tb.Fatalf("adkreal: %v", err)
	}
	return s.url
}

var shared = sync.OnceValues(start)

// errExited is a server that exited while starting (its port was taken,
// say): start tries again on another port.
var errExited = errors.New("the ADK api_server exited while starting")

// server is the running api_server.
type server struct {
	url   string
	stdin io.Closer // held open for the life of the binary: its EOF stops the server
	exit  chan struct{}
	log   *tail
}

// alive reports an error when the server has exited.
func (s *server) alive() error {
	select {
	case <-s.exit:
		return fmt.Errorf("the ADK api_server at %s exited; its output:\n%s", s.url, s.log)
	default:
		return nil
	}
}

func start() (*server, error) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the real ADK api_server needs Node.js 20 and npm on PATH (Debian: apt-get install nodejs npm; .ci/run installs them when missing)", err)
	}
	dir, err := install()
	if err != nil {
		return nil, err
	}
	app, err := writeApp(dir)
	if err != nil {
		return nil, err
	}
	for i := 1; ; i++ {
		s, err := run(node, dir, app)
		if !errors.Is(err, errExited) || i == attempts {
			return s, err
		}
	}
}

// cacheRoot is where installs live, one directory per lockfile.
func cacheRoot() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "bridge-adkreal")
}

// install runs npm ci into the cache directory of this lockfile, once:
// an install that completed is kept (its .complete marker), one that did
// not is redone. Concurrent test binaries take a file lock; the install
// is built aside and renamed into place, so a directory seen complete is.
func install() (string, error) {
	pkg, _ := files.ReadFile("testdata/package.json")
	lock, _ := files.ReadFile("testdata/package-lock.json")
	key := digest(pkg, lock)
	root := cacheRoot()
	dir := filepath.Join(root, key)
	if done(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if done(dir) { // another binary installed it while this one waited
		return dir, nil
	}
	stale, _ := filepath.Glob(dir + ".tmp-*")
	for _, d := range stale { // left by a binary killed mid-install
		_ = os.RemoveAll(d)
	}
	tmp, err := os.MkdirTemp(root, key+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pkg, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "package-lock.json"), lock, 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	// --ignore-scripts: the server needs no native build (sqlite3's would
	// want a compiler and a download); esbuild's binary comes as a package.
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund",
		"--loglevel=error", "--fetch-timeout=60000", "--fetch-retries=2")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("gave up after %v", installTimeout)
	}
	if err != nil {
		return "", fmt.Errorf("npm ci of %s in %s: %v\n%s", "testdata/package-lock.json", tmp, err, lastBytes(out, 4096))
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	if done(dir) { // installed meanwhile by a binary that took no lock
		return dir, nil
	}
	_ = os.RemoveAll(dir) // an incomplete install of the same key
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

func done(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".complete"))
	return err == nil
}

// writeApp writes serve.mjs and the agents below the install (so they
// resolve @google/adk from its node_modules), in a directory named by
// their content; it returns that directory.
func writeApp(dir string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(files, "testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (p != "testdata/serve.mjs" && !strings.HasPrefix(p, "testdata/agents/")) {
			return err
		}
		b, _ := files.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	app := filepath.Join(dir, "app-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(app, "serve.mjs")); err == nil {
		return app, nil
	}
	tmp, err := os.MkdirTemp(dir, "app.tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(files, "testdata", func(p string, d fs.DirEntry, err error) error {
		rel := strings.TrimPrefix(p, "testdata/")
		if err != nil || d.IsDir() || (rel != "serve.mjs" && !strings.HasPrefix(rel, "agents/")) {
			return err
		}
		b, _ := files.ReadFile(p)
		to := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, app); err != nil {
		if _, serr := os.Stat(filepath.Join(app, "serve.mjs")); serr != nil { // not a concurrent writer's
			return "", err
		}
	}
	return app, nil
}

// run starts the server on a free port and waits until it answers
// /list-apps with the app.
func run(node, dir, app string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cli := filepath.Join(dir, "node_modules", "@google", "adk-devtools", "dist", "esm", "cli_entrypoint.js")
	// --compile/--bundle false: the agents are plain ES modules, loaded as
	// they are (no esbuild process per load).
	cmd := exec.Command(node, filepath.Join(app, "serve.mjs"), cli, "api_server", filepath.Join(app, "agents"),
		"--host", "127.0.0.1", "-p", port, "--session_service_uri", "memory://",
		"--compile", "false", "--bundle", "false", "--log_level", "warn")
	cmd.Dir = app
	log := &tail{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = log, log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{url: "http://127.0.0.1:" + port, stdin: stdin, exit: make(chan struct{}), log: log}
	go func() {
		_ = cmd.Wait()
		close(s.exit)
	}()
	if err := s.ready(); err != nil {
		_ = cmd.Process.Kill()
		<-s.exit
		return nil, fmt.Errorf("%w; its output:\n%s", err, log)
	}
	return s, nil
}

// ready polls /list-apps until it lists the app.
func (s *server) ready() error {
	deadline := time.Now().Add(startTimeout)
	client := &http.Client{Timeout: 30 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exit:
			return errExited
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := client.Get(s.url + "/list-apps")
		if err != nil {
			last = err
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"`+App+`"`)) {
			return nil
		}
		last = fmt.Errorf("/list-apps: %d %s", resp.StatusCode, b)
	}
	return fmt.Errorf("the ADK api_server at %s did not answer within %v: %v", s.url, startTimeout, last)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

func digest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\n", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// tail keeps the last max bytes written to it (the server's output, shown
// when it fails).
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = lastBytes(append(t.buf, p...), t.max)
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
