package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/a2a"
	"github.com/bridge-dev/bridge/outbound"
)

// IDStore is the part of the store the client keeps its id maps in.
type IDStore = outbound.IDStore

// Config configures a Client.
type Config struct {
	// Name is the upstream's configured name (the scope of its id maps).
	Name string
	// URL is the agent's base URL, where its card is
	// (URL/.well-known/agent-card.json, or the 0.2 agent.json); the
	// card's url is where requests go.
	URL string
	// Profile is how the agent arranges its events (default a2a).
	Profile wire.Profile
	// APIKey is sent as a bearer token when set; it never appears in
	// logs, errors or history.
	APIKey string
	// AllowOrigins are the origins other than URL's that a card's url may
	// name. A card naming any other origin is refused: the bridge would
	// send APIKey there.
	AllowOrigins []string
	// IDs keeps the id maps; without it every turn opens a new context.
	IDs IDStore
	// Timeouts and HTTPClient as for every upstream.
	Timeouts   outbound.Timeouts
	HTTPClient *http.Client
	// CardTTL is how long a fetched card is used (default 5 minutes).
	CardTTL time.Duration
	// MaxResumes bounds the resubscribes after broken streams of one call
	// (default 5).
	MaxResumes int
	Logger     *slog.Logger
}

// Client calls one A2A agent.
type Client struct {
	cfg Config

	mu     sync.Mutex
	card   *wire.UpstreamCard
	cardAt time.Time

	outbound.DiscardSignal // whether the agent is a bridge (takes X-Replace-From)
	sender                 outbound.Sender
}

var _ bridge.Upstream = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.Name == "" {
		cfg.Name = "a2a"
	}
	if cfg.Profile == "" {
		cfg.Profile = wire.ProfileA2A
	}
	cfg.HTTPClient, cfg.Timeouts = outbound.Defaults(cfg.HTTPClient, cfg.Timeouts)
	if cfg.CardTTL <= 0 {
		cfg.CardTTL = 5 * time.Minute
	}
	if cfg.MaxResumes <= 0 {
		cfg.MaxResumes = 5
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg}
	c.sender = outbound.Sender{Name: cfg.Name, Client: cfg.HTTPClient, DecodeError: wire.DecodeError, Note: c.Note, MaxErrorBody: maxBody}
	return c
}

// Name implements bridge.Upstream.
func (c *Client) Name() string { return c.cfg.Name }

// Dialect implements bridge.Upstream.
func (c *Client) Dialect() string { return wire.Dialect }

const maxBody = 4 << 20

// Card returns the agent's card, fetched at most once per CardTTL.
func (c *Client) Card(ctx context.Context) (*wire.UpstreamCard, error) {
	c.mu.Lock()
	if c.card != nil && time.Since(c.cardAt) < c.cfg.CardTTL {
		card := c.card
		c.mu.Unlock()
		return card, nil
	}
	c.mu.Unlock()
	base := strings.TrimSuffix(c.cfg.URL, "/")
	var firstErr error // the first failure that says more than "not here"
	var lastErr error
	for _, u := range cardURLs(base) {
		card, err := c.fetchCard(ctx, u)
		if err == nil {
			c.mu.Lock()
			c.card, c.cardAt = card, time.Now()
			c.mu.Unlock()
			return card, nil
		}
		lastErr = err
		if firstErr == nil && !errors.Is(err, errCardMissing) {
			firstErr = err
		}
		if ctx.Err() != nil || errors.Is(err, errCardOrigin) {
			break
		}
	}
	if firstErr != nil {
		// A card that was there but broken (cut short, not JSON) is the
		// news, not the 404s of the other places a card may be.
		return nil, firstErr
	}
	return nil, lastErr
}

// cardURLs are where a card may be: the URL itself when it names a JSON
// file, else the well-known paths under it, then under its origin.
func cardURLs(base string) []string {
	if strings.HasSuffix(base, ".json") {
		return []string{base}
	}
	urls := []string{base + wire.CardPath, base + wire.OldCardPath}
	if i := strings.Index(base, "://"); i >= 0 {
		if j := strings.IndexByte(base[i+3:], '/'); j >= 0 {
			origin := base[:i+3+j]
			urls = append(urls, origin+wire.CardPath, origin+wire.OldCardPath)
		}
	}
	return urls
}

