// Package a2atest is an A2A upstream for tests: a2a-go's own server
// (a2asrv: its JSON-RPC handler, SSE writer and agent card handler) on an
// httptest server on 127.0.0.1, with a scripted agent executor. The wire is
// a2a-go's, not the bridge's, so the outbound client is tested against a
// real implementation.
package a2atest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// Profile is how the scripted agent arranges its answer.
type Profile int

const (
	// Artifacts streams the answer as artifact-update chunks.
	Artifacts Profile = iota
	// ADK streams the answer as messages of working status-updates and
	// repeats it in a final artifact, as ADK executors do.
	ADK
)

// Reply is one scripted answer.
type Reply struct {
	Chunks []string
	// Process is a working status message sent before the answer.
	Process string
	// ToolCall, when set, is an ADK function_call data part sent before
	// the answer, and ToolResult its function_response.
	ToolCall, ToolResult map[string]any
	// Delay is slept before each chunk.
	Delay time.Duration
	// State is the final state (default completed); Message its status
	// message.
	State   a2asdk.TaskState
	Message string
	// Asks, when set, is a function_call the agent wants the client to
	// answer: the task stops input-required with it in the status
	// message (an ADK executor's long-running call).
	Asks map[string]any
}

// Received is one message the agent was sent.
type Received struct {
	ContextID string
	TaskID    string
	Text      string
	Parts     a2asdk.ContentParts
}

// Server is the upstream. URL is its base (the card is at
// URL/.well-known/agent-card.json, the JSON-RPC endpoint at URL/a2a).
type Server struct {
	*httptest.Server
	Profile   Profile
	Streaming bool
	reply     func(n int, m *a2asdk.Message) Reply

	mu        sync.Mutex
	received  []Received
	cancels   int
	abandoned int // executions whose context ended before their reply did
}

// New starts a server answering the n-th message (from 0) with reply; the
// caller closes it. The card says streaming.
func New(reply func(n int, m *a2asdk.Message) Reply) *Server {
	return NewProfile(Artifacts, true, reply)
}

// NewProfile starts a server with a profile and a card that says
// streaming or not.
func NewProfile(p Profile, streaming bool, reply func(n int, m *a2asdk.Message) Reply) *Server {
	s := &Server{Profile: p, Streaming: streaming, reply: reply}
	mux := http.NewServeMux()
	s.Server = httptest.NewUnstartedServer(mux)
	s.Server.Start()
	card := &a2asdk.AgentCard{
		Name: "a2atest", Description: "scripted agent", URL: s.URL + "/a2a", Version: "1.0.0",
		ProtocolVersion: "0.3.0", PreferredTransport: a2asdk.TransportProtocolJSONRPC,
		Capabilities:      a2asdk.AgentCapabilities{Streaming: streaming},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2asdk.AgentSkill{{ID: "echo", Name: "echo", Description: "scripted", Tags: []string{"test"}}},
	}
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(s)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return s
}

// Received returns the messages the agent was sent.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Cancels counts the tasks/cancel calls the agent got.
func (s *Server) Cancels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancels
}

// Abandoned counts executions whose context ended before their reply was
// complete (the task was canceled).
func (s *Server) Abandoned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abandoned
}

// Execute implements a2asrv.AgentExecutor.
func (s *Server) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s.mu.Lock()
	n := len(s.received)
	var text strings.Builder
	for _, p := range rc.Message.Parts {
		if t, ok := p.(a2asdk.TextPart); ok {
			text.WriteString(t.Text)
		}
	}
	s.received = append(s.received, Received{ContextID: rc.ContextID, TaskID: string(rc.TaskID), Text: text.String(), Parts: rc.Message.Parts})
	s.mu.Unlock()
	r := s.reply(n, rc.Message)

	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2asdk.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	if err := q.Write(ctx, a2asdk.NewStatusUpdateEvent(rc, a2asdk.TaskStateWorking, nil)); err != nil {
		return err
	}
	agent := func(parts ...a2asdk.Part) error {
		return q.Write(ctx, a2asdk.NewStatusUpdateEvent(rc, a2asdk.TaskStateWorking, a2asdk.NewMessageForTask(a2asdk.MessageRoleAgent, rc, parts...)))
	}
	if r.Process != "" {
		if err := agent(a2asdk.TextPart{Text: r.Process}); err != nil {
			return err
		}
	}
	if r.ToolCall != nil {
		if err := agent(a2asdk.DataPart{Data: r.ToolCall, Metadata: map[string]any{"adk_type": "function_call"}}); err != nil {
			return err
		}
	}
	if r.ToolResult != nil {
		if err := agent(a2asdk.DataPart{Data: r.ToolResult, Metadata: map[string]any{"adk_type": "function_response"}}); err != nil {
			return err
		}
	}
	var artifact a2asdk.ArtifactID
	for i, c := range r.Chunks {
		if r.Delay > 0 {
			select {
			case <-time.After(r.Delay):
			case <-ctx.Done():
				s.mu.Lock()
				s.abandoned++
				s.mu.Unlock()
				return nil
			}
		}
		var err error
		switch {
		case s.Profile == ADK:
			err = agent(a2asdk.TextPart{Text: c})
		case i == 0:
			ev := a2asdk.NewArtifactEvent(rc, a2asdk.TextPart{Text: c})
			ev.Artifact.Name = "answer"
			artifact = ev.Artifact.ID
			ev.LastChunk = len(r.Chunks) == 1
			err = q.Write(ctx, ev)
		default:
			ev := a2asdk.NewArtifactUpdateEvent(rc, artifact, a2asdk.TextPart{Text: c})
			ev.LastChunk = i == len(r.Chunks)-1
			err = q.Write(ctx, ev)
		}
		if err != nil {
			return err
		}
	}
	if s.Profile == ADK && len(r.Chunks) > 0 {
		ev := a2asdk.NewArtifactEvent(rc, a2asdk.TextPart{Text: strings.Join(r.Chunks, "")})
		ev.LastChunk = true
		if err := q.Write(ctx, ev); err != nil {
			return err
		}
	}
	state := r.State
	if state == "" {
		state = a2asdk.TaskStateCompleted
	}
	var msg *a2asdk.Message
	if r.Message != "" {
		msg = a2asdk.NewMessageForTask(a2asdk.MessageRoleAgent, rc, a2asdk.TextPart{Text: r.Message})
	}
	if r.Asks != nil {
		state = a2asdk.TaskStateInputRequired
		msg = a2asdk.NewMessageForTask(a2asdk.MessageRoleAgent, rc, a2asdk.DataPart{Data: r.Asks, Metadata: map[string]any{"adk_type": "function_call"}})
	}
	ev := a2asdk.NewStatusUpdateEvent(rc, state, msg)
	ev.Final = true
	return q.Write(ctx, ev)
}

// Cancel implements a2asrv.AgentExecutor.
func (s *Server) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s.mu.Lock()
	s.cancels++
	s.mu.Unlock()
	ev := a2asdk.NewStatusUpdateEvent(rc, a2asdk.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}
