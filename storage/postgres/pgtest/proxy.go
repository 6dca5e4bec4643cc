package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a PostgreSQL server that a test cuts
// off and heals: the network between one replica and its database.
type Proxy struct {
	ln     net.Listener
	target string
	url    string

	mu    sync.Mutex
	mode  proxyMode
	conns map[net.Conn]bool
}

type proxyMode int

const (
	modePass      proxyMode = iota
	modeBlackhole           // connections are accepted, nothing goes through
	modeRefuse              // connections are closed as they come
)

// NewProxy starts a proxy to the server of dbURL (a URL Start or Schema
// returned) and returns it; URL is dbURL through the proxy. It stops with
// the test.
func NewProxy(tb testing.TB, dbURL string) *Proxy {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	u.Host = ln.Addr().String()
	p.url = u.String()
	go p.accept()
	tb.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

// URL is the database's URL through the proxy.
func (p *Proxy) URL() string { return p.url }

// Blackhole cuts the network silently: open connections stop carrying
// bytes and new ones are accepted but go nowhere, as when a link drops
// packets (a client sees no error, only silence).
func (p *Proxy) Blackhole() { p.set(modeBlackhole) }

// Refuse cuts the network loudly: open connections are closed, and new
// ones are closed as soon as they come.
func (p *Proxy) Refuse() {
	p.set(modeRefuse)
	p.cut()
}

// Heal restores the network. Connections opened during the cut are
// closed (their bytes were lost); new ones go through.
func (p *Proxy) Heal() {
	p.cut()
	p.set(modePass)
}

func (p *Proxy) set(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// cut closes every open connection.
func (p *Proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == modeRefuse {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) passing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode == modePass
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		go p.serve(c)
	}
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.untrack(c)
	if !p.passing() { // blackholed from the start: read and drop
		_, _ = io.Copy(io.Discard, c)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		c.Close()
		return
	}
	defer p.untrack(up)
	go p.pipe(up, c)
	p.pipe(c, up)
}

// pipe copies src to dst while the proxy passes, dropping what comes
// while it does not.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && p.passing() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
