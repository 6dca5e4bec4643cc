package responses

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/responses"
	"github.com/bridge-dev/bridge/outbound"
)

// WebSocket mode (Config.WebSocket): a call is one response.create
// message on a WebSocket to GET {base}/responses, and each event of the
// response one message back. A connection carries one response at a time;
// once its response has ended it waits in a pool for the next call,
// preferably the next call of the same session (an upstream keeps a
// connection's last response in memory, so continuing it there is the
// fast path). A call that ends otherwise (cut short, failed, abandoned by
// its reader) closes its connection, whose state is unknown.

const (
	// defaultMaxIdleSockets bounds the idle connections of a client when
	// its Config names no bound.
	defaultMaxIdleSockets = 16
	// defaultSocketIdle closes a connection unused that long.
	defaultSocketIdle = 5 * time.Minute
	// refusedFor is how long a refused upgrade sends calls over HTTP
	// before WebSocket mode is tried again.
	refusedFor = 10 * time.Minute
	// maxSocketMessage bounds one message from the upstream (a terminal
	// event repeats the whole response).
	maxSocketMessage = 64 << 20
	// defaultFirstByte is outbound.Timeouts' first-byte default, for the
	// first message of a response.
	defaultFirstByte = 60 * time.Second
)

// errRefused: the upstream answered the upgrade as a server without
// WebSocket mode does; the call goes over HTTP.
var errRefused = errors.New("the upstream refused WebSocket mode")

// refusals are the upgrade answers of a server without WebSocket mode
// (a 2xx: it ignored the Upgrade header).
var refusals = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed,
	http.StatusUpgradeRequired, http.StatusNotImplemented}

// socket is one connection; one call at a time holds it.
type socket struct {
	c       *websocket.Conn
	session string    // the session of the call it last carried
	since   time.Time // idle since
}

// socketPool keeps the idle connections of a client, most recently used
// last. It is safe for concurrent use.
type socketPool struct {
	max  int
	idle time.Duration

	mu      sync.Mutex
	free    []*socket
	closed  bool
	refused time.Time // until then, calls go over HTTP
}

func newSocketPool(max int, idle time.Duration) *socketPool {
	if max <= 0 {
		max = defaultMaxIdleSockets
	}
	if idle <= 0 {
		idle = defaultSocketIdle
	}
	return &socketPool{max: max, idle: idle}
}

// usable reports whether calls may try WebSocket mode at now.
func (p *socketPool) usable(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !now.Before(p.refused)
}

// refuse sends calls over HTTP for a while; it reports whether WebSocket
// mode was usable until now (the refusal is news, worth a log line).
func (p *socketPool) refuse(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	news := !now.Before(p.refused)
	p.refused = now.Add(refusedFor)
	return news
}

// take removes and returns an idle connection, the session's last when
// it has one, else the most recently used; nil when none is idle.
// Connections idle too long are closed on the way.
func (p *socketPool) take(session string, now time.Time) *socket {
	p.mu.Lock()
	var stale []*socket
	p.free = slices.DeleteFunc(p.free, func(s *socket) bool {
		if now.Sub(s.since) > p.idle {
			stale = append(stale, s)
			return true
		}
		return false
	})
	i := len(p.free) - 1
	if session != "" {
		if j := slices.IndexFunc(p.free, func(s *socket) bool { return s.session == session }); j >= 0 {
			i = j
		}
	}
	var s *socket
	if i >= 0 {
		s = p.free[i]
		p.free = slices.Delete(p.free, i, i+1)
	}
	p.mu.Unlock()
	for _, st := range stale {
		st.c.CloseNow()
	}
	return s
}

// put returns a connection whose response has ended; past the bound, the
// least recently used is closed.
func (p *socketPool) put(s *socket, session string, now time.Time) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.c.CloseNow()
		return
	}
	s.session, s.since = session, now
	p.free = append(p.free, s)
	var drop *socket
	if len(p.free) > p.max {
		drop = p.free[0]
		p.free = p.free[1:]
	}
	p.mu.Unlock()
	if drop != nil {
		drop.c.CloseNow()
	}
}

// close closes the idle connections; a connection put back later is
// closed then.
func (p *socketPool) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, s := range free {
		s.c.CloseNow()
	}
}

// callSocket makes the call in WebSocket mode. errRefused: the upstream
// has no WebSocket mode, call it over HTTP.
func (c *Client) callSocket(ctx context.Context, req *bridge.Request, opt wire.EncodeOptions) (bridge.Stream, []string, error) {
	opt.WebSocket = true
	body, dropped, err := wire.EncodeRequest(req, opt)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		s := c.socks.take(req.SessionID, time.Now())
		reused := s != nil
		if s == nil {
			if s, err = c.dial(ctx); err != nil {
				return nil, nil, err
			}
		}
		first, closed, err := c.begin(ctx, s, body)
		if err != nil {
			s.c.CloseNow()
			if closed && reused && attempt == 0 {
				continue // the upstream closed it while it was idle: a new one
			}
			return nil, nil, err
		}
		var head struct {
			Type   string `json:"type"`
			Status int    `json:"status"`
		}
		_ = json.Unmarshal(first, &head)
		if head.Type == "error" {
			// The response did not start (a bad request, an unknown
			// previous_response_id, a rate limit): the connection goes on.
			c.socks.put(s, req.SessionID, time.Now())
			return nil, nil, wire.DecodeError(head.Status, first)
		}
		return c.socketEvents(ctx, s, first, req.SessionID), dropped, nil
	}
}