func (c *Client) fetchCard(ctx context.Context, u string) (*wire.UpstreamCard, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad agent URL", c.cfg.Name)
	}
	req.Header.Set("Accept", "application/json")
	c.auth(req)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, outbound.DoError(ctx, c.cfg.Name, err)
	}
	defer resp.Body.Close()
	c.Note(resp)
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if rerr != nil && resp.StatusCode == http.StatusOK {
		if ctx.Err() != nil {
			return nil, outbound.DoError(ctx, c.cfg.Name, rerr)
		}
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s: the agent card's answer broke off", c.cfg.Name)
	}
	if resp.StatusCode != http.StatusOK {
		e := wire.DecodeError(resp.StatusCode, b)
		e.Message = "upstream " + c.cfg.Name + ": agent card: " + e.Message
		switch e.Code {
		case bridge.CodeNotFound, bridge.CodeInvalid, bridge.CodeConflict, bridge.CodeTooLarge, bridge.CodeUnsupported:
			// The card is the bridge's own request, not the client's: an
			// agent with no card there is a bad gateway, never the
			// client's 404 (nor its 400).
			e.Code, e.Status, e.Dialect, e.Type, e.UpstreamCode = bridge.CodeUpstream, 0, "", "", ""
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, cardMissingErr{e}
		}
		return nil, e
	}
	card, err := wire.DecodeCard(b)
	if err != nil {
		return nil, err
	}
	if err := outbound.CheckOrigin(c.cfg.Name, c.cfg.URL, card.URL, c.cfg.AllowOrigins); err != nil {
		return nil, cardOriginErr{err}
	}
	return card, nil
}

// errCardOrigin marks a card refused for the origin of its url: the other
// card locations are not tried.
var errCardOrigin = errors.New("agent card names another origin")

type cardOriginErr struct{ error }

// errCardMissing marks a card location that answered 404: the next one is
// tried, and a broken card found elsewhere is the error to report.
var errCardMissing = errors.New("no agent card here")

type cardMissingErr struct{ error }

func (e cardMissingErr) Unwrap() []error { return []error{e.error, errCardMissing} }

func (e cardOriginErr) Unwrap() []error { return []error{e.error, errCardOrigin} }

func (c *Client) auth(req *http.Request) {
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
}

// keyPrefix marks id-map entries keyed by a transcript fingerprint.
const keyPrefix = "fp:"

// Open sends the run's new input to the agent: into the upstream context
// the rest of the transcript is already in (found by its fingerprint, and
// used once: the context then holds more), or into a new context that gets
// the earlier turns inlined when there are any. It returns an error when the agent did not answer, or answered with
// an error before any event.
func (c *Client) Open(ctx context.Context, req *bridge.Request) (*bridge.Call, error) {
	card, err := c.Card(ctx)
	if err != nil {
		return nil, err
	}
	prefix, input := wire.SplitInput(req.Messages)
	if len(input) == 0 {
		return nil, bridge.Errorf(bridge.CodeInvalid, "the transcript ends with the assistant: nothing to send the agent")
	}
	var (
		contextID, taskID string
		inline            []bridge.Message
		dropped           []string
	)
	key := wire.TranscriptKey(prefix)
	run := bridge.RunIDFromContext(ctx)
	if results(input) && c.cfg.IDs != nil {
		// The client's tool results for the calls a task asked for
		// (input-required) continue that task: the run's (a continued
		// run), else the one the transcript leads to (a client that
		// named no session).
		if run != "" {
			taskID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDRun, c.cfg.Name, run)
		}
		if taskID != "" && req.SessionID != "" {
			contextID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, req.SessionID)
		}
		if taskID == "" && key != "" {
			if taskID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDRun, c.cfg.Name, keyPrefix+key); taskID != "" {
				contextID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, keyPrefix+key)
			}
		}
	}
	replaceFrom := ""
	if req.DiscardUpstream != "" && taskID == "" && req.SessionID != "" && c.cfg.IDs != nil {
		// A bridge discards the turns in the context it holds.
		if contextID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, req.SessionID); contextID != "" {
			replaceFrom = req.DiscardUpstream
		}
	}
	if key != "" && taskID == "" && replaceFrom == "" {
		if c.cfg.IDs != nil {
			contextID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, keyPrefix+key)
		}
		if contextID == "" {
			inline = prefix
			dropped = append(dropped, "a2a:history_inlined_in_new_context")
		}
	}
	msg, d := wire.OutboundMessage(bridge.NameToolResults(prefix, input), inline, contextID)
	msg.TaskID = a2asdk.TaskID(taskID)
	dropped = append(dropped, d...)

	call := &call{c: c, card: card, ctx: ctx, run: run, session: req.SessionID,
		transcript: req.Messages, dec: wire.NewStreamDecoder(c.cfg.Profile), replaceFrom: replaceFrom}
	if err := call.send(msg, req.Tools); err != nil {
		return nil, err
	}
	if len(req.Tools) > 0 && !call.bridge {
		// Sent, in the bridge's extension, which an agent that is no
		// bridge ignores.
		dropped = append(dropped, "tools")
	}
	if contextID != "" && key != "" && c.cfg.IDs != nil {
		// The context has moved past the prefix: a transcript that
		// branches from it again (a regenerate, an edit) must not land in
		// a context holding the turns it left out.
		_ = c.cfg.IDs.PutID(context.WithoutCancel(ctx), bridge.IDMapping{Kind: bridge.IDSession, Scope: c.cfg.Name, Local: keyPrefix + key})
	}
	return &bridge.Call{Events: call.events, Dropped: dropped, Cancel: call.cancel, Steer: call.steer}, nil
}

