package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRetentionJanitor: the events of a run that ended more than the
// retention ago are deleted; the run itself and the history stay.
func TestRetentionJanitor(t *testing.T) {
	cfg := defaultConfig()
	cfg.Retention = time.Millisecond
	m := startMain(t, cfg)
	resp, err := http.Post("http://"+m.Addr()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"keep me briefly"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	run := resp.Header.Get("X-Run-Id")
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := m.Store().Events(t.Context(), run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the janitor left %d events of an ended run", len(evs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	r, err := m.Store().Run(t.Context(), run)
	if err != nil || r.Status != "completed" {
		t.Errorf("the run itself should stay: %+v %v", r, err)
	}
	msgs, err := m.Store().RunMessages(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range msgs {
		got = append(got, string(msgs[i].Role)+": "+msgs[i].Text())
	}
	if len(got) != 2 || got[0] != "user: keep me briefly" || got[1] != "assistant: keep me briefly" {
		t.Errorf("the history should stay: %q", got)
	}
}
