package runs

// The session channel (chatkit's subscribe): GET
// /v1/sessions/{session}/events?format=... carries every run of the
// session, one after another in the order they started, each as the
// dialect's own frames between an explicit start and end frame.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
)

// Channel limits, when Config leaves them zero.
const (
	DefaultChannelsPerSession   = 8
	DefaultChannelsPerPrincipal = 64
	DefaultChannelKeepAlive     = 15 * time.Second
)

// Frames the channel adds around a run's own: their event names, and the
// suffixes of their ids (see parseChannelCursor).
const (
	EventRunStarted = "bridge.run.started"
	EventRunEnded   = "bridge.run.ended"
)

// channels counts the open channels, per principal and per session.
type channels struct {
	mu          sync.Mutex
	byPrincipal map[string]int
	bySession   map[string]int
}

// open admits a channel, or says which limit it is over.
func (c *channels) open(principal, session string, perPrincipal, perSession int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPrincipal == nil {
		c.byPrincipal, c.bySession = map[string]int{}, map[string]int{}
	}
	sk := principal + "\x00" + session
	if c.bySession[sk] >= perSession {
		return &bridge.Error{Code: bridge.CodeRateLimited, RetryAfter: 5 * time.Second,
			Message: "session " + session + " has " + strconv.Itoa(perSession) + " channels open already"}
	}
	if c.byPrincipal[principal] >= perPrincipal {
		return &bridge.Error{Code: bridge.CodeRateLimited, RetryAfter: 5 * time.Second,
			Message: strconv.Itoa(perPrincipal) + " channels are open already"}
	}
	c.bySession[sk]++
	c.byPrincipal[principal]++
	return nil
}

func (c *channels) close(principal, session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sk := principal + "\x00" + session
	if c.bySession[sk]--; c.bySession[sk] <= 0 {
		delete(c.bySession, sk)
	}
	if c.byPrincipal[principal]--; c.byPrincipal[principal] <= 0 {
		delete(c.byPrincipal, principal)
	}
}

// channelCursor is where a channel resumes: in run, after cur (a frame id
// of the run's own, or the seq its start or end frame names).
type channelCursor struct {
	run string
	cur inbound.Cursor
}

// parseChannelCursor reads a channel's Last-Event-ID: one of the run's own
// frame ids (bridge.FrameID, bridge.EventID), or the id of a start frame
// (<run>:<seq>.start: the run's events after seq follow) or of an end
// frame (<run>:<seq>.end: the run is delivered through event seq).
func parseChannelCursor(c string) (channelCursor, bool) {
	if i := strings.LastIndexByte(c, ':'); i > 0 {
		tail := c[i+1:]
		for _, suf := range []string{".start", ".end"} {
			if n, ok := strings.CutSuffix(tail, suf); ok {
				seq, err := strconv.ParseInt(n, 10, 64)
				if err != nil || seq < 0 {
					return channelCursor{}, false
				}
				return channelCursor{run: c[:i], cur: inbound.Cursor{Seq: seq}}, true
			}
		}
	}
	run, seq, frame, ok := bridge.ParseFrameID(c)
	if !ok {
		return channelCursor{}, false
	}
	return channelCursor{run: run, cur: inbound.Cursor{Seq: seq, Frame: frame}}, true
}

// runMark is what a channel has delivered of a run: its frames through
// cur, and whether its start frame went out without its end frame yet.
type runMark struct {
	cur  inbound.Cursor
	open bool
}

// sessionEvents serves the session channel over SSE (or, with an Upgrade:
// websocket request, over a WebSocket: channel_ws.go).
//
// Each run the session starts after the channel opened (and each run
// still running when it opened) arrives as a bridge.run.started frame, the run's
// frames as its dialect renders them (inbound.Resume, so a channel renders
// what the run's own stream did), and a bridge.run.ended frame. Runs come one
// after another, in the order they started: a run that starts while
// another is still running waits until that one ends. The ids are the
// run's own frame ids and <run>:<seq>.start / .end, so Last-Event-ID
// resumes across runs with no gap and no duplicate. A channel holds no
// events of its own: what it has not sent yet it reads from the engine
// (live) or the store.
func (h *Handler) sessionEvents(w http.ResponseWriter, r *http.Request) {
	d := h.format(w, r, "channel")
	if d == nil {
		return
	}
	sid := r.PathValue("session")
	ctx := r.Context()
	e := h.cfg.Engine
	var resume *channelCursor
	if c := inbound.LastEventID(r, "after"); c != "" {
		cc, ok := parseChannelCursor(c)
		if !ok {
			d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "cursor %q is not an event id of this channel", c))
			return
		}
		resume = &cc
	}
	wake := e.WatchSession(ctx, sid)
	runs, err := e.SessionRuns(ctx, sid)
	if err != nil {
		d.WriteError(w, err)
		return
	}
	principal := bridge.PrincipalFromContext(ctx)
	perP, perS := h.cfg.ChannelsPerPrincipal, h.cfg.ChannelsPerSession
	if perP <= 0 {
		perP = DefaultChannelsPerPrincipal
	}
	if perS <= 0 {
		perS = DefaultChannelsPerSession
	}
	if err := h.chans.open(principal, sid, perP, perS); err != nil {
		d.WriteError(w, err)
		return
	}
	defer h.chans.close(principal, sid)

	// Where the channel starts: after the cursor's frame (the runs before
	// its run are delivered), else at the live edge (a run still running
	// is sent from its start; one that has ended is history's).
	marks := map[string]*runMark{}
	if resume != nil {
		found := false
		for _, run := range runs {
			if run.ID == resume.run {
				found = true
				marks[run.ID] = &runMark{cur: resume.cur, open: true}
				break
			}
			marks[run.ID] = &runMark{cur: inbound.Cursor{Seq: run.LastSeq}}
		}
		if !found {
			d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "cursor %q names no run of session %s", resume.run, sid))
			return
		}
	} else {
		for _, run := range runs {
			if run.Status != bridge.StatusRunning {
				marks[run.ID] = &runMark{cur: inbound.Cursor{Seq: run.LastSeq}}
			}
		}
	}

	if isWebSocket(r) {
		ww, wctx, closeWS, ok := acceptWebSocket(w, r)
		if !ok {
			return
		}
		defer closeWS()
		w, ctx, r = ww, wctx, r.WithContext(wctx)
	}
	out := newChannelWriter(w, r)
	if out == nil {
		return
	}
	keepAlive := h.cfg.ChannelKeepAlive
	if keepAlive <= 0 {
		keepAlive = DefaultChannelKeepAlive
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		for _, run := range runs {
			m := marks[run.ID]
			if m == nil {
				m = &runMark{}
				marks[run.ID] = m
			}
			if run.Status != bridge.StatusRunning && run.LastSeq <= m.cur.Seq && !m.open {
				continue
			}
			if !h.sendRun(out, r, d, run, m) {
				return
			}
		}
		select {
		case <-wake:
		case <-tick.C:
			if out.keepAlive() != nil {
				return
			}
			continue
		case <-ctx.Done():
			return
		}
		wake = e.WatchSession(ctx, sid)
		if runs, err = e.SessionRuns(ctx, sid); err != nil {
			return // the session went away (or to another principal)
		}
	}
}

