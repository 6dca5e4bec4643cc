package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/inbound"
	wire "github.com/bridge-dev/bridge/mapping/a2a"
)

// Config configures a Handler.
type Config struct {
	Engine *bridge.Engine
	// Card describes the agent; an empty Card.URL is derived from each
	// card request (scheme and host, then /a2a).
	Card wire.CardConfig
	// TrustedProxies are the remote addresses whose X-Forwarded-Host and
	// X-Forwarded-Proto a derived card URL takes; from any other address
	// those headers are ignored (anyone can send them).
	TrustedProxies []netip.Prefix
	// Model is the model name runs ask the router for (A2A names none).
	Model string
	// MaxBody bounds request bodies (default inbound.DefaultMaxBody).
	MaxBody int64
	Logger  *slog.Logger
}

// Handler serves the dialect.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// Path is the JSON-RPC endpoint.
const Path = "/a2a"

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST "+Path, h.rpc)
	for _, p := range h.PublicRoutes() {
		h.mux.HandleFunc(p, h.card)
	}
	return h
}

// Routes lists the patterns that need the caller's credentials.
func (h *Handler) Routes() []string { return []string{"POST " + Path} }

// PublicRoutes lists the agent card routes, which anyone may read (a card
// says how to authenticate).
func (h *Handler) PublicRoutes() []string {
	return []string{"GET " + wire.CardPath, "GET " + wire.OldCardPath, "OPTIONS " + wire.CardPath, "OPTIONS " + wire.OldCardPath}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Name implements inbound.Dialect.
func (h *Handler) Name() string { return wire.Dialect }

// WriteError implements inbound.Dialect: a JSON-RPC error response (id
// null) with an HTTP status for the error's code, for errors raised before
// a JSON-RPC request was read (authentication, the run API).
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	be := bridge.AsError(err)
	status, body := wire.EncodeError(be)
	inbound.WriteErrorBody(w, be, status, body, "")
}

// History implements inbound.Dialect: {tasks, nextPageToken}.
func (h *Handler) History(p *bridge.HistoryPage) ([]byte, error) { return wire.EncodeHistory(p) }

// PagesByRun implements runs.RunPager: a history page is a number of
// tasks, and never splits one.
func (h *Handler) PagesByRun() {}

// card serves the agent card. Any origin may read it (Allow-Origin *): a
// card is public by design (it says how to authenticate, and the route
// takes no key), it carries nothing of the caller's, and a browser sends
// no credentials with a wildcard origin. What the wildcard must not carry
// is a URL a caller chose, which is why the URL comes from the config or
// a trusted proxy only.
func (h *Handler) card(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "*")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c := h.cfg.Card
	if c.URL == "" {
		// The card depends on the Host (and a trusted proxy's headers):
		// a shared cache must not serve one host's card for another.
		w.Header().Set("Vary", "Host, X-Forwarded-Host, X-Forwarded-Proto")
		c.URL = h.baseURL(r) + Path
	}
	body, err := wire.EncodeCard(c)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// baseURL is the scheme and host the request came to: its own, or the
// X-Forwarded-Proto and -Host of a trusted proxy.
func (h *Handler) baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if h.fromTrustedProxy(r) {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
			scheme = p
		}
		if fh := r.Header.Get("X-Forwarded-Host"); fh != "" && !strings.ContainsAny(fh, "/ ,") {
			host = fh
		}
	}
	return scheme + "://" + host
}

