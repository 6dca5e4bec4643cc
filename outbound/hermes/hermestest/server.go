// Package hermestest is a fake Hermes agent API server, written from the
// protocol note (../shared/protocols/hermes.md): sessions, the session
// chat stream with its named frames, and the Runs API's status, stop and
// steer. Its agent is scripted by the words in the user's message:
//
//   - "tool" runs a terminal tool (tool.started, tool.completed) first;
//   - "think" streams _thinking progress first;
//   - "fail" ends the turn with error;
//   - "slow" streams a word every Server.Delay until stopped (stop ends
//     it with assistant.completed interrupted, then done);
//   - anything else answers "you said: <message>" word by word.
//
// As Hermes' newer builds, a turn goes on when its stream's client goes
// away. Like Hermes, its frames carry no id: and a broken stream cannot be
// resumed, unless Resumable is set: then it serves what a bridge's Hermes
// API adds, frame ids "<run_id>:<seq>" and GET .../chat/stream with
// Last-Event-ID for the frames after it.
package hermestest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a fake Hermes server. Close it with Close.
type Server struct {
	*httptest.Server
	// Key, when set, is the bearer token every request must carry.
	Key string
	// Delay paces "slow" turns (default 20ms).
	Delay time.Duration
	// Resumable makes the session stream resumable, as a bridge's is.
	Resumable bool
	// CutAfter, when positive, drops the connection of the first chat
	// stream after that many frames (the turn goes on).
	CutAfter int
	// Features are added to the features /v1/capabilities lists (a
	// bridge's client_tools, conversation_history).
	Features map[string]bool

	mu       sync.Mutex
	sessions map[string]*session
	runs     map[string]*run
	n        int
	// chats are the bodies of the chat stream requests, in order.
	chats []map[string]any
	// stops and steers are the run ids stopped and the texts steered.
	stops  []string
	steers []string
	// resumes are the Last-Event-IDs of the resumed streams.
	resumes []string
	streams int
	quit    chan struct{} // closed by Close: the turns end
}

type session struct {
	id       string
	messages []map[string]any
	active   string
}

type run struct {
	id, session string
	stop        chan struct{}
	stopped     bool
	done        bool
	status      string
	output      string
	steers      []string
	frames      [][]byte      // every frame of the turn, in order
	more        chan struct{} // closed and replaced when a frame is added
}

// New starts a server on 127.0.0.1.
func New() *Server {
	s := &Server{sessions: map[string]*session{}, runs: map[string]*run{}, Delay: 20 * time.Millisecond, quit: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/sessions", s.createSession)
	mux.HandleFunc("GET /api/sessions/{id}/messages", s.messages)
	mux.HandleFunc("POST /api/sessions/{id}/chat/stream", s.chatStream)
	mux.HandleFunc("GET /api/sessions/{id}/chat/stream", s.resumeStream)
	mux.HandleFunc("GET /v1/runs/{id}", s.getRun)
	mux.HandleFunc("GET /v1/capabilities", s.capabilities)
	mux.HandleFunc("POST /v1/runs/{id}/stop", s.stop)
	mux.HandleFunc("POST /v1/runs/{id}/steer", s.steer)
	s.Server = httptest.NewServer(s.auth(mux))
	return s
}

// Close stops the server and the turns still going.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	s.mu.Unlock()
	s.Server.Close()
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}

// session is the session the path names, or nil, answered 404. s.mu is
// held.
func (s *Server) session(w http.ResponseWriter, r *http.Request) *session {
	sess, ok := s.sessions[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "session_not_found", "Session not found")
	}
	return sess
}

// run is the run the path names, or nil, answered 404. s.mu is held.
func (s *Server) run(w http.ResponseWriter, r *http.Request) *run {
	ru, ok := s.runs[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "run_not_found", "Run not found")
	}
	return ru
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
			writeError(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if body.ID == "" {
		s.n++
		body.ID = fmt.Sprintf("hs-%d", s.n)
	}
	if _, ok := s.sessions[body.ID]; ok {
		writeError(w, http.StatusConflict, "session_exists", "Session already exists: "+body.ID)
		return
	}
	s.sessions[body.ID] = &session{id: body.ID}
	writeJSON(w, http.StatusCreated, map[string]any{"object": "hermes.session", "session": map[string]any{"id": body.ID, "source": "api"}})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "session_id": sess.id, "data": sess.messages})
}

