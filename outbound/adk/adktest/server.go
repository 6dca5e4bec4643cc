package adktest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"
)

// Request is a request the server received.
type Request struct {
	Method, Path string
	Body         []byte
}

// Server is the fake api_server.
type Server struct {
	*httptest.Server
	// Apps are the app names (default scripted, scripted_tools).
	Apps []string
	// Delay is slept before each partial event.
	Delay time.Duration
	// Resumable makes the server resume as a bridge does (the chatkit
	// convention, which ADK itself lacks): a run_sse request with
	// lastEventId and no newMessage sends the events of the session's last
	// run after that id, then [DONE]. A "cut:" run is then cut halfway.
	Resumable bool

	mu       sync.Mutex
	sessions map[string]*session
	requests []Request
	last     map[string][]event // the events of each session's last cut run
	aborted  int                // runs that stopped because their client went away
}

// Aborted counts the runs that stopped because their run_sse connection
// closed (ADK-JS aborts the invocation then).
func (s *Server) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

type session struct {
	ID      string          `json:"id"`
	AppName string          `json:"appName"`
	UserID  string          `json:"userId"`
	State   json.RawMessage `json:"state"`
	Events  []event         `json:"events"`
	Updated int64           `json:"lastUpdateTime"`
}

type event map[string]any

// New starts a server; it is closed when the test ends.
func New() *Server {
	s := &Server{Apps: []string{"scripted", "scripted_tools"}, sessions: map[string]*session{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /list-apps", func(w http.ResponseWriter, r *http.Request) { s.json(w, 200, s.Apps) })
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) { s.json(w, 200, map[string]string{"version": "2.0.0"}) })
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions", s.create)
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions/{id}", s.create)
	mux.HandleFunc("GET /apps/{app}/users/{user}/sessions", s.list)
	mux.HandleFunc("GET /apps/{app}/users/{user}/sessions/{id}", s.get)
	mux.HandleFunc("DELETE /apps/{app}/users/{user}/sessions/{id}", s.delete)
	mux.HandleFunc("POST /run", s.run)
	mux.HandleFunc("POST /run_sse", s.run)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Body: b})
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RunRequests returns the bodies of the /run and /run_sse requests.
func (s *Server) RunRequests() []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, r := range s.Requests() {
		if r.Path == "/run" || r.Path == "/run_sse" {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(r.Body, &m)
			out = append(out, m)
		}
	}
	return out
}

// Session returns a copy of a session's JSON, or nil.
func (s *Server) Session(app, user, id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[app+"/"+user+"/"+id]
	if ss == nil {
		return nil
	}
	b, _ := json.Marshal(ss)
	return b
}

func (s *Server) json(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	s.json(w, status, map[string]string{"error": msg})
}

func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

const idChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func eventID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return string(b[:])
}