// fromTrustedProxy reports whether the connection came from one of the
// configured proxies.
func (h *Handler) fromTrustedProxy(r *http.Request) bool {
	if len(h.cfg.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range h.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// call is one JSON-RPC request being served.
type call struct {
	req *wire.Request
	v   wire.Version
	r   *http.Request
}

// rpc serves POST /a2a: one request, a batch, or a notification. Every
// error is a JSON-RPC error object with HTTP 200 (a2a-go's clients take
// no other status); a streaming method's error comes as one SSE frame.
func (h *Handler) rpc(w http.ResponseWriter, r *http.Request) {
	body, err := inbound.ReadBody(w, r, h.cfg.MaxBody)
	if err != nil {
		h.writeJSON(w, wire.AppendError(nil, nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: bridge.AsError(err).Message}, wire.V03))
		return
	}
	v, verr := wire.ParseVersion(r.Header.Get(wire.VersionHeader))
	if ct := r.Header.Get("Content-Type"); ct != "" && !jsonContentType(ct) {
		h.writeJSON(w, wire.AppendError(nil, nil, wire.ErrContentType("Content-Type "+strconv.Quote(ct)+" is not supported: send application/json"), v))
		return
	}
	reqs, batch, derr := wire.DecodeRequest(body)
	if derr != nil {
		h.writeJSON(w, wire.AppendError(nil, nil, derr, v))
		return
	}
	if verr != nil {
		out := make([][]byte, 0, len(reqs))
		for i := range reqs {
			out = append(out, wire.AppendError(nil, reqs[i].ID, verr, wire.V03))
		}
		h.writeResponses(w, out, batch)
		return
	}
	if !batch && reqs[0].Err == nil && reqs[0].Op.Streaming() && !reqs[0].Notification() {
		h.stream(w, &call{req: &reqs[0], v: v, r: r})
		return
	}
	out := make([][]byte, 0, len(reqs))
	for i := range reqs {
		c := &call{req: &reqs[i], v: v, r: r}
		if res, answer := h.unary(r.Context(), c, batch); answer {
			out = append(out, res)
		}
	}
	h.writeResponses(w, out, batch)
}

func jsonContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func (h *Handler) writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// writeResponses writes one response, a batch's array, or nothing (204)
// when only notifications came.
func (h *Handler) writeResponses(w http.ResponseWriter, out [][]byte, batch bool) {
	switch {
	case len(out) == 0:
		w.WriteHeader(http.StatusNoContent)
	case !batch:
		h.writeJSON(w, out[0])
	default:
		b := []byte{'['}
		for i, o := range out {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, o...)
		}
		h.writeJSON(w, append(b, ']'))
	}
}

// unary answers a request that is not streamed (or is in a batch, or is a
// notification) with one JSON-RPC response; answer is false for a
// notification carried out.
//
// A notification that is carried out gets no response, as JSON-RPC says;
// one that cannot be (an unknown method, bad params) is answered with its
// error, id null, as A2A servers do and the A2A TCK requires: a client
// that left out the id by mistake learns why nothing happened.
func (h *Handler) unary(ctx context.Context, c *call, batch bool) (res []byte, answer bool) {
	req := c.req
	if req.Err != nil {
		return wire.AppendError(nil, req.ID, req.Err, c.v), true
	}
	result, err := h.method(ctx, c, batch)
	if err != nil {
		return wire.AppendError(nil, req.ID, h.rpcError(err), c.v), true
	}
	return wire.AppendResult(nil, req.ID, result), !req.Notification()
}

// rpcError turns any error into a JSON-RPC error; unexpected ones are
// logged and become -32603 without their text.
func (h *Handler) rpcError(err error) *wire.Error {
	var re *wire.Error
	if errors.As(err, &re) {
		return re
	}
	var be *bridge.Error
	if !errors.As(err, &be) {
		h.cfg.Logger.Error("a2a request failed", "err", err)
	}
	return wire.RPCError(err)
}

func (h *Handler) method(ctx context.Context, c *call, batch bool) ([]byte, error) {
	switch c.req.Op {
	case wire.OpSend:
		return h.send(ctx, c)
	case wire.OpGet:
		return h.get(ctx, c)
	case wire.OpCancel:
		return h.cancel(ctx, c)
	case wire.OpList:
		return h.list(ctx, c)
	case wire.OpStream, wire.OpSubscribe:
		if batch {
			return nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "Invalid JSON-RPC Request: " + c.req.Method + " streams, and cannot be batched."}
		}
		// A notification: start the run and stream nothing.
		if c.req.Op == wire.OpStream {
			_, err := h.send(ctx, c)
			return nil, err
		}
		return nil, nil
	case wire.OpPushSet, wire.OpPushGet, wire.OpPushList, wire.OpPushDelete:
		return nil, wire.ErrPushNotSupported()
	case wire.OpExtendedCard:
		return nil, wire.ErrExtendedCard()
	}
	return nil, wire.ErrMethodNotFound(c.req.Method)
}