// Forget deletes a session, as if the upstream lost it.
func (s *Server) Forget(id string) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
}

// Sessions counts the sessions created.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func (s *Server) chatStream(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "Invalid JSON")
		return
	}
	msg, _ := body["message"].(string)
	if msg == "" {
		msg, _ = body["input"].(string)
	}
	if msg == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "message is required")
		return
	}
	s.mu.Lock()
	sess := s.session(w, r)
	if sess == nil {
		s.mu.Unlock()
		return
	}
	if sess.active != "" {
		active := sess.active
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "run_already_active", "A run is already active: "+active)
		return
	}
	s.n++
	ru := &run{id: fmt.Sprintf("run_%032x", s.n), session: sess.id, stop: make(chan struct{}), status: "running", more: make(chan struct{})}
	s.runs[ru.id] = ru
	sess.active = ru.id
	s.chats = append(s.chats, body)
	s.streams++
	cut := 0
	if s.streams == 1 {
		cut = s.CutAfter
	}
	sess.messages = append(sess.messages, map[string]any{"id": len(sess.messages) + 1, "session_id": sess.id, "role": "user", "content": msg})
	s.mu.Unlock()

	go s.turn(sess, ru, msg, s.n) // the turn goes on without its stream's client
	s.follow(w, r, ru, 0, cut)
}

// resumeStream serves the frames of the run Last-Event-ID names, after
// it: what a bridge's Hermes API does, when Resumable.
func (s *Server) resumeStream(w http.ResponseWriter, r *http.Request) {
	if !s.Resumable {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed")
		return
	}
	c := r.Header.Get("Last-Event-ID")
	i := strings.LastIndexByte(c, ':')
	var seq int
	if i > 0 {
		seq, _ = strconv.Atoi(c[i+1:])
	}
	s.mu.Lock()
	s.resumes = append(s.resumes, c)
	ru, ok := s.runs[c[:max(i, 0)]]
	s.mu.Unlock()
	if !ok || ru.session != r.PathValue("id") {
		writeError(w, http.StatusNotFound, "run_not_found", "Run not found")
		return
	}
	s.follow(w, r, ru, seq, 0)
}

// follow writes ru's frames after the first after, live until done; cut,
// when positive, drops the connection after that many frames.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, ru *run, after, cut int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Hermes-Session-Id", ru.session)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, n := after, 0; ; {
		s.mu.Lock()
		frames, more, done := ru.frames[min(i, len(ru.frames)):], ru.more, ru.done
		s.mu.Unlock()
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
			i++
			if n++; cut > 0 && n >= cut {
				panic(http.ErrAbortHandler) // the connection drops mid-stream
			}
		}
		if done { // the frames read with done were the last: the stream ends
			return
		}
		select {
		case <-more:
		case <-r.Context().Done():
			return
		}
	}
}

