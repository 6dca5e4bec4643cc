package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// client outcomes.
const (
	clientCompleted = "completed" // [DONE] after the whole text
	clientFailed    = "failed"    // an error frame, then [DONE]
	clientCut       = "cut"       // the stream broke: no [DONE]
	clientRefused   = "refused"   // no answer, or not a 200
)

// streamRecord is what one client saw of one stream.
type streamRecord struct {
	script  script
	dialect string // the inbound dialect it spoke: "openai", "anthropic" or "a2a"
	runID   string
	seqs    []int64 // the event seq of every SSE id: the client received, in order, each once
	lastID  string  // the last SSE id: received, the resume cursor
	lastPos [2]int64
	text    string // the content it received
	outcome string
	errCode string // the error frame's code, or its type
	detail  string // why a cut or refused stream ended so
	start   time.Time
	first   time.Duration // to the first content chunk, 0 if none
	end     time.Time
	resumed bool // read again after a restart
}

// The inbound dialects a soak client speaks.
const (
	dialectOpenAI    = "openai"    // POST /v1/chat/completions
	dialectAnthropic = "anthropic" // POST /v1/messages
	dialectA2A       = "a2a"       // POST /a2a, JSON-RPC message/stream
)

// soakClient sends streaming requests to the bridge, in its dialects by
// turns (by script id); with several bridges (replicas on one database),
// to each by turns, as a round-robin load balancer would.
type soakClient struct {
	hc       *http.Client
	bases    []string
	dialects []string
}

func newSoakClient(bases []string, conns int, dialects []string) *soakClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns
	t.MaxIdleConnsPerHost = conns
	t.DisableCompression = true
	t.Proxy = nil // loopback only
	if len(dialects) == 0 {
		dialects = []string{dialectOpenAI}
	}
	return &soakClient{hc: &http.Client{Transport: t}, bases: bases, dialects: dialects}
}

// baseOf is the bridge script k goes to.
func (c *soakClient) baseOf(k int64) string { return c.bases[uint64(k)%uint64(len(c.bases))] }

func (c *soakClient) closeIdle() { c.hc.CloseIdleConnections() }

// dialectOf is the dialect of script k: a multiplicative hash of k, so
// that the faults (every --fail-every-th script) fall to each dialect.
func (c *soakClient) dialectOf(k int64) string {
	return c.dialects[(uint64(k)*0x9E3779B97F4A7C15>>32)%uint64(len(c.dialects))]
}

// stream runs one script through POST /v1/chat/completions, POST
// /v1/messages or A2A's message/stream. A2A names no model: the script
// rides in the message's text, where the fake upstream finds it.
func (c *soakClient) stream(ctx context.Context, s script) *streamRecord {
	rec := &streamRecord{script: s, start: time.Now(), dialect: c.dialectOf(s.id)}
	// The message is the script, as the model is: an A2A client names no
	// model, and an A2A upstream gets none.
	msgs := []map[string]string{{"role": "user", "content": s.model()}}
	path := "/v1/chat/completions"
	var req any = map[string]any{"model": s.model(), "stream": true, "messages": msgs}
	switch rec.dialect {
	case dialectAnthropic:
		path = "/v1/messages"
		req.(map[string]any)["max_tokens"] = 4096
	case dialectA2A:
		path = "/a2a"
		req = map[string]any{"jsonrpc": "2.0", "id": s.id, "method": "message/stream", "params": map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": "soak-" + strconv.FormatInt(s.id, 10),
				"parts": []map[string]string{{"kind": "text", "text": s.model()}}}}}
	}
	body, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseOf(s.id)+path, bytes.NewReader(body))
	if err != nil {
		return rec.refused("request: " + err.Error())
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if rec.dialect == dialectAnthropic {
		hreq.Header.Set("anthropic-version", "2023-06-01")
	}
	c.read(hreq, rec, "")
	return rec
}