// start starts a run for a send's message, steers the running task the
// message names, or continues the task that waits for the client's tool
// results the message carries (function_response data parts). A message
// naming a task that has ended is refused (the spec's
// UnsupportedOperationError); one naming a task that waits for input
// without answering its calls starts a new run in that task's context.
//
// X-Replace-From (a regenerate or an edit) names a task of the context
// that the new run discards with every later one. A new run keeps the
// call's JSON-RPC id and version (render), so its stream can be rendered
// again as the client received it.
func (h *Handler) start(ctx context.Context, c *call, p *wire.SendParams) (run *bridge.Run, kind startKind, err error) {
	replaceFrom := c.r.Header.Get(inbound.HeaderReplaceFrom)
	if p.Push {
		return nil, 0, wire.ErrPushNotSupported()
	}
	if len(p.AcceptedOutputModes) > 0 && !acceptsOurOutput(p.AcceptedOutputModes) {
		return nil, 0, wire.ErrContentType("none of acceptedOutputModes " + strings.Join(p.AcceptedOutputModes, ", ") +
			" is an output mode of this agent (text/plain, application/json)")
	}
	m := p.Message
	if m.Role != a2asdk.MessageRoleUser {
		return nil, 0, wire.ErrInvalidParams("params.message.role: a client's message has role user")
	}
	if !inbound.ValidID(m.ContextID) || !inbound.ValidID(string(m.TaskID)) {
		return nil, 0, wire.ErrInvalidParams("params.message.contextId and taskId: at most 256 bytes of printable characters, no control characters")
	}
	session := m.ContextID
	var results []bridge.Message
	if m.TaskID != "" {
		prev, err := h.cfg.Engine.Run(ctx, string(m.TaskID))
		if err != nil {
			if bridge.ErrorCode(err) == bridge.CodeNotFound {
				return nil, 0, wire.ErrTaskNotFound(string(m.TaskID))
			}
			return nil, 0, err
		}
		if session != "" && session != prev.SessionID {
			return nil, 0, wire.ErrInvalidParams("params.message.contextId " + strconv.Quote(session) +
				" is not the context of task " + prev.ID)
		}
		session = prev.SessionID
		switch prev.Status {
		case bridge.StatusRunning:
			msg, _ := wire.HubMessage(m)
			err := h.cfg.Engine.Steer(ctx, prev.ID, msg)
			if err == nil {
				run, err := h.cfg.Engine.Run(ctx, prev.ID)
				return run, startSteered, err
			}
			if bridge.ErrorCode(err) != bridge.CodeConflict {
				return nil, 0, err
			}
			return nil, 0, wire.ErrUnsupportedOperation("Task " + prev.ID + " took no more input: it has ended")
		case bridge.StatusInputRequired:
			var rest *a2asdk.Message
			if results, rest = wire.HubToolResults(m); len(results) > 0 {
				if err := h.answers(ctx, prev.ID, results); err != nil {
					return nil, 0, err
				}
				if rest != nil {
					return nil, 0, wire.ErrInvalidParams("params.message: a message that answers task " + prev.ID +
						"'s function calls carries only function_response parts")
				}
			}
		default:
			return nil, 0, wire.ErrUnsupportedOperation("Task " + prev.ID + " is in a terminal state (" + stateOf(prev.Status) +
				") and takes no more messages: send the message without taskId to start a new task in its context")
		}
	}
	msgs, dropped := results, []string(nil)
	if len(results) == 0 {
		msg, d := wire.HubMessage(m)
		msgs, dropped = []bridge.Message{msg}, d
	}
	tools, err := wire.ToolsOf(p.Metadata) // the bridge's extension: a client's tools
	if err != nil {
		return nil, 0, err
	}
	req := &bridge.Request{
		Inbound: wire.Dialect, Model: h.cfg.Model, SessionID: session, ClientRunID: m.ID,
		Detached: true, Stream: true, Messages: msgs, Dropped: dropped, Tools: tools, ReplaceFrom: replaceFrom,
	}
	req.Render, _ = json.Marshal(render{ID: c.req.ID, Version: c.v.String()})
	run, err = h.cfg.Engine.Start(ctx, req)
	if err != nil && bridge.ErrorCode(err) == bridge.CodeNotFound && bridge.AsError(err).Param == bridge.ParamReplaceFrom {
		return nil, 0, wire.ErrTaskNotFound(replaceFrom)
	}
	if err != nil && bridge.ErrorCode(err) == bridge.CodeNotFound && session != "" {
		return nil, 0, wire.ErrInvalidParams("params.message.contextId: context " + strconv.Quote(session) + " not found")
	}
	if err == nil && len(results) > 0 {
		kind = startContinued
	}
	return run, kind, err
}