func now() int64 { return time.Now().UnixMilli() }

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		State json.RawMessage `json:"state"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	id := r.PathValue("id")
	if id == "" {
		id = uuid() // ADK-JS ignores a body sessionId
	}
	app, user := r.PathValue("app"), r.PathValue("user")
	s.mu.Lock()
	defer s.mu.Unlock()
	k := app + "/" + user + "/" + id
	if s.sessions[k] != nil {
		s.fail(w, 400, "Session already exists: "+id)
		return
	}
	if len(body.State) == 0 {
		body.State = json.RawMessage("{}")
	}
	ss := &session{ID: id, AppName: app, UserID: user, State: body.State, Events: []event{}, Updated: now()}
	s.sessions[k] = ss
	s.json(w, 200, ss)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []session{}
	for _, ss := range s.sessions {
		if ss.AppName == r.PathValue("app") && ss.UserID == r.PathValue("user") {
			c := *ss
			c.Events, c.State = []event{}, json.RawMessage("{}")
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	s.json(w, 200, map[string]any{"sessions": out, "page": 1, "limit": len(out), "totalItems": len(out), "totalPages": 1})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	b := s.Session(r.PathValue("app"), r.PathValue("user"), r.PathValue("id"))
	if b == nil {
		s.fail(w, 404, "Session not found: "+r.PathValue("id"))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(b)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := r.PathValue("app") + "/" + r.PathValue("user") + "/" + r.PathValue("id")
	if s.sessions[k] == nil {
		s.fail(w, 404, "Session not found: "+r.PathValue("id"))
		return
	}
	delete(s.sessions, k)
	w.WriteHeader(204)
}

// runRequest is what ADK-JS reads of a run body: camelCase keys only.
type runRequest struct {
	AppName    string          `json:"appName"`
	UserID     string          `json:"userId"`
	SessionID  string          `json:"sessionId"`
	NewMessage json.RawMessage `json:"newMessage"`
	Streaming  bool            `json:"streaming"`
	StateDelta json.RawMessage `json:"stateDelta"`
	// LastEventID is read only by a Resumable server.
	LastEventID string `json:"lastEventId"`
}

func actions() map[string]any {
	return map[string]any{"stateDelta": map[string]any{}, "artifactDelta": map[string]any{}, "requestedAuthConfigs": map[string]any{}, "requestedToolConfirmations": map[string]any{}}
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	sse := r.URL.Path == "/run_sse"
	var req runRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(400)
		_, _ = w.Write([]byte("<!DOCTYPE html>\n<html><body><pre>SyntaxError</pre></body></html>\n"))
		return
	}
	s.mu.Lock()
	ss := s.sessions[req.AppName+"/"+req.UserID+"/"+req.SessionID]
	s.mu.Unlock()
	if ss == nil {
		id := req.SessionID
		if id == "" {
			id = "undefined"
		}
		s.fail(w, 404, "Session not found: "+id)
		return
	}
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
	}
	if len(req.NewMessage) == 0 {
		if s.Resumable && sse && req.LastEventID != "" {
			s.mu.Lock()
			evs := s.last[req.AppName+"/"+req.UserID+"/"+req.SessionID]
			s.mu.Unlock()
			i := 0
			for i < len(evs) && evs[i]["id"] != req.LastEventID {
				i++
			}
			for _, ev := range evs[min(i+1, len(evs)):] {
				b, _ := json.Marshal(ev)
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
		return // ADK-JS: nothing runs, the stream ends empty
	}
	var msg struct {
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	}
	inv := "e-" + uuid()
	var out []event
	emit := func(ev event) bool {
		ev["invocationId"], ev["author"] = inv, req.AppName
		if ev["id"] == nil {
			ev["id"] = eventID()
		}
		ids := []string{}
		if lr, _ := ev["longRunning"].(bool); lr {
			delete(ev, "longRunning")
			ids = []string{"call-client-1"}
		}
		ev["actions"], ev["longRunningToolIds"], ev["timestamp"] = actions(), ids, now()
		if p, _ := ev["partial"].(bool); !p {
			s.mu.Lock()
			ss.Events = append(ss.Events, ev)
			ss.Updated = now()
			s.mu.Unlock()
		}
		if !sse {
			if p, _ := ev["partial"].(bool); !p {
				out = append(out, ev)
			}
			return true
		}
		b, _ := json.Marshal(ev)
		_, err := fmt.Fprintf(w, "data: %s\n\n", b)
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		if err != nil || r.Context().Err() != nil {
			s.mu.Lock()
			s.aborted++
			s.mu.Unlock()
			return false
		}
		return true
	}
	if err := json.Unmarshal(req.NewMessage, &msg); err != nil || msg.Parts == nil {
		emit(event{"errorCode": "UNKNOWN_ERROR", "errorMessage": "((intermediate value)(intermediate value)(intermediate value) || []).map is not a function"})
		s.finish(w, sse, out)
		return
	}
	var text strings.Builder
	for _, p := range msg.Parts {
		if t, ok := p["text"].(string); ok {
			text.WriteString(t)
		}
	}
	s.mu.Lock()
	turn := 1
	for _, ev := range ss.Events {
		if ev["author"] == "user" {
			turn++
		}
	}
	ss.Events = append(ss.Events, event{"id": eventID(), "invocationId": inv, "author": "user", "actions": actions(), "longRunningToolIds": []string{},
		"timestamp": now(), "content": map[string]any{"role": "user", "parts": msg.Parts}})
	s.mu.Unlock()

	say := func(answer string, cut bool) {
		ws := strings.SplitAfter(answer, " ")
		var evs []event
		if sse && req.Streaming {
			for _, wd := range ws {
				evs = append(evs, event{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": wd}}}, "partial": true})
			}
		}
		evs = append(evs, event{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": answer}}}, "turnComplete": true,
			"usageMetadata": map[string]int{"promptTokenCount": 1, "candidatesTokenCount": len(ws)}})
		n := len(evs)
		if cut {
			n = len(evs) / 2
			if !s.Resumable {
				n = len(evs) - 1 // the connection drops before the complete event
			}
		}
		if cut && s.Resumable { // the whole run, for the resume (ids and times now)
			for _, r := range evs {
				r["invocationId"], r["author"], r["id"] = inv, req.AppName, eventID()
				r["actions"], r["longRunningToolIds"], r["timestamp"] = actions(), []string{}, now()
			}
			s.mu.Lock()
			if s.last == nil {
				s.last = map[string][]event{}
			}
			kept := make([]event, len(evs)) // emit sets keys of evs below: keep copies
			for i, r := range evs {
				kept[i] = maps.Clone(r)
			}
			s.last[req.AppName+"/"+req.UserID+"/"+req.SessionID] = kept
			s.mu.Unlock()
		}
		for i, ev := range evs {
			if i == n {
				panic(http.ErrAbortHandler)
			}
			if p, _ := ev["partial"].(bool); p {
				time.Sleep(s.Delay)
			}
			if !emit(ev) {
				return
			}
		}
	}
	t := text.String()
	var answered map[string]any // a client's functionResponse
	for _, p := range msg.Parts {
		if fr, ok := p["functionResponse"].(map[string]any); ok {
			answered = fr
		}
	}
	switch {
	case answered != nil:
		resp, _ := json.Marshal(answered["response"])
		say("the tool said: "+string(resp), false)
	case strings.HasPrefix(t, "client:"):
		// A long-running call the client answers: the invocation stops
		// at it (ADK's final response), the stream ends.
		city := strings.TrimPrefix(t, "client:")
		ev := event{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": "call-client-1", "name": "get_weather", "args": map[string]string{"city": city}}}}},
			"turnComplete": true}
		ev["longRunning"] = true
		emit(ev)
	case strings.HasPrefix(t, "weather:"):
		city := strings.TrimPrefix(t, "weather:")
		emit(event{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": "call-weather-1", "name": "get_weather", "args": map[string]string{"city": city}}}}},
			"turnComplete": true, "usageMetadata": map[string]int{"promptTokenCount": 1, "candidatesTokenCount": 1}})
		emit(event{"content": map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": "call-weather-1", "name": "get_weather", "response": map[string]any{"city": city, "temp_c": 21, "sky": "clear"}}}}}})
		say("The weather in "+city+": clear, 21 C.", false)
	case strings.HasPrefix(t, "error:"):
		code := strings.TrimPrefix(t, "error:")
		emit(event{"errorCode": code, "errorMessage": "scripted error " + code, "turnComplete": true})
	case strings.HasPrefix(t, "cut:"):
		say(strings.TrimPrefix(t, "cut:"), true)
	case strings.HasPrefix(t, "say:"):
		say(strings.TrimPrefix(t, "say:"), false)
	default:
		say(fmt.Sprintf("turn %d: %s", turn, t), false)
	}
	s.finish(w, sse, out)
}

func (s *Server) finish(w http.ResponseWriter, sse bool, out []event) {
	if !sse {
		if out == nil {
			out = []event{}
		}
		s.json(w, 200, out)
	}
}
