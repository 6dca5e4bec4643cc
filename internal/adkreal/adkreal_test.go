package adkreal

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStart: the server lists the app, and two turns in one session are
// answered "turn 1: ..." then "turn 2: ..." (the session kept the first);
// a second Start returns the same server.
func TestStart(t *testing.T) {
	url := Start(t)
	if again := Start(t); again != url {
		t.Fatalf("second Start: %s, first %s", again, url)
	}
	do := func(method, path, body string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	if got := do("GET", "/list-apps", ""); got != `["`+App+`"]` {
		t.Errorf("list-apps: %s", got)
	}
	do("POST", "/apps/"+App+"/users/adkreal/sessions/s1", `{}`)
	for i, text := range []string{"hello", "again"} {
		body := do("POST", "/run", `{"appName":"`+App+`","userId":"adkreal","sessionId":"s1","newMessage":{"role":"user","parts":[{"text":"`+text+`"}]}}`)
		var evs []struct {
			Content struct {
				Parts []struct{ Text string }
			}
		}
		if err := json.Unmarshal([]byte(body), &evs); err != nil || len(evs) != 1 || len(evs[0].Content.Parts) != 1 {
			t.Fatalf("run %d: %v %s", i+1, err, body)
		}
		want := []string{"turn 1: hello", "turn 2: again"}[i]
		if got := evs[0].Content.Parts[0].Text; got != want {
			t.Errorf("run %d: %q, want %q", i+1, got, want)
		}
	}
}
