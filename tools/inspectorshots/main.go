// Command inspectorshots writes screenshots of the run inspector (/ui/)
// into a folder: the runs list, a finished run's page (an Anthropic client
// over an OpenAI upstream, both wires recorded), a live run, and a
// session. It starts everything itself (a scripted OpenAI upstream, a
// bridge on 127.0.0.1 with a temporary database, headless Chromium), so
// anyone can look at the pages without setting anything up:
//
//	go run ./tools/inspectorshots /tmp/shots
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bridge-dev/bridge/internal/browser"
	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
	"github.com/bridge-dev/bridge/server"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: inspectorshots DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "inspectorshots:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "inspectorshots")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	up := openaitest.New(reply)
	defer up.Close()
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = filepath.Join(tmp, "bridge.db")
	cfg.RecordUpstream = true
	u, err := server.ParseUpstream("openai=" + up.BaseURL())
	if err != nil {
		return err
	}
	cfg.Upstreams = []server.Upstream{u}
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	go func() { _ = srv.Run() }()
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Close(sctx)
	}()
	base := "http://" + srv.Addr()

	// A session of three turns, an A2A run, and the Anthropic run the run
	// page shows.
	// Each turn resends the conversation so far, as a Chat client does
	// (a turn with its question alone would start the transcript again).
	var history []map[string]string
	for _, q := range questions {
		history = append(history, map[string]string{"role": "user", "content": q})
		msgs, _ := json.Marshal(history)
		if _, err := send(ctx, base, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":`+string(msgs)+`}`,
			"X-Session-Id", "sess_demo"); err != nil {
			return err
		}
		history = append(history, map[string]string{"role": "assistant", "content": answers[q]})
	}
	if _, err := send(ctx, base, "/a2a", `{"jsonrpc":"2.0","id":"1","method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"Summarize the weather"}],"metadata":{"from":"demo"}}}}`); err != nil {
		return err
	}
	antRun, err := send(ctx, base, "/v1/messages", `{"model":"gpt-4o","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"What is the weather in Paris?"}],"tools":[{"name":"get_weather","description":"The weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}]}`)
	if err != nil {
		return err
	}
	// The live run: its client reads it in the background.
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Tell me a long story, slowly"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
	liveRun := resp.Header.Get("X-Run-Id")

	bctx, bcancel, err := browser.Start(ctx, filepath.Join(tmp, "chromium"), 1440, 1000)
	if err != nil {
		return err
	}
	defer bcancel()
	shot := func(name, hash, ready string) error {
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/ui/"+hash)); err != nil {
			return err
		}
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](ready, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			return fmt.Errorf("%s: the page did not show (%s): %w", name, ready, err)
		}
		// Wait for a live page's next refresh, for the picture.
		time.Sleep(700 * time.Millisecond)
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // quality 100: a PNG
		if err != nil {
			return err
		}
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			return err
		}
		fmt.Println(path)
		return nil
	}
	if err := shot("runs", "#/runs", `document.querySelector("tr[data-run]") !== null`); err != nil {
		return err
	}
	if err := shot("run", "#/run/"+antRun, `document.querySelector("#wire-upstream pre") !== null`); err != nil {
		return err
	}
	if err := shot("live", "#/run/"+liveRun, `Number((document.querySelector("#run-seq") || {}).innerText) > 10`); err != nil {
		return err
	}
	return shot("session", "#/session/sess_demo", `document.querySelector(".chat .msg") !== null`)
}

// reply answers a story slowly, a weather question with a tool call, and
// anything else with a short answer.
func reply(n int, body []byte) openaitest.Reply {
	c := &openaitest.Chunks{ID: fmt.Sprintf("chatcmpl-demo%d", n), Model: "gpt-4o-2024-08-06"}
	switch b := string(body); {
	case strings.Contains(b, "story"):
		var words []string
		for i := range 400 {
			words = append(words, fmt.Sprintf("word%d ", i))
		}
		return openaitest.Reply{Chunks: c.Role().Text(words...).Finish("stop").List(), Delay: 60 * time.Millisecond}
	case strings.Contains(b, "weather in Paris"):
		return openaitest.Reply{Chunks: c.Role().Text("Let me check.").ToolCall(0, "call_w1", "get_weather", `{"city":`, `"Paris"}`).
			Finish("tool_calls").Usage(42, 17).List(), Delay: 15 * time.Millisecond}
	default: // the session's questions: the answer to the last one asked
		last, at := questions[0], -1
		for _, q := range questions {
			if i := strings.LastIndex(b, q); i > at {
				last, at = q, i
			}
		}
		return openaitest.Reply{Chunks: c.Role().Text(strings.SplitAfter(answers[last], " ")...).Finish("stop").Usage(25, 6).List(),
			Delay: 10 * time.Millisecond}
	}
}

// questions are the session's turns, and answers what the upstream says to
// each.
var (
	questions = []string{"What is the capital of France?", "And of Italy?", "Which is bigger?"}
	answers   = map[string]string{questions[0]: "Paris is the capital of France.", questions[1]: "Rome is the capital of Italy.",
		questions[2]: "France, by area and by population."}
)

// send posts body to base+path and reads the answer whole; it returns the
// run id.
func send(ctx context.Context, base, path, body string, header ...string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp.Header.Get("X-Run-Id"), nil
}