// results reports whether input is only tool results (a client answering
// the calls the agent asked for).
func results(input []bridge.Message) bool {
	for i := range input {
		if input[i].Role != bridge.RoleTool {
			return false
		}
	}
	return len(input) > 0
}

var _ bridge.Resumer = (*Client)(nil)

// Resume implements bridge.Resumer: it follows the run's upstream task
// again, after a restart lost the stream. The task is run.UpstreamRunID (or
// the run's id map entry); it is resubscribed with Last-Event-ID the last
// upstream event id among events, so an agent that replays after that id
// continues the run with no gap and no duplicate, and one that begins with
// a Task snapshot adds only the text not yet emitted. An agent that cannot
// resubscribe (the task ended meanwhile) is asked tasks/get, whose Task
// gives the rest. An error means the task cannot be followed.
func (c *Client) Resume(ctx context.Context, req *bridge.Request, run *bridge.Run, events []bridge.Event) (*bridge.Call, error) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == bridge.KindFinal { // an earlier step's end: the step resumed begins after it
			events = events[i+1:]
			break
		}
	}
	taskID := run.UpstreamRunID
	if taskID == "" && c.cfg.IDs != nil {
		taskID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDRun, c.cfg.Name, run.ID)
	}
	if taskID == "" {
		// The crash came before the agent named the task: the bridge cannot
		// follow it, which is no fault of the agent's (CodeUnsupported, as
		// ADK's and Hermes' clients say it: a Retryable code counted as the
		// agent failing, and a restart that met a few such runs in a row
		// opened the breaker on the resumes of all the others).
		return nil, bridge.Errorf(bridge.CodeUnsupported, "upstream %s never named the run's task", c.cfg.Name)
	}
	card, err := c.Card(ctx)
	if err != nil {
		return nil, err
	}
	// The id map names the session by req.SessionID (the engine's key for
	// the session and its principal), as Open recorded it.
	var (
		transcript []bridge.Message
		session    = run.SessionID
		contextID  string
	)
	if req != nil {
		transcript, session = req.Messages, req.SessionID
	}
	if c.cfg.IDs != nil && session != "" {
		contextID, _ = c.cfg.IDs.RemoteID(ctx, bridge.IDSession, c.cfg.Name, session)
	}
	dec := wire.NewStreamDecoder(c.cfg.Profile)
	dec.Resume(taskID, contextID, events)
	k := &call{c: c, card: card, ctx: ctx, run: run.ID, session: session,
		transcript: transcript, dec: dec, recorded: true}
	k.taskID.Store(taskID)
	if err := k.resume(); err != nil {
		k.close()
		return nil, err
	}
	out := &bridge.Call{Events: k.events, Cancel: k.cancel, Steer: k.steer}
	// An agent that neither replays after Last-Event-ID nor begins with a
	// Task snapshot (a2a-go's server) lost what it streamed while the
	// bridge was down: the task's artifacts, read at the end, say so.
	k.verify, k.out = c.cfg.Profile == wire.ProfileA2A, out
	return out, nil
}

// droppedResumeGap is recorded on a resumed run whose answer misses text
// the agent's task holds.
const droppedResumeGap = "a2a:text_streamed_while_the_bridge_was_down"

