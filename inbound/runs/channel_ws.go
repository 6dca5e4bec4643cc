package runs

// The session channel over a WebSocket: the same frames as over SSE, each
// one text message {"id", "event", "data"} (data the frame's JSON as it
// is), keep-alives as pings.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// isWebSocket reports whether r asks for a WebSocket.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// acceptWebSocket upgrades the channel's request. It returns the writer
// the channel writes its SSE frames to (each sent as a message), the
// context that ends when the client closes, and a close; ok is false when
// the upgrade failed (Accept has answered).
func acceptWebSocket(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, context.Context, func(), bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the channel outlives the request's deadlines
	_ = rc.SetWriteDeadline(time.Time{})
	c, err := websocket.Accept(upgradeWriter{w, rc}, r, nil)
	if err != nil {
		return nil, nil, nil, false
	}
	ctx := c.CloseRead(r.Context())
	return &wsFrames{c: c, ctx: ctx, header: http.Header{}}, ctx, func() { _ = c.Close(websocket.StatusNormalClosure, "") }, true
}

type upgradeWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (u upgradeWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// wsFrames turns the SSE frames written to it into messages.
type wsFrames struct {
	c      *websocket.Conn
	ctx    context.Context
	header http.Header
	part   []byte
}

func (f *wsFrames) Header() http.Header { return f.header }
func (f *wsFrames) WriteHeader(int)     {}
func (f *wsFrames) FlushError() error   { return nil }

// wsWriteTimeout bounds one message's write: a client that reads nothing
// ends its channel.
const wsWriteTimeout = 30 * time.Second

func (f *wsFrames) Write(p []byte) (int, error) {
	f.part = append(f.part, p...)
	for {
		end := bytes.Index(f.part, []byte("\n\n"))
		if end < 0 {
			return len(p), nil
		}
		frame := f.part[:end+1]
		if err := f.send(frame); err != nil {
			return 0, err
		}
		f.part = f.part[end+2:]
	}
}

// send sends one SSE frame as a message; a comment (a keep-alive) as a
// ping.
func (f *wsFrames) send(frame []byte) error {
	var id, event string
	var data [][]byte
	for _, line := range bytes.Split(bytes.TrimSuffix(frame, []byte("\n")), []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			id = string(line[4:])
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[6:])
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, line[5:])
		}
	}
	ctx, cancel := context.WithTimeout(f.ctx, wsWriteTimeout)
	defer cancel()
	if data == nil {
		return f.c.Ping(ctx)
	}
	d := bytes.Join(data, []byte("\n"))
	var raw json.RawMessage = d
	if !json.Valid(d) { // [DONE]
		raw, _ = json.Marshal(string(d))
	}
	b, err := json.Marshal(struct {
		ID    string          `json:"id,omitempty"`
		Event string          `json:"event,omitempty"`
		Data  json.RawMessage `json:"data"`
	}{id, event, raw})
	if err != nil {
		return err
	}
	return f.c.Write(ctx, websocket.MessageText, b)
}
