package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAnthropicErrorThenCut: an Anthropic stream whose error event came
// ends failed even when the connection is cut right after it, before the
// chunked body's end (the SIGKILL of TestSoakCrash did so): the client has
// the stream's end, and a resume after the error frame's id gets nothing.
// It counted as cut, and its resume as "ended without message_stop".
func TestAnthropicErrorThenCut(t *testing.T) {
	const run = "run_1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Run-Id", run)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("id: run_1:1\nevent: message_start\ndata: {\"type\":\"message_start\"}\n\n" +
			"id: run_1:2\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
			"id: run_1:3\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"cut\"}}\n\n"))
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			t.Error(err)
			return
		}
		conn, _, err := rc.Hijack() // the connection closes without the chunked body's last chunk
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	defer srv.Close()
	c := newSoakClient([]string{srv.URL}, 1, []string{dialectAnthropic})
	defer c.closeIdle()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/messages", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &streamRecord{dialect: dialectAnthropic, start: time.Now()}
	c.read(req, rec, "")
	if rec.outcome != clientFailed || rec.errCode != "api_error" || rec.text != "hi" || rec.lastID != "run_1:3" {
		t.Errorf("outcome %q (%s), error %q, text %q, last id %q; want failed with api_error after \"hi\", at run_1:3",
			rec.outcome, rec.detail, rec.errCode, rec.text, rec.lastID)
	}
}