// call is one upstream task being followed.
type call struct {
	c          *Client
	card       *wire.UpstreamCard
	ctx        context.Context
	run        string
	session    string
	transcript []bridge.Message
	dec        *wire.StreamDecoder

	body    io.ReadCloser // the stream being read, nil when none
	stop    context.CancelCauseFunc
	sse     *wire.SSEReader
	pending []bridge.Event // decoded, not yet yielded
	buf     []bridge.Event

	taskID          atomic.Value // string, for cancel
	cancelRequested atomic.Bool
	recorded        bool
	bridge          bool // the agent is a bridge (it named its run in X-Run-Id)

	// replaceFrom is the task the first send discards (a bridge agent's
	// X-Replace-From), "" once sent.
	replaceFrom string

	verify bool         // a call resumed after a restart: compare the answer with the task's at the end
	out    *bridge.Call // the call handed out, whose Dropped verify adds to
}

// request is a JSON-RPC request to the agent, with the version header its
// card asks for and the key.
func (k *call) request(ctx context.Context, body []byte, accept string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.card.URL, bytes.NewReader(body))
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad agent URL", k.c.cfg.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if k.card.Version == wire.V10 {
		req.Header.Set(wire.VersionHeader, "1.0")
	}
	k.c.auth(req)
	return req, nil
}

// post sends one JSON-RPC request on its own connection context.
func (k *call) post(body []byte, stream bool, lastEventID string) (*http.Response, context.CancelCauseFunc, error) {
	ctx, cancel := context.WithCancelCause(k.ctx)
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	req, err := k.request(ctx, body, accept)
	if err != nil {
		cancel(nil)
		return nil, nil, err
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if k.replaceFrom != "" {
		req.Header.Set(outbound.HeaderReplaceFrom, k.replaceFrom)
	}
	resp, err := k.c.sender.Do(req)
	if err != nil {
		cancel(nil)
		return nil, nil, err
	}
	return resp, cancel, nil
}

// send sends the message (with the client's tools) and reads until the
// first events, so an error the agent answers at once is Open's error.
func (k *call) send(msg *a2asdk.Message, tools []bridge.Tool) error {
	body := wire.EncodeSend(a2asdk.NewMessageID(), k.card.Version, msg, wire.SendOptions{Stream: k.card.Streaming, Tools: tools})
	resp, cancel, err := k.post(body, k.card.Streaming, "")
	k.replaceFrom = "" // only the send discards
	if err != nil {
		return err
	}
	k.bridge = resp.Header.Get("X-Run-Id") != "" // a bridge names its run
	if err := k.attach(resp, cancel); err != nil {
		k.close()
		return err
	}
	return k.fill()
}

// attach takes a response: an SSE stream to read, or a JSON response
// decoded at once.
func (k *call) attach(resp *http.Response, cancel context.CancelCauseFunc) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		k.body = outbound.IdleBody(resp.Body, k.c.cfg.Timeouts.Idle, cancel)
		k.stop = cancel
		k.sse = wire.NewSSEReader(k.body)
		return nil
	}
	defer cancel(nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return outbound.StreamError(k.ctx, k.c.cfg.Name, 0, bridge.Errorf(bridge.CodeUpstream, "upstream %s: reading its answer failed", k.c.cfg.Name))
	}
	k.pending, err = k.dec.Frame(b, "", k.pending)
	k.learn()
	return err
}

func (k *call) close() {
	if k.body != nil {
		k.body.Close()
		k.body = nil
	}
	if k.stop != nil {
		k.stop(nil)
		k.stop = nil
	}
	k.sse = nil
}

// fill reads frames until some events are pending, the task ends, or the
// stream does. An error comes back as is; io.EOF means the stream ended.
func (k *call) fill() error {
	for len(k.pending) == 0 && !k.dec.Done() {
		if k.sse == nil {
			return io.EOF
		}
		ev, err := k.sse.Next()
		if err != nil {
			k.close()
			if err == io.EOF {
				return io.EOF
			}
			return err
		}
		k.pending, err = k.dec.Frame(ev.Data, ev.ID, k.pending)
		k.learn()
		if err != nil {
			k.close()
			return err
		}
		if k.dec.Unfinished() {
			k.close() // final: true without an outcome: resubscribe
			return io.EOF
		}
	}
	return nil
}

// learn records the upstream ids the decoder has seen.
func (k *call) learn() {
	if k.dec.TaskID == "" || k.recorded {
		return
	}
	k.recorded = true
	k.taskID.Store(k.dec.TaskID)
	k.put(bridge.IDRun, k.run, k.dec.TaskID)
	if k.dec.ContextID != "" {
		k.put(bridge.IDSession, k.session, k.dec.ContextID)
	}
}

