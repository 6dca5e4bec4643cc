package runs

// The session channel (chatkit's subscribe): GET
// /v1/sessions/{session}/events?format=... carries every run of the
// session in commit order, each as the dialect's own frames between an
// explicit start and end frame.

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
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
	// DefaultChannelPoll: over a store other replicas share, the store's
	// signals wake a channel for their commits; it reads the store this
	// often too, for a signal lost (a reconnect of the listener, a
	// replica too old to name the session).
	DefaultChannelPoll = time.Second
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

// cursorKind says which frame a channel cursor names.
type cursorKind int

const (
	cursorFrame cursorKind = iota // one of the run's own frames
	cursorStart                   // <run>:<seq>.start: the run's start frame, before event seq+1
	cursorEnd                     // <run>:<seq>.end: the run's end frame, after event seq (its final)
)

// channelCursor is where a channel resumes: in run, after cur (a frame id
// of the run's own, or the seq its start or end frame names).
type channelCursor struct {
	run  string
	cur  inbound.Cursor
	kind cursorKind
}

// parseChannelCursor reads a channel's Last-Event-ID: one of the run's own
// frame ids (bridge.FrameID, bridge.EventID), or the id of a start frame
// (<run>:<seq>.start: the run's events after seq follow) or of an end
// frame (<run>:<seq>.end: the run is delivered through event seq).
func parseChannelCursor(c string) (channelCursor, bool) {
	if i := strings.LastIndexByte(c, ':'); i > 0 {
		tail := c[i+1:]
		for kind, suf := range map[cursorKind]string{cursorStart: ".start", cursorEnd: ".end"} {
			if n, ok := strings.CutSuffix(tail, suf); ok {
				seq, err := strconv.ParseInt(n, 10, 64)
				if err != nil || seq < 0 || kind == cursorEnd && seq == 0 {
					return channelCursor{}, false
				}
				return channelCursor{run: c[:i], cur: inbound.Cursor{Seq: seq}, kind: kind}, true
			}
		}
	}
	run, seq, frame, ok := bridge.ParseFrameID(c)
	if !ok || seq <= 0 {
		return channelCursor{}, false
	}
	return channelCursor{run: run, cur: inbound.Cursor{Seq: seq, Frame: frame}}, true
}