// startKind says what a message did to its task.
type startKind uint8

const (
	startNew       startKind = iota
	startSteered             // joined the running task
	startContinued           // gave the waiting task its tool results
)

// answers checks that results answer exactly the calls task waits on (the
// tool calls of its last assistant message), so they continue it.
func (h *Handler) answers(ctx context.Context, task string, results []bridge.Message) error {
	msgs, err := h.cfg.Engine.RunMessages(ctx, task)
	if err != nil {
		return taskErr(task, err)
	}
	want := map[string]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == bridge.RoleAssistant {
			for _, c := range msgs[i].ToolCalls {
				want[c.ID] = true
			}
			break
		}
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, strconv.Quote(id))
	}
	sort.Strings(ids)
	if len(results) != len(want) {
		return wire.ErrInvalidParams("params.message: task " + task + " waits for the results of its calls " +
			strings.Join(ids, ", ") + ", one function_response each")
	}
	for _, r := range results {
		if !want[r.ToolCallID] {
			return wire.ErrInvalidParams("params.message: function_response id " + strconv.Quote(r.ToolCallID) +
				" answers no call task " + task + " waits on (" + strings.Join(ids, ", ") + ")")
		}
		delete(want, r.ToolCallID)
	}
	return nil
}

// acceptsOurOutput reports whether a client's accepted output modes
// include text or JSON.
func acceptsOurOutput(modes []string) bool {
	for _, m := range modes {
		switch strings.ToLower(strings.TrimSpace(m)) {
		case "text", "text/plain", "text/*", "*/*", "*", "application/json", "json", "application/*", "text/markdown":
			return true
		}
	}
	return false
}

// send serves message/send: the final task when blocking (the default),
// else the task as it stands; a steer answers at once with the task.
func (h *Handler) send(ctx context.Context, c *call) ([]byte, error) {
	p, err := wire.DecodeSendParams(c.req.Params)
	if err != nil {
		return nil, err
	}
	run, kind, err := h.start(ctx, c, p)
	if err != nil {
		return nil, err
	}
	steered := kind == startSteered
	tb, err := h.fold(ctx, run.ID, !steered && p.Blocking)
	if err != nil {
		return nil, err
	}
	t := tb.Task()
	if steered {
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		t.Metadata["steer"] = "accepted"
	}
	return wire.AppendSendResult(nil, t, c.v, p.HistoryLength), nil
}

// fold builds a run's task from its committed events: to the run's end
// when wait, else as far as they go now. A client that leaves while
// waiting gets the task as it stood.
func (h *Handler) fold(ctx context.Context, runID string, wait bool) (*wire.TaskBuilder, error) {
	run, events, err := h.cfg.Engine.Subscribe(ctx, runID, 0)
	if err != nil {
		return nil, taskErr(runID, err)
	}
	msgs, err := h.cfg.Engine.RunMessages(ctx, runID)
	if err != nil {
		return nil, taskErr(runID, err)
	}
	tb := wire.NewTaskBuilder(run, msgs)
	if !wait && run.LastSeq == 0 {
		return tb, nil
	}
	for ev, err := range events {
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, err
		}
		tb.Add(&ev)
		if !wait && ev.Seq >= run.LastSeq {
			break
		}
	}
	return tb, nil
}

// decodeTaskParams is wire.DecodeTaskParams with the task id a client
// gives checked as every client-given id is (inbound.ValidID), before it
// is looked up or quoted back in a "not found".
func decodeTaskParams(params json.RawMessage) (*wire.TaskParams, error) {
	p, err := wire.DecodeTaskParams(params)
	if err != nil {
		return nil, err
	}
	if !inbound.ValidID(p.ID) {
		return nil, wire.ErrInvalidParams("params.id: at most 256 bytes of printable characters, no control characters")
	}
	return p, nil
}

