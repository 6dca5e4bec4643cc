package main

import (
	"bufio"
	"strings"
	"testing"
)

// TestHermesValidator: the Hermes stream validator accepts a good stream
// and fails each broken rule.
func TestHermesValidator(t *testing.T) {
	const good = "id: run_a:1\nevent: run.started\ndata: {\"session_id\":\"s\",\"run_id\":\"run_a\",\"seq\":1,\"ts\":1}\n\n" +
		"id: run_a:2\nevent: assistant.delta\ndata: {\"delta\":\"hi\",\"session_id\":\"s\",\"run_id\":\"run_a\",\"seq\":2,\"ts\":1}\n\n" +
		"id: run_a:3\nevent: done\ndata: {\"session_id\":\"s\",\"run_id\":\"run_a\",\"seq\":3,\"ts\":1}\n\n"
	check := func(stream string, complete bool) []string {
		frames, err := readFrames(bufio.NewReader(strings.NewReader(stream)), 0)
		if err != nil {
			t.Fatal(err)
		}
		obs := &observation{runID: "run_a", frames: frames}
		errs := checkHermesStream(obs, complete)
		if len(errs) == 0 && obs.text != "hi" {
			t.Errorf("text %q", obs.text)
		}
		return errs
	}
	if errs := check(good, true); len(errs) != 0 {
		t.Fatalf("good stream: %v", errs)
	}
	for name, stream := range map[string]string{
		"no done":           strings.Replace(good, "event: done", "event: run.completed", 1),
		"frame after done":  good + "id: run_a:4\nevent: assistant.delta\ndata: {\"session_id\":\"s\",\"run_id\":\"run_a\",\"seq\":4,\"ts\":1}\n\n",
		"seq gap":           strings.Replace(strings.Replace(good, "run_a:3", "run_a:4", 1), `"seq":3`, `"seq":4`, 1),
		"id is not run:seq": strings.Replace(good, "id: run_a:2", "id: 2", 1),
		"another run":       strings.Replace(good, `"run_id":"run_a","seq":2`, `"run_id":"run_b","seq":2`, 1),
		"no ts":             strings.Replace(good, `"seq":2,"ts":1`, `"seq":2`, 1),
		"unknown event":     strings.Replace(good, "event: assistant.delta", "event: message.delta", 1),
		"two data lines":    strings.Replace(good, "data: {\"delta\"", "data: {}\ndata: {\"delta\"", 1),
	} {
		if errs := check(stream, true); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