// sessionEvents serves the session channel over SSE (or, with an Upgrade:
// websocket request, over a WebSocket: channel_ws.go).
//
// The channel carries the session's events in commit order
// (bridge.Engine.SessionEvents), each run's as its dialect renders them,
// so the frames of runs that overlap interleave as their events were
// committed. Each run (each stretch of it up to a final event: a run
// continued with tool results has one per request) comes between a
// bridge.run.started and a bridge.run.ended frame. The ids are the runs'
// own frame ids and <run>:<seq>.start / .end; each locates a place in the
// session's commit order, so Last-Event-ID resumes across runs with no gap
// and no duplicate. Without a cursor the channel starts at the live edge:
// with the runs still running (each from its start), then whatever is
// committed next; ?from=start replays the session from its first event
// (as far as the store keeps events). A channel holds no events of its
// own: it reads them from the store, a page at a time, when the engine
// says the session committed some.
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
	from := r.URL.Query().Get("from")
	if from != "" && from != "start" {
		d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "from=%q: the channel starts at the live edge, after a cursor, or from=start", from))
		return
	}
	edge, err := e.SessionSeq(ctx, sid) // before the runs are listed: a run listed after has its events after it
	if err != nil {
		d.WriteError(w, err)
		return
	}
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

	c := &channel{e: e, d: d, sid: sid, open: map[string]*channelRun{}, resumed: resume != nil}
	// Where the channel starts: after the cursor's frame, at the session's
	// first event, or at the live edge (before the first event of the
	// oldest stretch still running: a run still running is sent from its
	// start; one that has ended is history's).
	switch {
	case resume != nil:
		if !slices.ContainsFunc(runs, func(run *bridge.Run) bool { return run.ID == resume.run }) {
			d.WriteError(w, bridge.Errorf(bridge.CodeInvalid, "cursor %q names no run of session %s", resume.run, sid))
			return
		}
		ev, err := c.event(ctx, resume.run, resume.cur.Seq+b2i(resume.kind == cursorStart))
		if err != nil {
			d.WriteError(w, err)
			return
		}
		c.pos = bridge.SessionPos{SessionSeq: ev.SessionSeq, Seq: resume.cur.Seq}
	case from == "start":
	default:
		c.pos = bridge.SessionPos{SessionSeq: edge, Seq: math.MaxInt64}
		for _, run := range runs {
			if run.Status != bridge.StatusRunning {
				continue
			}
			evs, err := e.RunEvents(ctx, run.ID, 0, 0)
			if err != nil {
				d.WriteError(w, err)
				return
			}
			if seg := segment(evs, int64(len(evs))+1); len(seg) > 0 {
				if p := (bridge.SessionPos{SessionSeq: seg[0].SessionSeq, Seq: seg[0].Seq - 1}); p.Before(c.pos) {
					c.pos = p
				}
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
	out.ping = keepAliveFrame(d.Name())
	c.out, c.r = out, r
	defer c.closeAll()
	if resume != nil && resume.kind != cursorEnd {
		// The run the cursor is in goes on from there: the rest of the
		// cursor's event first.
		through := resume.cur.Seq
		if !c.openRun(ctx, resume.run, through+b2i(resume.kind == cursorStart), through, resume.cur, false) {
			return
		}
	}
	keepAlive := h.cfg.ChannelKeepAlive
	if keepAlive <= 0 {
		keepAlive = DefaultChannelKeepAlive
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var poll <-chan time.Time
	if e.Shared() { // a lost signal of another replica's commit
		every := h.cfg.ChannelPoll
		if every <= 0 {
			every = DefaultChannelPoll
		}
		t := time.NewTicker(every)
		defer t.Stop()
		poll = t.C
	}
	// Other replicas' commits in the session come through feed, with
	// their events when the signals carried them.
	feed, stopFeed := e.FollowSession(ctx, sid)
	defer stopFeed()
	read := true
	var wake <-chan struct{}
	for {
		if read {
			// Taken before each read, never between: this process's
			// commits since it wake it, however the last one was read.
			wake = e.WatchSession(ctx, sid)
		}
		for read {
			evs, err := e.SessionEvents(ctx, sid, c.pos, channelPage)
			if err != nil {
				return // a store fault: the client resumes from its last id
			}
			for _, ev := range evs {
				if !c.deliver(ctx, ev) {
					return
				}
				c.pos = ev.Pos()
			}
			// Short of a page: every commit (its events of a run, one
			// session seq) is read whole, the last one's too.
			read = len(evs) == channelPage
		}
		read = true
		select {
		case <-wake:
		case <-feed.Wake():
			evs, lacked := feed.Take()
			if !lacked {
				var ok bool
				if read, ok = c.carried(ctx, evs); !ok {
					return
				}
			}
		case <-poll:
		case <-tick.C:
			if out.keepAlive() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// carried delivers the events of other replicas' commits that a feed
// carried (in commit order, each commit's events of a run whole) while
// they follow on from what the channel delivered: what it had is skipped;
// a commit's events whose session seq is the next one are the next in
// the session (its seqs are consecutive); anything else is a gap, and
// read = true: the store has what came between. ok is false when the
// channel is gone. The channel's position is a whole commit's end here:
// it read the store to its end (or took a whole commit) before.
func (c *channel) carried(ctx context.Context, evs []bridge.Event) (read, ok bool) {
	for _, ev := range evs {
		switch {
		case !c.pos.Before(ev.Pos()):
			continue // read from the store already
		case ev.SessionSeq == c.pos.SessionSeq && ev.Seq == c.pos.Seq+1, ev.SessionSeq == c.pos.SessionSeq+1:
		default:
			return true, true
		}
		if !c.deliver(ctx, ev) {
			return false, false
		}
		c.pos = ev.Pos()
	}
	return false, true
}

// A channel reads the store a page of events at a time.
const channelPage = 256

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// channel is one client's session channel: where it is in the session's
// commit order, and the runs it is in the middle of.
type channel struct {
	e       *bridge.Engine
	d       inbound.Dialect
	r       *http.Request
	out     *channelWriter
	sid     string
	pos     bridge.SessionPos      // the last event delivered
	open    map[string]*channelRun // runs whose start frame went and end frame did not
	resumed bool                   // the channel resumes another's: it sent the start frames of the runs open at pos
}

// channelRun is a run the channel is in the middle of: its dialect's
// encoder, fed one event at a time, so that the frames of the channel's
// runs go out in the order of their events.
type channelRun struct {
	run   *bridge.Run
	in    chan bridge.Event
	done  chan struct{} // the encoder has written the event it was fed
	ended chan struct{} // the encoder returned
}

// event is event seq of run, with its SessionSeq.
func (c *channel) event(ctx context.Context, run string, seq int64) (bridge.Event, error) {
	evs, err := c.e.RunEvents(ctx, run, seq-1, 1)
	if err != nil {
		return bridge.Event{}, err
	}
	if len(evs) == 0 || evs[0].Seq != seq {
		return bridge.Event{}, bridge.Errorf(bridge.CodeInvalid, "run %s has no event %d (the cursor is of another channel, or its events have expired)", run, seq)
	}
	return evs[0], nil
}

// segment is the stretch of evs (a run's events from its first) that
// event seq belongs to, as far as evs goes: from the event after the last
// final before seq. A run continued with tool results has one stretch per
// request, each rendered as a stream of its own.
func segment(evs []bridge.Event, seq int64) []bridge.Event {
	start := 0
	for i, ev := range evs {
		if ev.Seq >= seq {
			break
		}
		if ev.Kind == bridge.KindFinal {
			start = i + 1
		}
	}
	return evs[start:]
}

// deliver sends ev as its run's frames, opening the run (its start frame,
// its encoder) when the channel is not in the middle of it, and closing
// it (its end frame) after its final event; false when the channel is
// gone.
func (c *channel) deliver(ctx context.Context, ev bridge.Event) bool {
	cr := c.open[ev.RunID]
	if cr == nil {
		if !c.openRun(ctx, ev.RunID, ev.Seq, ev.Seq-1, inbound.Cursor{Seq: ev.Seq - 1}, true) {
			return false
		}
		cr = c.open[ev.RunID]
	}
	if !cr.feed(ev) {
		return false
	}
	if ev.Kind == bridge.KindFinal {
		return c.closeRun(cr, ev)
	}
	return true
}

// openRun starts the encoder of run for the stretch event seq belongs to,
// and feeds it the stretch's events through through, whose frames up to
// skip the client has (inbound.SkipFrames drops them): the encoder,
// started fresh, renders the stretch as the run's own stream did. It
// writes the start frame first when the stretch begins at seq, or when
// mayStart and the channel did not send it before (a fresh channel that
// joins a run in the middle). False when the channel is gone.
func (c *channel) openRun(ctx context.Context, id string, seq, through int64, skip inbound.Cursor, mayStart bool) bool {
	run, err := c.e.Run(ctx, id)
	if err != nil {
		return false
	}
	var prefix []bridge.Event
	if through > 0 {
		evs, err := c.e.RunEvents(ctx, id, 0, int(through))
		if err != nil {
			return false
		}
		prefix = segment(evs, seq)
	}
	if mayStart && (len(prefix) == 0 || !c.resumed) {
		if c.out.control(EventRunStarted, id+":"+strconv.FormatInt(seq-1, 10)+".start", runInfo(run, "")) != nil {
			return false
		}
	}
	cr := &channelRun{run: run, in: make(chan bridge.Event), done: make(chan struct{}), ended: make(chan struct{})}
	stream := func(yield func(bridge.Event, error) bool) {
		for ev := range cr.in {
			ok := yield(ev, nil)
			cr.done <- struct{}{}
			if !ok {
				return
			}
		}
	}
	w := inbound.SkipFrames(&runWriter{c.out}, skip)
	go func() {
		defer close(cr.ended)
		c.d.ServeEvents(w, c.r, run, stream)
	}()
	c.open[id] = cr
	for _, ev := range prefix {
		if !cr.feed(ev) {
			return false
		}
		if ev.Kind == bridge.KindFinal { // the cursor's event ended the run
			return c.closeRun(cr, ev)
		}
	}
	return true
}

// feed hands ev to the run's encoder and waits until it has written its
// frames; false when the encoder has stopped.
func (cr *channelRun) feed(ev bridge.Event) bool {
	select {
	case cr.in <- ev:
	case <-cr.ended:
		return false
	}
	select {
	case <-cr.done:
		return true
	case <-cr.ended:
		return false
	}
}

// closeRun ends the run's stream after its final event and writes its end
// frame.
func (c *channel) closeRun(cr *channelRun, final bridge.Event) bool {
	close(cr.in)
	<-cr.ended
	delete(c.open, cr.run.ID)
	end := *cr.run
	status := string(bridge.StatusCompleted)
	if final.Final != nil {
		status, end.Reason = string(final.Final.Status), final.Final.Reason
	}
	return c.out.control(EventRunEnded, end.ID+":"+strconv.FormatInt(final.Seq, 10)+".end", runInfo(&end, status)) == nil
}

// closeAll stops the encoders of the runs the channel is in the middle
// of, when it ends.
func (c *channel) closeAll() {
	for id, cr := range c.open {
		close(cr.in)
		<-cr.ended
		delete(c.open, id)
	}
}

// runWriter is a run's encoder's response: its frames go to the channel,
// its headers and status nowhere (the channel's went first).
type runWriter struct{ c *channelWriter }

func (w *runWriter) Header() http.Header         { return http.Header{} }
func (w *runWriter) WriteHeader(int)             {}
func (w *runWriter) Write(p []byte) (int, error) { return w.c.Write(p) }
func (w *runWriter) FlushError() error           { return w.c.FlushError() }

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

// channelWriter is the channel's response; the runs' encoders write their
// frames to it (runWriter), one after another.
type channelWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	mu   sync.Mutex // the keep-alives, the frames
	err  error
	ping []byte // the keep-alive frame (keepAliveFrame)
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

func (c *channelWriter) Write(p []byte) (int, error) {
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

// keepAliveFrame is how a dialect's stream keeps an idle connection
// alive: Anthropic's has a ping event (its SDKs skip it by name); the
// others an SSE comment, which their clients skip (Hermes' own ": keepalive";
// OpenAI's, Responses', A2A's and ADK's streams define none, and their
// SDKs read only data lines). Over a WebSocket a comment is a ping frame.
func keepAliveFrame(dialect string) []byte {
	if dialect == "anthropic" {
		return []byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")
	}
	return []byte(": keepalive\n\n")
}

// keepAlive writes the dialect's keep-alive frame.
func (c *channelWriter) keepAlive() error {
	if _, err := c.Write(c.ping); err != nil {
		return err
	}
	return c.FlushError()
}
