package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/responses"
)

// WebSocket mode: GET /v1/responses upgraded to a WebSocket. The client
// sends response.create messages (the create body with "type"); each
// event of the response comes back as one message (the data of its SSE
// frame), one response after another. A response.create that cannot start
// is answered by an error message ({"type":"error","status":N,"error":
// {...}}), and the connection stays.
//
// Each connection keeps the responses it made (store: false ones too) in
// a bounded cache, so previous_response_id continues them; an id neither
// there nor stored is previous_response_not_found. A continuation that
// fails evicts the response it continued from. Every response is a run
// (detached: a client that leaves mid-response leaves it running, to be
// resumed through the run API).

const (
	// wsCacheSize bounds the responses a connection remembers.
	wsCacheSize = 64
	// wsDiscardLimit bounds how much of an oversize message is read (and
	// dropped) before the connection is closed instead.
	wsDiscardLimit = 64 << 20
)

// wsCache is a connection's responses, oldest first; only its
// connection's goroutine touches it.
type wsCache struct {
	order []string
	m     map[string]*wsEntry
}

// wsEntry is a response of the connection: a run's segment, or (rec.RunID
// empty) a generate: false response that only holds input for the next.
type wsEntry struct {
	rec     record
	pending []bridge.Message // generate: false: the input it holds
}

func (c *wsCache) get(id string) *wsEntry {
	if c == nil {
		return nil
	}
	return c.m[id]
}

func (c *wsCache) put(e *wsEntry) {
	if c.m == nil {
		c.m = map[string]*wsEntry{}
	}
	if len(c.order) >= wsCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[e.rec.ID] = e
	c.order = append(c.order, e.rec.ID)
}

func (c *wsCache) evict(id string) {
	if c == nil {
		return
	}
	delete(c.m, id)
}