// turn runs the scripted agent for msg, adding ru's frames.
func (s *Server) turn(sess *session, ru *run, msg string, n int) {
	seq := 0
	frame := func(name string, payload map[string]any) {
		seq++
		payload["session_id"], payload["run_id"], payload["seq"] = sess.id, ru.id, seq
		payload["ts"] = float64(time.Now().UnixMilli()) / 1000
		b, _ := json.Marshal(payload)
		var f []byte
		if s.Resumable {
			f = fmt.Appendf(f, "id: %s:%d\n", ru.id, seq)
		}
		f = fmt.Appendf(f, "event: %s\ndata: %s\n\n", name, b)
		s.mu.Lock()
		ru.frames = append(ru.frames, f)
		close(ru.more)
		ru.more = make(chan struct{})
		s.mu.Unlock()
	}
	status := "completed"
	defer func() {
		// The turn is over before done says so: a client may start the
		// next one as soon as it reads done.
		s.mu.Lock()
		sess.active, ru.status = "", status
		s.mu.Unlock()
		frame("done", map[string]any{})
		s.mu.Lock()
		ru.done = true
		close(ru.more)
		ru.more = make(chan struct{})
		s.mu.Unlock()
	}()
	mid := fmt.Sprintf("msg_%d", n)
	frame("run.started", map[string]any{"user_message": map[string]any{"role": "user", "content": msg}})
	frame("message.started", map[string]any{"message": map[string]any{"id": mid, "role": "assistant"}})
	if strings.Contains(msg, "think") {
		frame("tool.progress", map[string]any{"message_id": mid, "tool_name": "_thinking", "delta": "pondering"})
	}
	if strings.Contains(msg, "fail") {
		status = "failed"
		frame("error", map[string]any{"message": "the model provider failed"})
		return
	}
	var messages []map[string]any
	if strings.Contains(msg, "tool") {
		args := map[string]any{"command": "ls"}
		frame("tool.started", map[string]any{"message_id": mid, "tool_name": "terminal", "preview": "ls", "args": args})
		frame("tool.completed", map[string]any{"message_id": mid, "tool_name": "terminal", "preview": "ls", "args": args})
		messages = append(messages,
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "terminal", "arguments": `{"command":"ls"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "tool_name": "terminal", "content": "README.md"})
	}
	var text strings.Builder
	if strings.Contains(msg, "slow") {
		for i := 0; i < 500; i++ {
			select {
			case <-s.quit:
				return
			case <-ru.stop:
				status = "cancelled"
				frame("assistant.completed", map[string]any{"message_id": mid, "content": text.String(), "completed": false, "partial": true, "interrupted": true})
				return
			case <-time.After(s.Delay):
			}
			d := fmt.Sprintf("w%d ", i)
			text.WriteString(d)
			frame("assistant.delta", map[string]any{"message_id": mid, "delta": d})
		}
	} else {
		for _, word := range strings.SplitAfter("you said: "+msg, " ") {
			text.WriteString(word)
			frame("assistant.delta", map[string]any{"message_id": mid, "delta": word})
		}
	}
	frame("assistant.completed", map[string]any{"message_id": mid, "content": text.String(), "completed": true, "partial": false, "interrupted": false})
	messages = append(messages, map[string]any{"role": "assistant", "content": text.String()})
	s.mu.Lock()
	ru.output = text.String()
	for _, m := range messages {
		m["id"], m["session_id"] = len(sess.messages)+1, sess.id
		sess.messages = append(sess.messages, m)
	}
	s.mu.Unlock()
	frame("run.completed", map[string]any{"message_id": mid, "completed": true, "messages": messages,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
}

// capabilities is GET /v1/capabilities.
func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	f := map[string]bool{"session_chat_stream": true, "run_status": true, "run_stop": true}
	for k, v := range s.Features {
		f[k] = v
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.api_server.capabilities", "platform": "hermes-agent", "features": f})
}

// getRun is GET /v1/runs/{id}: the run's status.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ru := s.run(w, r)
	if ru == nil {
		return
	}
	v := map[string]any{"object": "hermes.run", "run_id": ru.id, "status": ru.status, "session_id": ru.session}
	if ru.output != "" {
		v["output"] = ru.output
	}
	switch ru.status {
	case "completed":
		v["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
	case "failed":
		v["error"] = "the model provider failed"
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ru := s.run(w, r)
	if ru == nil {
		return
	}
	s.stops = append(s.stops, ru.id)
	if ru.done {
		writeJSON(w, http.StatusOK, map[string]any{"run_id": ru.id, "status": "completed"})
		return
	}
	if !ru.stopped {
		ru.stopped, ru.status = true, "stopping"
		close(ru.stop)
	}
	writeJSON(w, http.StatusOK, map[string]any{"run_id": ru.id, "status": "stopping"})
}

func (s *Server) steer(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	defer s.mu.Unlock()
	ru := s.run(w, r)
	if ru == nil {
		return
	}
	if ru.done || ru.stopped {
		writeError(w, http.StatusConflict, "run_not_accepting_steer", "Run is not running")
		return
	}
	text, _ := body["input"].(string)
	ru.steers = append(ru.steers, text)
	s.steers = append(s.steers, text)
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.run.steer", "run_id": ru.id, "accepted": true})
}

// Resumes returns the Last-Event-IDs of the resumed streams.
func (s *Server) Resumes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.resumes...)
}

// Snapshot returns copies of the recorded chats, stops and steers.
func (s *Server) Snapshot() (chats []map[string]any, stops, steers []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.chats...), append([]string(nil), s.stops...), append([]string(nil), s.steers...)
}
