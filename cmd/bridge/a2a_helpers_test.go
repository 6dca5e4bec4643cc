package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// a2aTimeout bounds every A2A test's requests.
const a2aTimeout = 30 * time.Second

// slowOpenAI is an OpenAI upstream (openaitest) that streams words with a
// delay, behind a front that counts the requests whose connection the
// bridge closed before the reply was complete.
type slowOpenAI struct {
	*openaitest.Server
	front     *httptest.Server
	cancelled atomic.Int32
}

func newSlowOpenAI(t *testing.T, delay time.Duration, answer func(n int) []string) *slowOpenAI {
	t.Helper()
	s := &slowOpenAI{}
	s.Server = openaitest.New(func(n int, _ []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-up", Model: "m"}
		words := answer(n)
		return openaitest.Reply{Chunks: c.Role().Text(words...).Finish("stop").Usage(3, len(words)).List(), Delay: delay}
	})
	inner := s.Server.Config.Handler
	s.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			s.cancelled.Add(1)
		}
	}))
	t.Cleanup(func() { s.front.Close(); s.Server.Close() })
	return s
}

func (s *slowOpenAI) baseURL() string { return s.front.URL + "/v1" }

// a2aBridge starts a bridge in process over up (an openai base URL).
func a2aBridge(t *testing.T, upURL string) string {
	t.Helper()
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: upURL}}
	return "http://" + startMain(t, cfg).Addr()
}

// sseTap records the SSE frames of every response its transport reads,
// in order, as the client reads them: a client that ignores id: lines
// (a2a-go's does) can still be checked against them.
type sseTap struct {
	mu     sync.Mutex
	frames []tapFrame
}

type tapFrame struct{ id, data string }

func (t *sseTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	pr, pw := io.Pipe()
	body := resp.Body
	go func() {
		r := bufio.NewReader(body)
		var cur tapFrame
		for {
			line, err := r.ReadString('\n')
			if len(line) > 0 {
				// Record first, then hand the line on: the client never
				// sees a frame the tap has not recorded.
				l := strings.TrimRight(line, "\r\n")
				switch {
				case strings.HasPrefix(l, "id: "):
					cur.id = l[4:]
				case strings.HasPrefix(l, "data: "):
					// Recorded at its data line: a2a-go yields the event there,
					// before the blank line.
					cur.data = l[6:]
					t.mu.Lock()
					t.frames = append(t.frames, cur)
					t.mu.Unlock()
					cur = tapFrame{}
				}
				if _, werr := io.WriteString(pw, line); werr != nil {
					break
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				body.Close()
				return
			}
		}
		body.Close()
	}()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{pr, closerFunc(func() error { pr.Close(); return body.Close() })}
	return resp, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func (t *sseTap) snapshot() []tapFrame {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]tapFrame(nil), t.frames...)
}

func (t *sseTap) reset() {
	t.mu.Lock()
	t.frames = nil
	t.mu.Unlock()
}

// lastEventIDKey carries a Last-Event-ID for one call of the a2a-go client.
type lastEventIDKey struct{}

// resumeInterceptor sends the Last-Event-ID a call's context carries.
type resumeInterceptor struct {
	a2aclient.PassthroughInterceptor
}

func (resumeInterceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	if id, ok := ctx.Value(lastEventIDKey{}).(string); ok && id != "" {
		req.Meta["Last-Event-ID"] = []string{id}
	}
	return ctx, nil
}

// a2aClient resolves the bridge's card and returns an a2a-go client over
// the tap's transport.
func a2aClient(t *testing.T, ctx context.Context, base string, tap *sseTap) (*a2aclient.Client, *a2asdk.AgentCard) {
	t.Helper()
	hc := &http.Client{Transport: tap}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithInterceptors(resumeInterceptor{}))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c, card
}

func userMessage(contextID, text string) *a2asdk.MessageSendParams {
	m := a2asdk.NewMessage(a2asdk.MessageRoleUser, a2asdk.TextPart{Text: text})
	m.ContextID = contextID
	return &a2asdk.MessageSendParams{Message: m}
}

// answerText concatenates the text of the answer artifact-updates.
func answerText(evs []a2asdk.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if a, ok := ev.(*a2asdk.TaskArtifactUpdateEvent); ok {
			for _, p := range a.Artifact.Parts {
				if tp, ok := p.(a2asdk.TextPart); ok {
					b.WriteString(tp.Text)
				}
			}
		}
	}
	return b.String()
}

// taskText concatenates a task's artifact text.
func taskText(t *a2asdk.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			if tp, ok := p.(a2asdk.TextPart); ok {
				b.WriteString(tp.Text)
			}
		}
	}
	return b.String()
}

// finalState is the state of the last status-update of evs.
func finalState(evs []a2asdk.Event) (a2asdk.TaskState, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if s, ok := evs[i].(*a2asdk.TaskStatusUpdateEvent); ok {
			return s.Status.State, s.Final
		}
	}
	return "", false
}

// words makes n words "<prefix><i> ".
func words(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i) + " "
	}
	return out
}

func jsonDecode(r *http.Response, v any) error { return json.NewDecoder(r.Body).Decode(v) }