// end marks the cached responses of session that had not ended as ended
// at pos, as records.end does for the stored ones.
func (c *wsCache) end(session string, pos int64) {
	if c == nil {
		return
	}
	for _, e := range c.m {
		if e.rec.SessionID == session && e.rec.End == 0 {
			e.rec.End = pos
		}
	}
}

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// websocket serves a WebSocket connection on GET /v1/responses. The
// server's middleware has authenticated the upgrade request as it does
// every request.
func (h *Handler) websocket(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		h.WriteError(w, &bridge.Error{Code: bridge.CodeInvalid,
			Message: "GET /v1/responses is WebSocket mode: send an Upgrade: websocket request"})
		return
	}
	// The connection outlives the request's deadlines; each write sets
	// its own below.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	c, err := websocket.Accept(upgradeWriter{w, rc}, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer c.CloseNow()
	c.SetReadLimit(-1) // the loop bounds messages itself, to answer an oversize one

	ctx, cancel := context.WithCancel(bridge.WithPrincipal(h.ctx, bridge.PrincipalFromContext(r.Context())))
	defer cancel()
	// One reader, so pings are answered and a close is seen while a
	// response streams. Its reads and the writes (send) are not ended by
	// ctx, which a shutdown cancels: coder/websocket closes the connection
	// when a read's or a write's context ends, and a shutdown closes it
	// with 1001 below. The reader ends when the connection does.
	msgs := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			b, err := h.readMessage(context.WithoutCancel(ctx), c)
			if err != nil {
				readErr <- err
				cancel()
				return
			}
			select {
			case msgs <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	conn := &wsConn{h: h, c: c, cache: &wsCache{}}
serve:
	for {
		var b []byte
		select {
		case m, ok := <-msgs:
			if !ok {
				break serve
			}
			b = m
		case <-ctx.Done(): // the client left, or a shutdown
			break serve
		}
		if b == nil {
			conn.sendError(ctx, &bridge.Error{Code: bridge.CodeTooLarge, Type: "invalid_request_error",
				Message: "message too large: at most " + strconv.Itoa(h.maxMessage()) + " bytes"})
			continue
		}
		if err := conn.handle(ctx, b); err != nil {
			break
		}
	}
	select {
	case err := <-readErr:
		var ce websocket.CloseError
		if errors.As(err, &ce) || errors.Is(err, io.EOF) {
			return
		}
		if errors.Is(err, errTooLarge) {
			_ = c.Close(websocket.StatusMessageTooBig, "message too large")
			return
		}
	default:
	}
	if h.ctx.Err() != nil {
		_ = c.Close(websocket.StatusGoingAway, "the bridge is shutting down")
		return
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

// upgradeWriter clears the write deadline the server's middleware sets
// with the 101 response, which would otherwise outlive it on the hijacked
// connection.
type upgradeWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (u upgradeWriter) WriteHeader(status int) {
	u.ResponseWriter.WriteHeader(status)
	_ = u.rc.SetWriteDeadline(time.Time{})
}

func (u upgradeWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }

var errTooLarge = errors.New("message far too large")

func (h *Handler) maxMessage() int {
	if h.cfg.MaxBody > 0 {
		return int(h.cfg.MaxBody)
	}
	return inbound.DefaultMaxBody
}

// readMessage reads one message, at most maxMessage bytes; a larger one is
// read to its end and dropped (nil, no error), one past wsDiscardLimit
// bytes in all is errTooLarge.
func (h *Handler) readMessage(ctx context.Context, c *websocket.Conn) ([]byte, error) {
	_, rd, err := c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	limit := h.maxMessage()
	b, err := io.ReadAll(io.LimitReader(rd, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) <= limit {
		return b, nil
	}
	n, err := io.Copy(io.Discard, io.LimitReader(rd, max(wsDiscardLimit-int64(len(b)), 0)+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b))+n > wsDiscardLimit {
		return nil, errTooLarge
	}
	return nil, nil
}

// wsConn is one WebSocket connection's state.
type wsConn struct {
	h     *Handler
	c     *websocket.Conn
	cache *wsCache
}

// send writes one message, within the write timeout: a client that stops
// reading is cut off, as over HTTP.
func (wc *wsConn) send(ctx context.Context, b []byte) error {
	timeout := wc.h.cfg.WriteTimeout
	if timeout <= 0 {
		timeout = inbound.DefaultWriteTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return wc.c.Write(ctx, websocket.MessageText, b)
}

// sendError writes an error message in WebSocket mode's shape.
func (wc *wsConn) sendError(ctx context.Context, err error) error {
	be := bridge.AsError(err)
	status, body := wire.EncodeError(be)
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(body, &v)
	b := []byte(`{"type":"error","status":`)
	b = strconv.AppendInt(b, int64(status), 10)
	if len(v.Error) > 0 {
		b = append(b, `,"error":`...)
		b = append(b, v.Error...)
	}
	b = append(b, '}')
	return wc.send(ctx, b)
}

// handle answers one message; it returns an error only when the
// connection is done with.
func (wc *wsConn) handle(ctx context.Context, msg []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(msg, &fields); err != nil || fields == nil {
		what := "message: not a JSON object"
		if !json.Valid(msg) {
			what = "message: not a JSON object (not JSON at all, or cut short)"
		}
		return wc.sendError(ctx, &bridge.Error{Code: bridge.CodeInvalid, Type: "invalid_request_error", Message: what})
	}
	var typ string
	if raw, ok := fields["type"]; ok && json.Unmarshal(raw, &typ) != nil {
		return wc.sendError(ctx, &bridge.Error{Code: bridge.CodeInvalid, Type: "invalid_request_error", Param: "type",
			Message: "type: must be a string (want response.create)"})
	}
	if typ != "response.create" {
		return wc.sendError(ctx, &bridge.Error{Code: bridge.CodeInvalid, Type: "invalid_request_error", Param: "type",
			Message: "type: unknown client event " + strconv.Quote(typ) + " (want response.create)"})
	}
	generate := true
	if g, ok := fields["generate"]; ok {
		if err := json.Unmarshal(g, &generate); err != nil {
			return wc.sendError(ctx, &bridge.Error{Code: bridge.CodeInvalid, Param: "generate", Message: "generate: must be a boolean"})
		}
	}
	var background bool
	_ = json.Unmarshal(fields["background"], &background)
	if background {
		return wc.sendError(ctx, &bridge.Error{Code: bridge.CodeInvalid, Param: "background",
			Message: "background: not supported in WebSocket mode"})
	}
	delete(fields, "type")
	delete(fields, "generate")
	delete(fields, "background")
	fields["stream"] = json.RawMessage("true")
	body, _ := json.Marshal(fields)
	body, err := wc.h.expandCompactions(ctx, body)
	if err != nil {
		return wc.sendError(ctx, err)
	}
	cr, err := wire.DecodeRequest(body)
	if err != nil {
		return wc.sendError(ctx, err)
	}
	if cr.Store && wc.h.cfg.Responses == nil {
		cr.Store = false // kept by the connection only
	}
	return wc.create(ctx, cr, generate)
}

// create runs one response.create.
func (wc *wsConn) create(ctx context.Context, cr *wire.Request, generate bool) error {
	h := wc.h
	principal := bridge.PrincipalFromContext(ctx)
	rec := &record{ID: bridge.NewID("resp_"), Principal: principal, Previous: cr.PreviousResponseID,
		Created: time.Unix(h.cfg.Now().Unix(), 0).UTC(), Model: cr.Hub.Model, Echo: cr.Echo}
	prev := cr.PreviousResponseID
	// A generate: false response before this one holds input to send in
	// front of the new input.
	if e := wc.cache.get(prev); e != nil && e.rec.RunID == "" {
		cr.Hub.Messages = append(append([]bridge.Message(nil), e.pending...), cr.Hub.Messages...)
		cr.PreviousResponseID = e.rec.Previous
	}
	if !generate {
		return wc.warmup(ctx, cr, rec)
	}
	req := cr.Hub
	req.Render, _ = json.Marshal(render{Response: rec.ID})
	req.Detached = true
	run, err := h.start(ctx, principal, cr, rec, "", wc.cache)
	if err != nil {
		if prev != "" {
			wc.cache.evict(prev)
		}
		return wc.sendError(ctx, err)
	}
	opt := h.begun(principal, cr, rec, run)
	wc.cache.put(&wsEntry{rec: *rec})
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, events, err := h.cfg.Engine.Subscribe(sctx, run.ID, run.LastSeq)
	if err != nil {
		return wc.sendError(ctx, err)
	}
	out := &wsFrames{send: func(b []byte) error { return wc.send(ctx, b) }}
	enc := wire.NewStreamEncoder(out, opt)
	for ev, err := range events {
		if err != nil {
			return err // the store failed, or the client left: the run goes on
		}
		if err := enc.Encode(&ev); err != nil {
			return err
		}
		if enc.Finished() {
			break
		}
	}
	_ = enc.Close()
	if err := out.err; err != nil {
		return err
	}
	if cur, err := h.cfg.Engine.Run(context.WithoutCancel(ctx), run.ID); err == nil && cur.Status == bridge.StatusFailed && prev != "" {
		wc.cache.evict(prev)
	}
	return nil
}

// warmup answers a generate: false response.create: a completed response
// with no output, whose input the connection holds for the response that
// continues it. It makes no model call, so it is no run.
func (wc *wsConn) warmup(ctx context.Context, cr *wire.Request, rec *record) error {
	if err := checkPrevious(cr.PreviousResponseID); err != nil {
		return wc.sendError(ctx, err)
	}
	if cr.PreviousResponseID != "" && wc.cache.get(cr.PreviousResponseID) == nil {
		if _, err := wc.h.rec.get(ctx, rec.Principal, cr.PreviousResponseID); err != nil {
			return wc.sendError(ctx, previousNotFound(cr.PreviousResponseID))
		}
	}
	rec.Previous = cr.PreviousResponseID
	wc.cache.put(&wsEntry{rec: *rec, pending: cr.Hub.Messages})
	out := &wsFrames{send: func(b []byte) error { return wc.send(ctx, b) }}
	enc := wire.NewStreamEncoder(out, streamOptions(rec))
	now := wc.h.cfg.Now()
	for _, ev := range []bridge.Event{
		{Kind: bridge.KindRunStarted, Time: now},
		{Kind: bridge.KindFinal, Time: now, Final: &bridge.Final{Status: bridge.StatusCompleted, StopReason: bridge.StopEndTurn, Usage: &bridge.Usage{}}},
	} {
		if err := enc.Encode(&ev); err != nil {
			return err
		}
	}
	_ = enc.Close()
	return out.err
}

// wsFrames turns the encoder's SSE frames into WebSocket messages: the
// data of each frame, one message a frame.
type wsFrames struct {
	send func([]byte) error
	buf  []byte
	err  error
}

func (f *wsFrames) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.Index(f.buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		frame := f.buf[:i]
		var data []byte
		for line := range bytes.SplitSeq(frame, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		if len(data) > 0 {
			if err := f.send(data); err != nil {
				f.err = err
				return 0, err
			}
		}
		f.buf = f.buf[i+2:]
	}
	return len(p), nil
}