// sendRun writes run's frames after m, between its start and end frames,
// until the run's stream ends; false when the channel is gone.
func (h *Handler) sendRun(out *channelWriter, r *http.Request, d inbound.Dialect, run *bridge.Run, m *runMark) bool {
	ctx := r.Context()
	if !m.open {
		if out.control(EventRunStarted, run.ID+":"+strconv.FormatInt(m.cur.Seq, 10)+".start", runInfo(run, "")) != nil {
			return false
		}
		m.open = true
	}
	snap, events, err := inbound.Resume(ctx, h.cfg.Engine, run.ID, m.cur)
	if err != nil {
		return ctx.Err() == nil && bridge.ErrorCode(err) == bridge.CodeNotFound
	}
	out.begin(run.ID)
	d.ServeEvents(inbound.SkipFrames(out, m.cur), r, snap, events)
	if ctx.Err() != nil || out.err != nil {
		return false
	}
	if c, ok := out.last(); ok {
		m.cur = c
	}
	end, err := h.cfg.Engine.Run(ctx, run.ID)
	if err != nil || end.Status == bridge.StatusRunning {
		return err == nil // its stream ended early (a store fault): try again at the next wake
	}
	if end.LastSeq > m.cur.Seq {
		m.cur = inbound.Cursor{Seq: end.LastSeq}
	}
	m.open = false
	return out.control(EventRunEnded, run.ID+":"+strconv.FormatInt(m.cur.Seq, 10)+".end", runInfo(end, string(end.Status))) == nil
}

// runInfo is the data of a start or end frame.
func runInfo(run *bridge.Run, status string) []byte {
	v := map[string]any{"run_id": run.ID, "session_id": run.SessionID}
	if run.ClientRunID != "" {
		v["client_run_id"] = run.ClientRunID
	}
	if status != "" {
		v["status"] = status
		if run.Reason != "" {
			v["reason"] = run.Reason
		}
	}
	b, _ := json.Marshal(v)
	return b
}

// channelWriter is the channel's response: the dialect's encoder writes
// each run's frames into it as into a response of its own (its headers and
// status go nowhere; the channel's went first), and it remembers the last
// frame id it passed on, for the run's end frame.
type channelWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	scratch http.Header
	mu      sync.Mutex // the keep-alive and the frames
	run     string
	lastID  string
	err     error
}

func newChannelWriter(w http.ResponseWriter, r *http.Request) *channelWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(inbound.HeaderSessionID, r.PathValue("session"))
	w.WriteHeader(http.StatusOK)
	cw := &channelWriter{w: w, rc: http.NewResponseController(w)}
	if err := cw.rc.Flush(); err != nil {
		return nil
	}
	return cw
}

// begin starts a run's frames: a fresh header for its encoder.
func (c *channelWriter) begin(run string) {
	c.run, c.lastID, c.scratch = run, "", http.Header{}
}

func (c *channelWriter) Header() http.Header {
	if c.scratch == nil {
		c.scratch = http.Header{}
	}
	return c.scratch
}

func (c *channelWriter) WriteHeader(int) {}

func (c *channelWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte("\n")) {
		if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			c.lastID = string(id)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

// Flush lets the encoder's SSE writer flush each frame.
func (c *channelWriter) FlushError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rc.Flush()
}

// last is the cursor of the last frame of the run passed on.
func (c *channelWriter) last() (inbound.Cursor, bool) {
	if c.lastID == "" {
		return inbound.Cursor{}, false
	}
	return inbound.ParseCursor(c.run, c.lastID)
}

// control writes one of the channel's own frames.
func (c *channelWriter) control(event, id string, data []byte) error {
	var b bytes.Buffer
	b.WriteString("event: " + event + "\nid: " + id + "\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := c.Write(b.Bytes()); err != nil {
		return err
	}
	return c.FlushError()
}

// keepAlive writes an SSE comment, which every dialect's client skips.
func (c *channelWriter) keepAlive() error {
	if _, err := c.Write([]byte(": keepalive\n\n")); err != nil {
		return err
	}
	return c.FlushError()
}