func taskErr(id string, err error) error {
	if bridge.ErrorCode(err) == bridge.CodeNotFound {
		return wire.ErrTaskNotFound(id)
	}
	return err
}

// get serves tasks/get.
func (h *Handler) get(ctx context.Context, c *call) ([]byte, error) {
	p, err := decodeTaskParams(c.req.Params)
	if err != nil {
		return nil, err
	}
	tb, err := h.fold(ctx, p.ID, false)
	if err != nil {
		return nil, err
	}
	return wire.AppendTask(nil, tb.Task(), c.v, p.HistoryLength), nil
}

// cancel serves tasks/cancel: a running task is aborted (the upstream
// call closed, and the upstream's own cancel called where it has one); a
// task that has ended cannot be canceled.
func (h *Handler) cancel(ctx context.Context, c *call) ([]byte, error) {
	p, err := decodeTaskParams(c.req.Params)
	if err != nil {
		return nil, err
	}
	run, err := h.cfg.Engine.Run(ctx, p.ID)
	if err != nil {
		return nil, taskErr(p.ID, err)
	}
	if run.Status != bridge.StatusRunning {
		return nil, wire.ErrTaskNotCancelable(p.ID, stateOf(run.Status))
	}
	if _, err := h.cfg.Engine.Abort(ctx, p.ID); err != nil {
		return nil, taskErr(p.ID, err)
	}
	tb, err := h.fold(ctx, p.ID, false)
	if err != nil {
		return nil, err
	}
	return wire.AppendTask(nil, tb.Task(), c.v, p.HistoryLength), nil
}

func stateOf(s bridge.Status) string {
	tb := wire.NewTaskBuilder(&bridge.Run{Status: s}, nil)
	return string(tb.State())
}