func (k *call) put(kind bridge.IDKind, local, remote string) {
	if k.c.cfg.IDs == nil || local == "" || remote == "" {
		return
	}
	if err := k.c.cfg.IDs.PutID(context.WithoutCancel(k.ctx), bridge.IDMapping{Kind: kind, Scope: k.c.cfg.Name, Local: local, Remote: remote}); err != nil {
		k.c.cfg.Logger.Warn("a2a id map", "upstream", k.c.cfg.Name, "kind", kind, "err", err)
	}
}

// events yields the task's events; a stream that breaks before the task's
// outcome is resubscribed, then read with tasks/get.
func (k *call) events(yield func(bridge.Event, error) bool) {
	defer k.close()
	resumes := 0
	for {
		for len(k.pending) > 0 {
			ev := k.pending[0]
			k.pending = k.pending[1:]
			if ev.Kind == bridge.KindFinal {
				k.finalize(&ev)
			}
			if !yield(ev, nil) {
				return
			}
			if ev.Kind == bridge.KindFinal {
				return
			}
		}
		if k.dec.Done() {
			return
		}
		err := k.fill()
		if err == nil {
			continue
		}
		if k.ctx.Err() != nil {
			yield(bridge.Event{}, outbound.StreamError(k.ctx, k.c.cfg.Name, k.c.cfg.Timeouts.Idle, err))
			return
		}
		var be *bridge.Error
		if errors.As(err, &be) && be.Dialect == wire.Dialect {
			yield(bridge.Event{}, err) // the agent said it: an error frame
			return
		}
		// The stream broke (or ended) before the task's outcome.
		if k.cancelRequested.Load() {
			// The bridge canceled the task: the agent closing its stream
			// is the cancel taking effect, not a break to resume.
			f := bridge.Event{Kind: bridge.KindFinal, Final: &bridge.Final{Status: bridge.StatusCancelled,
				Reason: "the upstream task was canceled"}}
			yield(f, nil)
			return
		}
		if k.dec.TaskID == "" || resumes >= k.c.cfg.MaxResumes {
			if err == io.EOF {
				err = bridge.Errorf(bridge.CodeUpstream, "upstream %s ended its stream before the task's outcome", k.c.cfg.Name)
			}
			yield(bridge.Event{}, err)
			return
		}
		resumes++
		if rerr := k.resume(); rerr != nil {
			yield(bridge.Event{}, rerr)
			return
		}
	}
}

// resume reattaches to the task: tasks/resubscribe from the last upstream
// event id; when the agent cannot (a2a-go answers -32001 for a task that
// ended), tasks/get, whose Task gives the rest.
func (k *call) resume() error {
	last := k.dec.LastEventID
	k.put(bridge.IDCursor, k.run, last)
	k.c.cfg.Logger.Info("a2a resubscribe", "upstream", k.c.cfg.Name, "task", k.dec.TaskID, "after", last)
	if k.card.Streaming {
		body := wire.EncodeTaskRequest(a2asdk.NewMessageID(), wire.OpSubscribe, k.card.Version, k.dec.TaskID)
		resp, cancel, err := k.post(body, true, last)
		if err == nil {
			if err = k.attach(resp, cancel); err == nil {
				if err = k.fill(); err == nil || (err == io.EOF && k.dec.Done()) {
					return nil
				}
			}
		}
		if k.ctx.Err() != nil {
			return outbound.StreamError(k.ctx, k.c.cfg.Name, k.c.cfg.Timeouts.Idle, err)
		}
	}
	body := wire.EncodeTaskRequest(a2asdk.NewMessageID(), wire.OpGet, k.card.Version, k.dec.TaskID)
	resp, cancel, err := k.post(body, false, "")
	if err != nil {
		return err
	}
	return k.attach(resp, cancel)
}

