package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	a2alog "github.com/a2aproject/a2a-go/log"
)

// The fake upstream is also an A2A agent (--upstream-dialect a2a): a2a-go's
// own server (its JSON-RPC handler, SSE writer and card handler) with an
// executor that streams each message's script as artifact-update chunks,
// paced, then a final status-update completed; or, at its fault, half of
// them and then a final status failed (faultError), or the connection cut
// under a2a-go's SSE writer once it has flushed them, and the task failed
// after (faultCut).
// A2A names no model: the script is the message's text.

// a2aPath is the agent's JSON-RPC endpoint; its card is at the well-known
// path of the server's root.
const a2aPath = "/a2a"

// a2aHandler returns the agent's routes on u.
func (u *fakeUpstream) a2aHandler() http.Handler {
	card := &a2asdk.AgentCard{
		Name: "soak", Description: "the soak's scripted agent", URL: u.URL() + a2aPath, Version: "1.0.0",
		ProtocolVersion: "0.3.0", PreferredTransport: a2asdk.TransportProtocolJSONRPC,
		Capabilities:      a2asdk.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2asdk.AgentSkill{{ID: "soak", Name: "soak", Description: "streams its script", Tags: []string{"test"}}},
	}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(soakAgent{u}, a2asrv.WithLogger(slog.New(slog.DiscardHandler))))
	mux := http.NewServeMux()
	mux.Handle(a2aPath, cutting(rpc))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return mux
}

// cutting serves a message/stream whose script's fault is a cut through a
// writer that closes the connection once a2a-go has flushed the frames of
// the chunks sent before the fault.
func cutting(next http.Handler) http.Handler {
	quiet := slog.New(slog.DiscardHandler) // a2a-go's handler logs each write a cut fails
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(a2alog.WithLogger(r.Context(), quiet))
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Method string `json:"method"`
			Params struct {
				Message struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &req) != nil || req.Method != "message/stream" || len(req.Params.Message.Parts) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		s, err := parseScript(req.Params.Message.Parts[0].Text)
		if err != nil || s.fault != faultCut {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&cutWriter{ResponseWriter: w, rc: http.NewResponseController(w), after: s.sent()}, r)
	})
}

// cutWriter counts the artifact-update frames written through it and, at
// the flush after the after-th, closes the connection under them.
type cutWriter struct {
	http.ResponseWriter
	rc          *http.ResponseController
	after, seen int
	cut         bool
}

var errCutHere = errors.New("soak: the connection is cut")

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, errCutHere
	}
	c.seen += bytes.Count(p, []byte(`"artifact-update"`))
	return c.ResponseWriter.Write(p)
}

func (c *cutWriter) Flush() {
	if c.cut {
		return
	}
	_ = c.rc.Flush()
	if c.seen >= c.after {
		c.cut = true
		if conn, _, err := c.rc.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// soakAgent is the executor.
type soakAgent struct{ u *fakeUpstream }

// Execute implements a2asrv.AgentExecutor.
func (a soakAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	u := a.u
	u.requests.Add(1)
	var text strings.Builder
	for _, p := range rc.Message.Parts {
		if t, ok := p.(a2asdk.TextPart); ok {
			text.WriteString(t.Text)
		}
	}
	s, err := parseScript(text.String())
	if err != nil {
		u.bad.Add(1)
		return err
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2asdk.NewSubmittedTask(rc, rc.Message)); err != nil {
			u.record(s.id, upAborted)
			return err
		}
	}
	if err := q.Write(ctx, a2asdk.NewStatusUpdateEvent(rc, a2asdk.TaskStateWorking, nil)); err != nil {
		u.record(s.id, upAborted)
		return err
	}
	n := s.sent()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var artifact a2asdk.ArtifactID
	for i := range n {
		if s.pace > 0 {
			t.Reset(s.pace)
			select {
			case <-t.C:
			case <-ctx.Done():
				u.record(s.id, upAborted)
				return nil
			}
		}
		var ev *a2asdk.TaskArtifactUpdateEvent
		if i == 0 {
			ev = a2asdk.NewArtifactEvent(rc, a2asdk.TextPart{Text: piece(s.id, i)})
			ev.Artifact.Name = "answer"
			artifact = ev.Artifact.ID
		} else {
			ev = a2asdk.NewArtifactUpdateEvent(rc, artifact, a2asdk.TextPart{Text: piece(s.id, i)})
		}
		ev.LastChunk = s.fault == faultNone && i == n-1
		if err := q.Write(ctx, ev); err != nil {
			u.record(s.id, upAborted)
			return err
		}
	}
	state := a2asdk.TaskStateCompleted
	var msg *a2asdk.Message
	switch s.fault {
	case faultCut:
		// The connection is cut under the frames written so far
		// (cutWriter). The task then fails, as an agent's task whose
		// work broke down with its stream would: the bridge, which
		// resubscribes to a broken stream, learns the outcome from the
		// resubscribe or from tasks/get.
		t.Reset(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		ctx = context.WithoutCancel(ctx)
		state = a2asdk.TaskStateFailed
		msg = a2asdk.NewMessageForTask(a2asdk.MessageRoleAgent, rc, a2asdk.TextPart{Text: "soak: the agent's stream was cut"})
	case faultError:
		state = a2asdk.TaskStateFailed
		msg = a2asdk.NewMessageForTask(a2asdk.MessageRoleAgent, rc, a2asdk.TextPart{Text: "soak: injected mid-stream failure"})
	}
	ev := a2asdk.NewStatusUpdateEvent(rc, state, msg)
	ev.Final = true
	if err := q.Write(ctx, ev); err != nil {
		u.record(s.id, upAborted)
		return err
	}
	if s.fault == faultNone {
		u.record(s.id, upDone)
	} else {
		u.record(s.id, upFault)
	}
	return nil
}

// Cancel implements a2asrv.AgentExecutor.
func (soakAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2asdk.NewStatusUpdateEvent(rc, a2asdk.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}