// dial opens a connection to the configured URL, with the upstream's key;
// the handshake goes through the configured HTTP client, so its transport
// (trace context) and redirect rule (no key to another origin) apply.
func (c *Client) dial(ctx context.Context) (*socket, error) {
	h := http.Header{}
	if c.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	conn, resp, err := websocket.Dial(ctx, c.url, &websocket.DialOptions{HTTPClient: c.cfg.HTTPClient, HTTPHeader: h})
	if err == nil {
		conn.SetReadLimit(maxSocketMessage)
		return &socket{c: conn}, nil
	}
	if resp == nil || ctx.Err() != nil {
		return nil, outbound.DoError(ctx, c.cfg.Name, err)
	}
	if resp.StatusCode/100 == 2 || slices.Contains(refusals, resp.StatusCode) {
		if c.socks.refuse(time.Now()) && c.cfg.Logger != nil {
			c.cfg.Logger.Warn("upstream refused WebSocket mode; calling it over HTTP", "upstream", c.cfg.Name,
				"status", resp.StatusCode, "retry_in", refusedFor.String())
		}
		return nil, errRefused
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// It upgraded, but not as RFC 6455 says.
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s answered the WebSocket upgrade wrongly", c.cfg.Name)
	}
	var b []byte
	if resp.Body != nil {
		b, _ = io.ReadAll(resp.Body) // what Dial kept of it: 1 KiB at most
	}
	e := wire.DecodeError(resp.StatusCode, b)
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		e.RetryAfter = outbound.ParseRetryAfter(ra, time.Now())
	}
	return nil, e
}

// begin sends the response.create message and reads the first message
// back, each within the first-byte timeout. closed: the connection was
// found closed (nothing was answered).
func (c *Client) begin(ctx context.Context, s *socket, body []byte) (first []byte, closed bool, err error) {
	wait := c.cfg.Timeouts.FirstByte
	if wait <= 0 {
		wait = defaultFirstByte
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	err = s.c.Write(wctx, websocket.MessageText, body)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, context.Cause(ctx)
		}
		if wctx.Err() != nil {
			return nil, false, c.firstByteTimeout()
		}
		return nil, true, bridge.Errorf(bridge.CodeUpstream, "upstream %s closed the WebSocket before answering", c.cfg.Name)
	}
	first, err = c.read(ctx, s, wait, true)
	if errors.Is(err, io.EOF) {
		return nil, true, bridge.Errorf(bridge.CodeUpstream, "upstream %s closed the WebSocket before answering", c.cfg.Name)
	}
	return first, false, err
}

func (c *Client) firstByteTimeout() error {
	return bridge.Errorf(bridge.CodeTimeout, "upstream %s sent no response in time (first byte timeout)", c.cfg.Name)
}

// read reads one message within wait. A connection that ended is io.EOF;
// a wait that ran out is the first-byte or the idle timeout.
func (c *Client) read(ctx context.Context, s *socket, wait time.Duration, first bool) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	typ, b, err := s.c.Read(rctx)
	switch {
	case err == nil && typ == websocket.MessageText:
		return b, nil
	case err == nil:
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s sent a binary WebSocket message", c.cfg.Name)
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case rctx.Err() != nil && first:
		return nil, c.firstByteTimeout()
	case rctx.Err() != nil:
		return nil, bridge.Errorf(bridge.CodeTimeout, "upstream %s sent nothing for %s (idle timeout)", c.cfg.Name, wait)
	case errors.Is(err, io.EOF) || websocket.CloseStatus(err) != -1:
		return nil, io.EOF
	}
	return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s: the WebSocket connection failed", c.cfg.Name)
}

// socketEvents decodes the response's messages, first the one begin read.
// A response that reached its final gives the connection back to the
// pool; any other end closes it.
func (c *Client) socketEvents(ctx context.Context, s *socket, first []byte, session string) bridge.Stream {
	idle := c.cfg.Timeouts.Idle
	return func(yield func(bridge.Event, error) bool) {
		ended := false
		defer func() {
			if ended {
				c.socks.put(s, session, time.Now())
			} else {
				s.c.CloseNow()
			}
		}()
		next := func() ([]byte, error) {
			if first != nil {
				b := first
				first = nil
				return b, nil
			}
			return c.read(ctx, s, idle, false)
		}
		for ev, err := range wire.DecodeMessages(next) {
			if err == nil && ev.Kind == bridge.KindFinal {
				ended = true
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}