// list serves ListTasks: the tasks of one context, oldest first, pageSize
// tasks of the session's history at a time (a task is never split across
// pages).
func (h *Handler) list(ctx context.Context, c *call) ([]byte, error) {
	p, err := wire.DecodeListParams(c.req.Params)
	if err != nil {
		return nil, err
	}
	if p.ContextID == "" {
		return nil, wire.ErrInvalidParams("params.contextId is required: this agent lists the tasks of one context")
	}
	if !inbound.ValidID(p.ContextID) {
		return nil, wire.ErrInvalidParams("params.contextId: at most 256 bytes of printable characters, no control characters")
	}
	size := p.PageSize
	if size == 0 {
		size = 50
	}
	page, err := h.cfg.Engine.HistoryRuns(ctx, p.ContextID, p.PageToken, size)
	var tasks []*a2asdk.Task
	switch {
	case bridge.ErrorCode(err) == bridge.CodeNotFound:
		page = &bridge.HistoryPage{}
	case err != nil:
		return nil, err
	}
	for _, t := range wire.HistoryTasks(page) {
		if p.State != "" && t.Status.State != p.State {
			continue
		}
		if !p.After.IsZero() && (t.Status.Timestamp == nil || !t.Status.Timestamp.After(p.After)) {
			continue
		}
		if !p.IncludeArtifacts && c.v == wire.V10 {
			t.Artifacts = nil
		}
		tasks = append(tasks, t)
	}
	b := []byte(`{"tasks":[`)
	for i, t := range tasks {
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendTask(b, t, c.v, p.HistoryLength)
	}
	b = append(b, `],"totalSize":`...)
	b = strconv.AppendInt(b, int64(len(tasks)), 10)
	b = append(b, `,"pageSize":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, `,"nextPageToken":`...)
	next := ""
	if page.HasMore {
		next = page.Cursor
	}
	b, _ = appendJSONString(b, next)
	return append(b, '}'), nil
}

func appendJSONString(b []byte, s string) ([]byte, error) {
	q, err := json.Marshal(s)
	return append(b, q...), err
}

// stream serves message/stream and tasks/resubscribe as SSE.
func (h *Handler) stream(w http.ResponseWriter, c *call) {
	ctx := c.r.Context()
	// The events one commit made available leave in one write.
	batch, sctx := inbound.NewBatch(ctx)
	enc := func(tb *wire.TaskBuilder) *wire.StreamEncoder {
		return wire.NewStreamEncoder(batch.Writer(w), tb, wire.StreamOptions{Version: c.v, RequestID: c.req.ID})
	}
	fail := func(err error) {
		sw := inbound.NewSSEWriter(w)
		w.WriteHeader(http.StatusOK)
		_, _ = sw.Write(append(append([]byte("data: "), wire.AppendError(nil, c.req.ID, h.rpcError(err), c.v)...), "\n\n"...))
	}
	var (
		runID    string
		after    int64
		snapshot bool // start with the task as it stands (a stream joining mid-way)
	)
	switch c.req.Op {
	case wire.OpStream:
		p, err := wire.DecodeSendParams(c.req.Params)
		if err != nil {
			fail(err)
			return
		}
		run, kind, err := h.start(ctx, c, p)
		if err != nil {
			fail(err)
			return
		}
		runID = run.ID
		switch kind {
		case startSteered:
			after, snapshot = run.LastSeq, true
		case startContinued:
			after = run.LastSeq // the task as it stood was sent; what follows is new
		}
	case wire.OpSubscribe:
		p, err := decodeTaskParams(c.req.Params)
		if err != nil {
			fail(err)
			return
		}
		run, err := h.cfg.Engine.Run(ctx, p.ID)
		if err != nil {
			fail(taskErr(p.ID, err))
			return
		}
		runID = run.ID
		cur := inbound.LastEventID(c.r, "")
		if after, err = cursor(run.ID, cur); err != nil {
			fail(err)
			return
		}
		if c.v == wire.V10 && cur == "" && run.Status != bridge.StatusRunning {
			fail(wire.ErrUnsupportedOperation("Task " + run.ID + " is in a final state; SubscribeToTask needs a task that is still running"))
			return
		}
	}
	run, events, err := h.cfg.Engine.Subscribe(sctx, runID, 0)
	if err != nil {
		fail(taskErr(runID, err))
		return
	}
	msgs, err := h.cfg.Engine.RunMessages(ctx, runID)
	if err != nil {
		fail(taskErr(runID, err))
		return
	}
	inbound.SetDropped(w.Header(), run.Dropped)
	w.Header().Set("X-Run-Id", run.ID)
	w.Header().Set("X-Session-Id", run.SessionID)
	e := enc(wire.NewTaskBuilder(run, msgs))
	w.WriteHeader(http.StatusOK)
	h.follow(ctx, e, run, events, after, snapshot)
	h.recordDropped(ctx, run.ID, e.Dropped())
}

// follow writes the events after cursor after (folding the earlier ones),
// from a task snapshot first when snapshot, until the final frame.
func (h *Handler) follow(ctx context.Context, e *wire.StreamEncoder, run *bridge.Run, events bridge.Stream, after int64, snapshot bool) {
	next, stop := iter.Pull2(events)
	defer stop()
	wrote := false
	ended := false // the cursor is at or past the run's final: nothing follows it
	for !e.Done() {
		if snapshot && after == 0 {
			snapshot = false
			if e.WriteTask("", nil) != nil {
				return
			}
			wrote = true
		}
		ev, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			if ctx.Err() == nil {
				h.cfg.Logger.Warn("a2a stream ended early", "run", run.ID, "err", err)
			}
			return
		}
		if ev.Seq <= after {
			e.Skip(&ev)
			ended = ev.Kind == bridge.KindFinal
			if snapshot && ev.Seq == after {
				snapshot = false
				if e.WriteTask(ev.ID(), nil) != nil {
					return
				}
				wrote = true
			}
			continue
		}
		if stepEnd(run, &ev) {
			e.Skip(&ev)
			continue
		}
		if e.Encode(&ev) != nil {
			return // the client went away; a detached run goes on
		}
		wrote = true
	}
	if !wrote && !e.Done() && !ended && run.Status != bridge.StatusRunning {
		// Nothing after the cursor, and the run has ended (or its events
		// are gone): the task as it stands ends the stream. A cursor at
		// the final frame has had the whole stream: nothing follows.
		_ = e.WriteTask("", nil)
	}
}

// stepEnd reports whether ev is the final event of an earlier step of run
// (it waited for the client's tool results, then went on), not the task's
// outcome: a final committed when run was read (its seq at most
// run.LastSeq) while the run is running again, or before its last final.
// A replay from before it folds it and goes on, rather than end the task
// input-required.
func stepEnd(run *bridge.Run, ev *bridge.Event) bool {
	return ev.Kind == bridge.KindFinal && ev.Seq <= run.LastSeq &&
		(run.Status == bridge.StatusRunning || ev.Seq < run.LastSeq)
}

// cursor parses a resume cursor of run: "" is the start; a frame id
// (bridge.EventID, bridge.FrameID) must name this run; a bare number is a
// seq. It returns the seq of the last event the client has whole: an A2A
// event is one frame, its id the event's, so a FrameID (k before the
// event's last frame) leaves the client without that event.
func cursor(run, c string) (int64, error) {
	cur, ok := inbound.ParseCursor(run, c)
	if !ok {
		return 0, wire.ErrInvalidParams("Last-Event-ID " + strconv.Quote(c) + " is not an event id of task " + run)
	}
	if cur.Frame > 0 {
		return cur.Seq - 1, nil
	}
	return cur.Seq, nil
}

// render is Run.Render for A2A runs: the JSON-RPC id and the protocol
// version of the request that started the run.
type render struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Version string          `json:"version,omitempty"`
}

// ServeEvents implements inbound.Dialect: the run API's replay of an A2A
// run, as the frames of a tasks/resubscribe (JSON-RPC id null, version
// 0.3); for a context marked inbound.AsReceived, as the request that
// started the run received them (its id and version).
func (h *Handler) ServeEvents(w http.ResponseWriter, r *http.Request, run *bridge.Run, events bridge.Stream) {
	ctx := r.Context()
	opts := wire.StreamOptions{Version: wire.V03}
	if inbound.AsReceived(ctx) {
		var rd render
		if json.Unmarshal(run.Render, &rd) == nil { // absent (a run from before ids were kept): a replay's
			opts.RequestID = rd.ID
			if rd.Version == wire.V10.String() {
				opts.Version = wire.V10
			}
		}
	}
	msgs, err := h.cfg.Engine.RunMessages(ctx, run.ID)
	if err != nil {
		h.WriteError(w, err)
		return
	}
	tb := wire.NewTaskBuilder(run, msgs)
	next, stop := iter.Pull2(events)
	defer stop()
	first, ferr, ok := next()
	if ok && ferr == nil && first.Seq > 1 {
		// Fold what came before the cursor, for the artifact state.
		_, prior, err := h.cfg.Engine.Subscribe(ctx, run.ID, 0)
		if err == nil {
			for ev, err := range prior {
				if err != nil || ev.Seq >= first.Seq {
					break
				}
				tb.Add(&ev)
			}
		}
	}
	inbound.SetDropped(w.Header(), run.Dropped)
	e := wire.NewStreamEncoder(inbound.NewSSEWriter(w), tb, opts)
	w.WriteHeader(http.StatusOK)
	if !ok || ferr != nil {
		if !ok && run.Status != bridge.StatusRunning {
			_ = e.WriteTask("", nil)
		}
		return
	}
	if stepEnd(run, &first) {
		e.Skip(&first)
	} else if e.Encode(&first) != nil {
		return
	}
	for !e.Done() {
		ev, err, ok := next()
		if !ok || err != nil {
			return
		}
		if stepEnd(run, &ev) {
			e.Skip(&ev)
			continue
		}
		if e.Encode(&ev) != nil {
			return
		}
	}
}

// recordDropped records what the encoder dropped on the run.
func (h *Handler) recordDropped(ctx context.Context, runID string, dropped []string) {
	if len(dropped) == 0 {
		return
	}
	if err := h.cfg.Engine.RecordDropped(context.WithoutCancel(ctx), runID, dropped); err != nil {
		h.cfg.Logger.Warn("record dropped", "run", runID, "err", err)
	}
}

var _ inbound.Dialect = (*Handler)(nil)
