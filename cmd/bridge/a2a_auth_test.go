package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/inbound"
)

// a2aCall posts a JSON-RPC body to /a2a with a bearer key ("" for none).
func a2aCall(t *testing.T, base, key, body string) (int, string, http.Header) {
	t.Helper()
	resp, b := call(t, "POST", base+"/a2a", key, body, "Content-Type", "application/json")
	return resp.StatusCode, b, resp.Header
}

func rpcErrorCode(t *testing.T, body string) int {
	t.Helper()
	var r struct {
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Error == nil {
		t.Fatalf("not a JSON-RPC error: %s", body)
	}
	return r.Error.Code
}

// TestA2AAuth: with inbound keys, /a2a needs one (a JSON-RPC error with
// 401 or 403, never the handler) while the card stays public; a key
// limited to another dialect is refused; another principal's task is not
// found.
func TestA2AAuth(t *testing.T) {
	t.Setenv("BRIDGE_API_KEYS", "")
	t.Setenv("BRIDGE_API_KEY", "")
	cfg := defaultConfig()
	cfg.Keys = []KeyConfig{{Name: "a", SHA256: inbound.HashKey("key-a")}, {Name: "b", SHA256: inbound.HashKey("key-b")},
		{Name: "openai-only", SHA256: inbound.HashKey("key-o"), Dialects: []string{"openai"}}}
	base := "http://" + startMain(t, cfg).Addr()
	send := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`

	if status, body, _ := a2aCall(t, base, "", send); status != 401 || rpcErrorCode(t, body) >= 0 {
		t.Errorf("no key: %d %s", status, body)
	}
	if status, body, _ := a2aCall(t, base, "wrong", send); status != 401 {
		t.Errorf("a wrong key: %d %s", status, body)
	}
	if status, body, _ := a2aCall(t, base, "key-o", send); status != 403 || rpcErrorCode(t, body) >= 0 {
		t.Errorf("a key for another dialect: %d %s", status, body)
	}
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the card needs no key, got %d", resp.StatusCode)
	}
	status, body, _ := a2aCall(t, base, "key-a", send)
	var r struct {
		Result struct{ ID string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || status != 200 || r.Result.ID == "" {
		t.Fatalf("key A's send: %d %s", status, body)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + r.Result.ID + `"}}`
	if _, body, _ := a2aCall(t, base, "key-b", get); rpcErrorCode(t, body) != -32001 {
		t.Errorf("key B reading key A's task: %s", body)
	}
}

// TestA2AOverload: past the runs a principal may have going, a send is
// refused with a JSON-RPC error that says so (its bridge code in data).
func TestA2AOverload(t *testing.T) {
	cfg := defaultConfig()
	cfg.EchoDelay = 50 * time.Millisecond
	cfg.MaxRunsPerPrincipal = 1
	base := "http://" + startMain(t, cfg).Addr()
	slow := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"one two three four"}]},"configuration":{"blocking":false}}}`
	if status, body, _ := a2aCall(t, base, "", slow); status != 200 || strings.Contains(body, `"error"`) {
		t.Fatalf("first: %d %s", status, body)
	}
	status, body, _ := a2aCall(t, base, "", slow)
	if status != 200 || rpcErrorCode(t, body) != -32000 || !strings.Contains(body, `"bridgeCode":"rate_limited"`) {
		t.Errorf("a second concurrent run: %d %s", status, body)
	}
}
