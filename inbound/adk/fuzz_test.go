package adk

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/bridge-dev/bridge/bridge/bridgetest"
)

// FuzzCreateSession posts arbitrary bodies to both session create routes:
// the answer is a session whose state is an object, or an ADK error
// object, never a panic or a Go error text.
func FuzzCreateSession(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"sessionId":"s1"}`, `{"session_id":"s2","state":{"a":1}}`, `{"state":null}`,
		`{"a":1}`, `{"sessionId":1}`, `{"state":[1]}`, `[]`, `null`, `{"sessionId":"bad/id"}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	h := newHandler(f, &bridgetest.Upstream{Events: bridgetest.TextEvents("ok")})
	f.Fuzz(func(t *testing.T, body []byte, withID bool) {
		path := "/apps/app/users/u/sessions"
		if withID {
			path += "/fuzz"
		}
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == 200 {
			var s struct {
				ID    string          `json:"id"`
				State json.RawMessage `json:"state"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || s.ID == "" || len(s.State) == 0 || s.State[0] != '{' {
				t.Fatalf("status 200, body %q: not a session with an object state", w.Body)
			}
			return
		}
		var e struct {
			Error *string `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil || *e.Error == "" {
			t.Fatalf("status %d, body %q: not an ADK error", w.Code, w.Body)
		}
	})
}