// resume reads a run's events after its last seen id through
// GET /v1/runs/{run}/events, appending to rec.
func (c *soakClient) resume(ctx context.Context, rec *streamRecord) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseOf(rec.script.id)+"/v1/runs/"+rec.runID+"/events", nil)
	if err != nil {
		rec.refused("request: " + err.Error())
		return
	}
	if rec.lastID != "" {
		// Every frame has an id of its own: the stream goes on right
		// after the last one that came, whole or not.
		req.Header.Set("Last-Event-ID", rec.lastID)
	}
	c.read(req, rec, rec.runID)
}

func (r *streamRecord) refused(detail string) *streamRecord {
	r.outcome, r.detail, r.end = clientRefused, detail, time.Now()
	return r
}

func (r *streamRecord) cut(detail string) {
	r.outcome, r.detail, r.end = clientCut, detail, time.Now()
}

// read sends req and reads its SSE answer into rec. run, when set, is the
// run the answer must be of.
func (c *soakClient) read(req *http.Request, rec *streamRecord, run string) {
	resp, err := c.hc.Do(req)
	if err != nil {
		rec.refused("request failed: " + shortErr(err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		rec.refused(fmt.Sprintf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b)))
		return
	}
	if run == "" {
		rec.runID = resp.Header.Get("X-Run-Id")
		if rec.runID == "" {
			rec.cut("no X-Run-Id header")
			return
		}
	}
	var (
		text    strings.Builder
		pending []byte // the id: of the frame being read
		errSeen bool
		anth    = rec.dialect == dialectAnthropic
		a2a     = rec.dialect == dialectA2A
	)
	text.WriteString(rec.text)
	defer func() { rec.text = text.String() }()
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			switch {
			case errors.Is(err, bufio.ErrBufferFull):
				rec.cut("SSE line longer than 16 KiB")
			case req.Context().Err() != nil:
				rec.cut("timed out")
			case anth && errSeen:
				// An Anthropic stream ends at its error event: once that came,
				// the stream has ended failed however the connection closes
				// after it (a SIGKILL right after the error frame cuts the
				// chunked body: io.ErrUnexpectedEOF). A resume after the error
				// frame's id rightly gets nothing more.
				rec.outcome, rec.end = clientFailed, time.Now()
			case errors.Is(err, io.EOF) && anth:
				rec.cut("stream ended without message_stop")
			case errors.Is(err, io.EOF) && a2a:
				rec.cut("stream ended without a final status-update")
			case errors.Is(err, io.EOF):
				rec.cut("stream ended without [DONE]")
			default:
				rec.cut("read: " + shortErr(err))
			}
			return
		}
		line = bytes.TrimRight(line, "\r\n")
		if id, ok := bytes.CutPrefix(line, []byte("id:")); ok {
			pending = append(pending[:0], bytes.TrimSpace(id)...)
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // event:, comments and blank lines
		}
		data = bytes.TrimSpace(data)
		// The frame's id counts as seen once its data has come, as an
		// EventSource takes it: a stream cut between the two resumes
		// from the frame before.
		if len(pending) > 0 {
			if bad := rec.see(pending); bad != "" {
				rec.cut(bad)
				return
			}
			pending = pending[:0]
		}
		if a2a {
			done, bad := a2aFrame(rec, data, &text)
			switch {
			case bad != "":
				rec.cut(bad)
				return
			case done:
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				return
			}
			continue
		}
		if anth {
			done, bad := anthropicFrame(rec, data, &text, &errSeen)
			switch {
			case bad != "":
				rec.cut(bad)
				return
			case done:
				rec.outcome, rec.end = clientCompleted, time.Now()
				if errSeen {
					rec.outcome = clientFailed
				}
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				return
			}
			continue
		}
		if string(data) == "[DONE]" {
			rec.end = time.Now()
			if errSeen {
				rec.outcome = clientFailed
			} else {
				rec.outcome = clientCompleted
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // to EOF, so the connection is reused
			return
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Error *struct {
				Type string  `json:"type"`
				Code *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			rec.cut("bad chunk: " + err.Error())
			return
		}
		if chunk.Error != nil {
			errSeen = true
			rec.errCode = chunk.Error.Type
			if chunk.Error.Code != nil && *chunk.Error.Code != "" {
				rec.errCode = *chunk.Error.Code
			}
			continue
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" && rec.first == 0 && !rec.resumed {
				rec.first = time.Since(rec.start)
			}
			text.WriteString(ch.Delta.Content)
		}
	}
}

