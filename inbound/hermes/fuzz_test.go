package hermes_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	inhermes "github.com/bridge-dev/bridge/inbound/hermes"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// FuzzHandler: any body, session id or cursor gets a JSON answer (an
// object; an error in Hermes' envelope) or a stream, never a panic or a
// Go error string.
func FuzzHandler(f *testing.F) {
	for _, s := range []struct{ body, id, cursor string }{
		{`{"id":"s1","title":"t"}`, "s1", "run_x:3"},
		{`{"title":null,"end_reason":"done"}`, "s1", "garbage"},
		{`{"message":"hi"}`, "s1", ""},
		{`{"input":[{"role":"tool","tool_call_id":"c","content":"r"}]}`, "s%2F1", "1"},
		{`[`, "", ":"},
		{`{"id":"` + strings.Repeat("x", 300) + `"}`, "..", "run_:-1"},
	} {
		f.Add(s.body, s.id, s.cursor)
	}
	st, err := sqlite.Open(f.Context(), filepath.Join(f.TempDir(), "bridge.db"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	e, err := bridge.New(bridge.Config{Store: st, Route: func(string) (bridge.Upstream, error) {
		return &bridgetest.Upstream{Events: bridgetest.TextEvents("ok")}, nil
	}})
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close(f.Context())
	h := inhermes.New(inhermes.Config{Engine: e, Runs: st, KeepAlive: -1})
	f.Fuzz(func(t *testing.T, body, id, cursor string) {
		id = url.PathEscape(id)
		for _, rq := range []struct{ method, path string }{
			{"POST", "/api/sessions"},
			{"PATCH", "/api/sessions/" + id},
			{"POST", "/api/sessions/" + id + "/fork"},
			{"GET", "/api/sessions/" + id + "/messages?format=" + url.QueryEscape(cursor)},
			{"GET", "/api/sessions/" + id + "/chat/stream?after_event_id=" + url.QueryEscape(cursor)},
			{"POST", "/api/sessions/" + id + "/chat"},
			{"POST", "/v1/runs"},
			{"GET", "/api/sessions?limit=" + url.QueryEscape(cursor)},
		} {
			req := httptest.NewRequestWithContext(t.Context(), rq.method, "http://x"+rq.path, strings.NewReader(body))
			req.Header.Set("Idempotency-Key", cursor)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			ct := w.Header().Get("Content-Type")
			if ct == "text/event-stream" || w.Code/100 == 3 || w.Code == http.StatusNotFound && ct == "text/plain; charset=utf-8" {
				continue // a stream, or the mux's own redirect or 404 for a path it has no route for
			}
			var v map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %s: status %d, not a JSON object: %q", rq.method, rq.path, w.Code, w.Body.String())
			}
			if w.Code >= 400 {
				var env struct {
					Error struct{ Message, Code string } `json:"error"`
				}
				if json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Error.Code == "" || strings.Contains(env.Error.Message, "runtime error") {
					t.Fatalf("%s %s: %d %s", rq.method, rq.path, w.Code, w.Body.String())
				}
			}
		}
	})
}
