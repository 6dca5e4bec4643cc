package inbound

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bridge-dev/bridge/bridge"
)

func TestAuthenticate(t *testing.T) {
	var keys Keys
	keys.AddKey("alice", "ka")
	if err := keys.AddHash("bob", HashKey("kb"), "anthropic"); err != nil {
		t.Fatal(err)
	}
	if err := keys.AddHash("bad", "xyz"); err == nil {
		t.Error("AddHash took a hash that is not one")
	}
	var gotPrincipal string
	h := keys.Authenticate("anthropic", func(w http.ResponseWriter, err error) {
		w.WriteHeader(map[bridge.Code]int{bridge.CodeUnauthenticated: 401, bridge.CodePermissionDenied: 403}[bridge.ErrorCode(err)])
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gotPrincipal = bridge.PrincipalFromContext(r.Context()) }))
	tests := []struct {
		name, header, value string
		status              int
		principal           string
	}{
		{"bearer", "Authorization", "Bearer ka", 200, "alice"},
		{"x-api-key", "X-Api-Key", "kb", 200, "bob"},
		{"none", "", "", 401, ""},
		{"wrong", "Authorization", "Bearer kz", 401, ""},
		{"basic is not bearer", "Authorization", "Basic ka", 401, ""},
	}
	for _, tt := range tests {
		gotPrincipal = ""
		r := httptest.NewRequest("POST", "/", nil)
		if tt.header != "" {
			r.Header.Set(tt.header, tt.value)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.status || gotPrincipal != tt.principal {
			t.Errorf("%s: %d as %q, want %d as %q", tt.name, w.Code, gotPrincipal, tt.status, tt.principal)
		}
	}
	// bob's key is limited to anthropic.
	h2 := keys.Authenticate("openai", func(w http.ResponseWriter, err error) { w.WriteHeader(403) }, http.NotFoundHandler())
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("X-Api-Key", "kb")
	w := httptest.NewRecorder()
	h2.ServeHTTP(w, r)
	if w.Code != 403 {
		t.Errorf("limited key on another dialect: %d", w.Code)
	}
}
