package runs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/inbound/inboundtest"
	inopenai "github.com/bridge-dev/bridge/inbound/openai"
	"github.com/bridge-dev/bridge/inbound/runs"
	"github.com/bridge-dev/bridge/storage/memory"
)

// TestStopAndSteer: for a dialect without a run object of its own, stop
// is cancel, and a steer of a running run is accepted, then refused with
// run_not_accepting_steer once it ended; POST /v1/runs is served only
// when a dialect creates runs.
func TestStopAndSteer(t *testing.T) {
	gate := make(chan struct{})
	up := &bridgetest.Upstream{Gate: gate, Events: bridgetest.TextEvents("a", "b", "c")}
	e := bridgetest.NewEngine(t, memory.New(nil), up)
	h := inboundtest.RunAPI(e, inopenai.New(inopenai.Config{Engine: e}), runs.Config{})
	for _, r := range h.Routes() {
		if r == "POST /v1/runs" {
			t.Errorf("POST /v1/runs served with no dialect creating runs")
		}
	}
	base := inboundtest.Serve(t, h)
	do := func(method, path, body string) (int, map[string]any) {
		resp, b := inboundtest.Do(t, method, base+path, body)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v
	}
	req := &bridge.Request{Inbound: "openai", Detached: true, Messages: []bridge.Message{{Role: bridge.RoleUser, Parts: []bridge.Part{bridge.TextPart("hi")}}}}
	run, err := e.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	if s, v := do("POST", "/v1/runs/"+run.ID+"/steer", `{"input":"more"}`); s != 200 || v["accepted"] != true {
		t.Errorf("steer: %d %v", s, v)
	}
	if s, v := do("POST", "/v1/runs/"+run.ID+"/steer", `{"nothing":1}`); s != 400 {
		t.Errorf("empty steer: %d %v", s, v)
	}
	go func() {
		for range 3 {
			select {
			case gate <- struct{}{}:
			case <-time.After(time.Second):
				return
			}
		}
	}()
	if s, v := do("POST", "/v1/runs/"+run.ID+"/stop", ``); s != 200 || v["status"] != "cancelled" {
		t.Errorf("stop: %d %v", s, v)
	}
	s, v := do("POST", "/v1/runs/"+run.ID+"/steer", `{"input":"late"}`)
	if errObj, _ := v["error"].(map[string]any); s != 409 || errObj["code"] != "run_not_accepting_steer" {
		t.Errorf("late steer: %d %v", s, v)
	}
	if s, _ := do("POST", "/v1/runs/run_nope/stop", ``); s != 404 {
		t.Errorf("stop of an unknown run: %d", s)
	}
}