// see records a frame's id; it says why the id is wrong, if it is. Every
// frame has an id of its own, after the one before.
func (r *streamRecord) see(id []byte) string {
	run, pos, ok := parseFrameID(string(id))
	if !ok || run != r.runID {
		return fmt.Sprintf("bad event id %q", id)
	}
	if r.lastID != "" && (pos[0] < r.lastPos[0] || pos[0] == r.lastPos[0] && pos[1] <= r.lastPos[1]) {
		return fmt.Sprintf("frame id %s after %s", id, r.lastID)
	}
	if n := len(r.seqs); n == 0 || r.seqs[n-1] != pos[0] {
		r.seqs = append(r.seqs, pos[0])
	}
	r.lastID, r.lastPos = string(id), pos
	return ""
}

// anthropicFrame takes the data of one Anthropic Messages frame: a text
// delta's text, an error event's type. It reports done at message_stop,
// and why the frame is bad, if it is.
func anthropicFrame(rec *streamRecord, data []byte, text *strings.Builder, errSeen *bool) (done bool, bad string) {
	var f struct {
		Type  string `json:"type"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return false, "bad frame: " + err.Error()
	}
	switch f.Type {
	case "content_block_delta":
		if f.Delta.Type == "text_delta" && f.Delta.Text != "" {
			if rec.first == 0 && !rec.resumed {
				rec.first = time.Since(rec.start)
			}
			text.WriteString(f.Delta.Text)
		}
	case "error":
		*errSeen = true
		rec.errCode = f.Error.Type
	case "message_stop":
		return true, ""
	}
	return false, ""
}

// a2aFrame takes the data of one A2A frame (a JSON-RPC response): an
// artifact-update's text; a final status-update's state, which ends the
// stream (completed, or failed with the state as its code); a JSON-RPC
// error, which ends it failed. A Task snapshot (the first frame, and the
// first of a resumed stream, which holds what the client saw already) adds
// no text. It reports done, and why the frame is bad, if it is.
func a2aFrame(rec *streamRecord, data []byte, text *strings.Builder) (done bool, bad string) {
	var f struct {
		Result *struct {
			Kind   string `json:"kind"`
			Final  bool   `json:"final"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Artifact struct {
				Parts []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"artifact"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return false, "bad frame: " + err.Error()
	}
	switch {
	case f.Error != nil:
		rec.outcome, rec.errCode, rec.end = clientFailed, "jsonrpc "+strconv.Itoa(f.Error.Code), time.Now()
		return true, ""
	case f.Result == nil:
		return false, "a frame with neither result nor error"
	case f.Result.Kind == "artifact-update":
		for _, p := range f.Result.Artifact.Parts {
			if p.Kind == "text" && p.Text != "" {
				if rec.first == 0 && !rec.resumed {
					rec.first = time.Since(rec.start)
				}
				text.WriteString(p.Text)
			}
		}
	case f.Result.Kind == "status-update" && f.Result.Final:
		rec.end = time.Now()
		switch f.Result.Status.State {
		case "completed":
			rec.outcome = clientCompleted
		case "failed", "canceled", "rejected":
			rec.outcome, rec.errCode = clientFailed, f.Result.Status.State
		default:
			return false, "a final status-update in state " + f.Result.Status.State
		}
		return true, ""
	}
	return false, ""
}

// parseFrameID splits "run_…:17" (the last frame of event 17) and
// "run_…:17.2" (its frame 2). pos orders the ids as the frames go.
func parseFrameID(id string) (run string, pos [2]int64, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", pos, false
	}
	s, k, dotted := strings.Cut(id[i+1:], ".")
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil || seq <= 0 {
		return "", pos, false
	}
	pos = [2]int64{seq, math.MaxInt64}
	if dotted {
		n, err := strconv.ParseInt(k, 10, 32)
		if err != nil || n <= 0 {
			return "", pos, false
		}
		pos[1] = n
	}
	return id[:i], pos, true
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s, "127.0.0.1") {
		return s[i+2:] // drop the address
	}
	return s
}