// finalize rewrites an outcome before it is yielded: a cancel the bridge
// did not ask for interrupts the run; a turn that ended well records the
// context its transcript now leads to.
func (k *call) finalize(ev *bridge.Event) {
	f := ev.Final
	if f == nil {
		return
	}
	if f.Status == bridge.StatusCancelled && !k.cancelRequested.Load() {
		g := *f
		g.Status = bridge.StatusInterrupted
		ev.Final = &g
		f = &g
	}
	if k.verify && f.Status == bridge.StatusCompleted && k.lostText() {
		k.c.cfg.Logger.Warn("a2a resumed task: text streamed while the bridge was down is missing", "upstream", k.c.cfg.Name, "task", k.dec.TaskID)
		k.out.Dropped = append(k.out.Dropped, droppedResumeGap)
	}
	if (f.Status == bridge.StatusCompleted || f.Status == bridge.StatusInputRequired) && k.dec.ContextID != "" && len(k.transcript) > 0 {
		answer := bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart(k.dec.Answer())}}
		next := append(append([]bridge.Message(nil), k.transcript...), answer)
		k.put(bridge.IDSession, keyPrefix+wire.TranscriptKey(next), k.dec.ContextID)
		if asked := k.dec.Asked(); f.Status == bridge.StatusInputRequired && len(asked) > 0 {
			// The transcript a client that answers the calls resends
			// leads to the task that waits for them.
			answer.ToolCalls = asked
			next[len(next)-1] = answer
			key := keyPrefix + wire.TranscriptKey(next)
			k.put(bridge.IDSession, key, k.dec.ContextID)
			k.put(bridge.IDRun, key, k.dec.TaskID)
		}
	}
}

// lostText reports whether the task's answer, as tasks/get gives it, is
// not the answer emitted (false when it cannot tell).
func (k *call) lostText() bool {
	body := wire.EncodeTaskRequest(a2asdk.NewMessageID(), wire.OpGet, k.card.Version, k.dec.TaskID)
	resp, cancel, err := k.post(body, false, "")
	if err != nil {
		return false
	}
	defer cancel(nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return false
	}
	d := wire.NewStreamDecoder(k.c.cfg.Profile)
	if _, err := d.Frame(b, "", nil); err != nil {
		return false
	}
	return d.Answer() != "" && d.Answer() != k.dec.Answer()
}

// cancel is the call's own cancel: tasks/cancel of the upstream task.
func (k *call) cancel(ctx context.Context) error {
	id, _ := k.taskID.Load().(string)
	if id == "" {
		return nil // the agent has not named its task yet; closing the stream is all there is
	}
	k.cancelRequested.Store(true)
	status, b, err := k.rpc(ctx, wire.EncodeTaskRequest(a2asdk.NewMessageID(), wire.OpCancel, k.card.Version, id))
	if err != nil {
		return err
	}
	if _, failed := rpcAnswer(b); status != http.StatusOK || failed {
		return wire.DecodeError(status, b)
	}
	return nil
}

// rpc sends one JSON-RPC request that the agent answers at once, and
// reads the answer (at most maxBody of it).
func (k *call) rpc(ctx context.Context, body []byte) (int, []byte, error) {
	req, err := k.request(ctx, body, "application/json")
	if err != nil {
		return 0, nil, err
	}
	resp, err := k.c.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, outbound.DoError(ctx, k.c.cfg.Name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, nil
}

// rpcAnswer reports whether b is a JSON-RPC answer (a JSON object) and
// whether it holds an error.
func rpcAnswer(b []byte) (valid, failed bool) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &env) != nil {
		return false, false
	}
	return true, len(env.Error) > 0 && string(env.Error) != "null"
}

// steer is the call's own steer: the user's message sent to the working
// task (message/send with its taskId, not blocking), which an agent that
// accepts more input for a task in progress (a bridge does) takes into
// the same turn. An agent that refuses it (a2a-go's server takes no
// message for a running task) answers an error: CodeUnsupported, and the
// engine keeps the steer for one more call after this one, in the same
// run, which records that the steer did not join the upstream's turn.
func (k *call) steer(ctx context.Context, m bridge.Message) error {
	id, _ := k.taskID.Load().(string)
	if id == "" {
		return bridge.Errorf(bridge.CodeConflict, "upstream %s has not named the run's task yet", k.c.cfg.Name)
	}
	msg, _ := wire.OutboundMessage([]bridge.Message{m}, nil, k.dec.ContextID)
	msg.TaskID = a2asdk.TaskID(id)
	status, b, err := k.rpc(ctx, wire.EncodeSend(a2asdk.NewMessageID(), k.card.Version, msg, wire.SendOptions{NoWait: true}))
	if err != nil {
		return err
	}
	if valid, failed := rpcAnswer(b); status == http.StatusOK && valid && !failed {
		return nil
	}
	e := wire.DecodeError(status, b)
	return &bridge.Error{Code: bridge.CodeUnsupported, Message: "upstream " + k.c.cfg.Name + " did not take the steer: " + e.Message,
		Dialect: e.Dialect, UpstreamCode: e.UpstreamCode}
}
