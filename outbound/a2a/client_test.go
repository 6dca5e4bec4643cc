package a2a_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/a2a"
	outa2a "github.com/bridge-dev/bridge/outbound/a2a"
	"github.com/bridge-dev/bridge/outbound/a2a/a2atest"
	"github.com/bridge-dev/bridge/storage/memory"
)

// TestProfiles: against a2a-go's server, the a2a profile reads the answer
// from artifact-updates and the adk profile from status messages, skipping
// the final artifact; each sees the agent's tool call and result; an agent
// whose card says no streaming is sent message/send.
func TestProfiles(t *testing.T) {
	reply := func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: []string{"It is ", "21 degrees."}, Process: "Checking",
			ToolCall:   map[string]any{"id": "call-1", "name": "weather", "args": map[string]any{"city": "Paris"}},
			ToolResult: map[string]any{"id": "call-1", "name": "weather", "response": map[string]any{"temp": 21}}}
	}
	for _, c := range []struct {
		name      string
		profile   a2atest.Profile
		ours      wire.Profile
		streaming bool
		text      string
	}{
		{"a2a streaming", a2atest.Artifacts, wire.ProfileA2A, true, "It is 21 degrees."},
		{"a2a send", a2atest.Artifacts, wire.ProfileA2A, false, "It is 21 degrees."},
		// In the adk profile every working message's text is the answer:
		// the process message too.
		{"adk streaming", a2atest.ADK, wire.ProfileADK, true, "CheckingIt is 21 degrees."},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := a2atest.NewProfile(c.profile, c.streaming, reply)
			t.Cleanup(agent.Close)
			ids := memory.New(nil)
			call, err := outa2a.New(outa2a.Config{Name: "agent", URL: agent.URL, Profile: c.ours, IDs: ids}).Open(ctxRun(t), userReq("weather?"))
			if err != nil {
				t.Fatal(err)
			}
			r := drain(t, call)
			if r.err != nil || r.text != c.text || r.final == nil || r.final.Status != bridge.StatusCompleted {
				t.Fatalf("text %q final %+v err %v", r.text, r.final, r.err)
			}
			if c.streaming {
				if c.profile == a2atest.Artifacts && r.reasoning != "Checking" {
					t.Errorf("the process message %q, want it as reasoning", r.reasoning)
				}
				var calls, results int
				for _, ev := range r.events {
					switch {
					case ev.Kind == bridge.KindToolCallDone && ev.Source == bridge.SourceAgent && ev.ToolCall.Arguments == `{"city":"Paris"}`:
						calls++
					case ev.Kind == bridge.KindToolResult && ev.Source == bridge.SourceAgent && ev.ToolResult.CallID == "call-1":
						results++
					}
				}
				if calls != 1 || results != 1 {
					t.Errorf("agent tool calls %d results %d, want 1 and 1", calls, results)
				}
			}
			got := agent.Received()
			if len(got) != 1 || got[0].Text != "weather?" {
				t.Errorf("the agent got %+v", got)
			}
			if remoteID(ids, bridge.IDSession, "sess_1") != got[0].ContextID {
				t.Errorf("context mapping %q, the agent's context %q", remoteID(ids, bridge.IDSession, "sess_1"), got[0].ContextID)
			}
		})
	}
}

// TestContextReuse: a transcript that extends one the agent answered goes
// to the same context with only the new message; one that does not (an
// edit) opens a new context with the earlier turns inlined.
func TestContextReuse(t *testing.T) {
	agent := a2atest.New(func(n int, _ *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: []string{"answer ", strings.Repeat("!", n+1)}}
	})
	t.Cleanup(agent.Close)
	ids := memory.New(nil)
	c := outa2a.New(outa2a.Config{Name: "agent", URL: agent.URL, IDs: ids})
	user := func(s string) bridge.Message {
		return bridge.Message{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart(s)}}
	}
	asst := func(s string) bridge.Message {
		return bridge.Message{Role: bridge.RoleAssistant, Parts: []bridge.Part{bridge.TextPart(s)}}
	}
	turn := func(msgs ...bridge.Message) (string, []string) {
		call, err := c.Open(ctxRun(t), &bridge.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return drain(t, call).text, call.Dropped
	}
	a1, _ := turn(user("one"))
	a2, d2 := turn(user("one"), asst(a1), user("two"))
	_, d3 := turn(user("one"), asst(a1), user("two"), asst(a2), user("three"))
	_, d4 := turn(user("ONE"), asst(a1), user("four"))
	got := agent.Received()
	if len(got) != 4 {
		t.Fatalf("%d messages", len(got))
	}
	if got[1].Text != "two" || got[2].Text != "three" || got[1].ContextID != got[0].ContextID || got[2].ContextID != got[0].ContextID {
		t.Errorf("continued turns: %+v", got[:3])
	}
	if len(d2)+len(d3) != 0 {
		t.Errorf("continued turns dropped %v %v", d2, d3)
	}
	if got[3].ContextID == got[0].ContextID || !strings.Contains(got[3].Text, "user: ONE") || !strings.HasSuffix(got[3].Text, "four") {
		t.Errorf("an edited history: %+v", got[3])
	}
	if len(d4) != 1 || !strings.Contains(d4[0], "history_inlined") {
		t.Errorf("an edited history dropped %v", d4)
	}
}

// TestCancelStopsTheAgent: Call.Cancel is tasks/cancel; the agent's
// execution stops and the stream ends cancelled.
func TestCancelStopsTheAgent(t *testing.T) {
	agent := a2atest.New(func(int, *a2asdk.Message) a2atest.Reply {
		return a2atest.Reply{Chunks: strings.Split(strings.Repeat("w ", 100), " "), Delay: 10 * time.Millisecond}
	})
	t.Cleanup(agent.Close)
	call, err := outa2a.New(outa2a.Config{URL: agent.URL}).Open(ctxRun(t), userReq("go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var final *bridge.Final
	for ev, err := range call.Events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == bridge.KindTextDelta {
			if n++; n == 3 {
				if err := call.Cancel(ctxRun(t)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if ev.Kind == bridge.KindFinal {
			final = ev.Final
		}
	}
	if final == nil || final.Status != bridge.StatusCancelled {
		t.Errorf("final %+v, want cancelled (the bridge asked)", final)
	}
	if agent.Cancels() != 1 {
		t.Errorf("the agent got %d cancels", agent.Cancels())
	}
}

// TestCardFaults: an agent card that is not there is a bad gateway, not
// the client's 404; one that is there but broken (cut short, not JSON) is
// the error reported, not the 404s of the card places tried after it.
func TestCardFaults(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		serve      func(w http.ResponseWriter)
	}{
		{"missing", "agent card: ", nil},
		{"not JSON", "not a JSON object", func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"name":`) }},
		{"cut short", "broke off", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "400")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"name":"agent",`)
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.serve != nil && r.URL.Path == "/agent/.well-known/agent-card.json" {
					tc.serve(w)
					return
				}
				http.NotFound(w, r)
			}))
			t.Cleanup(srv.Close)
			_, err := outa2a.New(outa2a.Config{Name: "agent", URL: srv.URL + "/agent"}).Card(t.Context())
			e := bridge.AsError(err)
			if e == nil || e.Code != bridge.CodeUpstream || e.Status != 0 || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("got %#v, want a bad gateway saying %q", e, tc.want)
			}
		})
	}
}
