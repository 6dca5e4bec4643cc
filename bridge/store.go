package bridge

import (
	"context"
	"encoding/json"
	"time"
)

// Session is one conversation. A session is named by its principal and its
// id together: two principals may each have a session "demo", and neither
// can find the other's (docs/security.md, "One id namespace per principal").
type Session struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal,omitempty"`
	Created   time.Time `json:"created_at"`
	Updated   time.Time `json:"updated_at"`
	// State is the session's key-value state (ADK state), a JSON object.
	State []byte `json:"state,omitempty"`
}

// Run is one turn, from the user's input to a final result.
type Run struct {
	ID          string `json:"id"`
	SessionID   string `json:"session_id"`
	ClientRunID string `json:"client_run_id,omitempty"`
	Principal   string `json:"principal,omitempty"`

	Inbound  string `json:"inbound"`  // the client's dialect
	Outbound string `json:"outbound"` // the upstream's dialect
	Upstream string `json:"upstream"` // the upstream's configured name
	Model    string `json:"model,omitempty"`

	Status     Status     `json:"status"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Usage      Usage      `json:"usage"`
	Dropped    []string   `json:"dropped,omitempty"`

	// Render holds the inbound dialect's rendering options (such as
	// include_usage), set when the run is created, so a replay renders the
	// stream the client saw.
	Render json.RawMessage `json:"render,omitempty"`

	TraceID       string `json:"trace_id,omitempty"`
	UpstreamRunID string `json:"upstream_run_id,omitempty"`

	// Superseded marks a run a regenerate or an edit discarded: it and its
	// messages stay in the store, out of the session's transcript and its
	// history (Store.Supersede).
	Superseded bool `json:"superseded,omitempty"`

	Created  time.Time `json:"created_at"`
	Finished time.Time `json:"finished_at,omitzero"`
	// FirstCommit is when the run's first content (the first event a
	// client shows) was committed; FirstClientByte when the response to
	// the request that started it wrote its first byte. Zero: not known
	// (no content; a request with no body written, a WebSocket). No event
	// records them: the inspector's waterfall and `bridge runs show` read
	// them here.
	FirstCommit     time.Time `json:"first_commit_at,omitzero"`
	FirstClientByte time.Time `json:"first_client_byte_at,omitzero"`
	// LastSeq is the seq of the last committed event.
	LastSeq int64 `json:"last_seq"`
}

// RunFilter selects runs for ListRuns. Zero fields match everything.
// Runs come newest first (by Created, then by insertion order). A session
// is named by its principal and id: who lists a session's runs sets both
// (SessionID alone lists every principal's sessions of that id).
type RunFilter struct {
	SessionID string
	Principal string
	Status    Status
	// Inbound, Outbound and Model match the run's dialects and model.
	Inbound  string
	Outbound string
	Model    string
	// Since and Until bound Created: Since <= Created < Until.
	Since time.Time
	Until time.Time
	// Before pages: only runs after the run with this id in the list's
	// order (older, or as old and inserted before). An unknown id matches
	// nothing.
	Before string
	Limit  int
}

// Batch is one unit of work the engine's writer commits in one transaction:
// events of any number of runs (in seq order per run), runs that changed
// (ended, or learnt an upstream id), and transcript messages.
type Batch struct {
	// Sessions and NewRuns are created first (CodeConflict if one exists),
	// so the batch's messages and events may belong to them. A session is
	// created before any run of it (here or by CreateSession), so a store
	// may take one created here to have no numbered events yet
	// (Event.SessionSeq).
	Sessions []*Session
	NewRuns  []*Run
	Events   []Event
	Runs     []*Run
	Messages []Message
	// Timings set what runs learnt of their timings after their row was
	// committed: each non-zero time where the run's row has none yet (a
	// run that does not exist is skipped).
	Timings []RunTiming
}

// SessionPos is a position in a session's commit order: just after the
// event Seq of the run whose events got SessionSeq (a SessionSeq is one
// run's), or, with Seq 0, just before that run's events with it.
type SessionPos struct {
	SessionSeq int64
	Seq        int64
}

// Pos is the position just after e in its session's commit order.
func (e *Event) Pos() SessionPos { return SessionPos{SessionSeq: e.SessionSeq, Seq: e.Seq} }

// Before reports whether p comes before q.
func (p SessionPos) Before(q SessionPos) bool {
	return p.SessionSeq < q.SessionSeq || p.SessionSeq == q.SessionSeq && p.Seq < q.Seq
}

// IDKind names what an id-map entry maps.
type IDKind string

const (
	IDRun      IDKind = "run"       // local run id <-> upstream run/task/invocation id
	IDSession  IDKind = "session"   // local session <-> upstream context/session
	IDToolCall IDKind = "tool_call" // local tool-call id <-> the id an upstream minted or accepts
	IDCursor   IDKind = "cursor"    // local event id <-> upstream event id
)

// IDMapping is one entry of the id map. Scope is the upstream's name (tool
// calls and sessions are mapped per upstream).
type IDMapping struct {
	Kind   IDKind
	Scope  string
	Local  string
	Remote string
}

// Store is the durable log: sessions, runs, events, transcript messages and
// id maps. Implementations are safe for concurrent use; each method is its
// own transaction. A PostgreSQL store implements the same interface.
//
// Lookups of a missing row return an *Error with CodeNotFound.
type Store interface {
	// CreateSession inserts s; CodeConflict if its principal has a
	// session of its id.
	CreateSession(ctx context.Context, s *Session) error
	// Session returns principal's session id; another principal's session
	// of that id is not found.
	Session(ctx context.Context, principal, id string) (*Session, error)
	// UpdateSession writes s.Updated and s.State of the session (s.Principal,
	// s.ID).
	UpdateSession(ctx context.Context, s *Session) error

	// CreateRun inserts r together with the messages that start it (the
	// user's input) in one transaction.
	CreateRun(ctx context.Context, r *Run, input []Message) error
	Run(ctx context.Context, id string) (*Run, error)
	// RunByClientID finds a run by the id its client proposed (the
	// newest, when several runs have it).
	//
	// A run whose client run id is an idempotency key (IdempotencyKeyed)
	// is the only run of its principal with that key: CreateRun, or a
	// Commit with it among NewRuns, fails with CodeConflict when another
	// has it, so two replicas that race with one key create one run.
	RunByClientID(ctx context.Context, principal, clientRunID string) (*Run, error)
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)

	// Commit writes a batch atomically. It numbers the batch's events in
	// their sessions' commit order (Event.SessionSeq): each run of the
	// batch (of a session: a run's session is its principal's session
	// SessionID), in the order its first event comes in b.Events, takes
	// its session's next number for all its events of the batch (set in
	// b.Events, so what the engine hands on carries it too). Commits
	// of one session are numbered in the order they are committed, so a
	// reader never sees a number before a lower one of the same session.
	Commit(ctx context.Context, b *Batch) error
	// Events returns up to limit committed events of run with seq > after,
	// in seq order, each with its SessionSeq. limit <= 0 means all.
	Events(ctx context.Context, run string, after int64, limit int) ([]Event, error)
	// SessionEvents returns up to limit committed events of principal's
	// runs of session that come after the position after, in commit
	// order: ordered by SessionSeq, then Seq, those with SessionSeq >
	// after.SessionSeq or with SessionSeq = after.SessionSeq and Seq >
	// after.Seq. limit <= 0 means all. An unknown session has none.
	SessionEvents(ctx context.Context, principal, session string, after SessionPos, limit int) ([]Event, error)
	// SessionSeq is the SessionSeq of the last events committed of
	// principal's session (0 before any).
	SessionSeq(ctx context.Context, principal, session string) (int64, error)

	// Messages returns up to limit transcript messages of principal's
	// session in force (not superseded), oldest first, ending before the message at
	// position before (0: the newest), and whether older ones exist. Each message's position is returned in
	// its ID ("m<position>").
	Messages(ctx context.Context, principal, session string, before int64, limit int) (msgs []Message, more bool, err error)
	// RunMessages returns the transcript messages of run, oldest first,
	// with their IDs as Messages gives them (none for an unknown run).
	RunMessages(ctx context.Context, run string) ([]Message, error)

	// Supersede discards run and every run of its session (its
	// principal's) created after it (a regenerate, an edit), in one transaction: they and their
	// messages stay, marked (Run.Superseded), but Messages leaves the
	// messages out from then on, and a message committed later to one of
	// them is born superseded. It returns the ids it marked, oldest first
	// (runs marked before are not marked again). CodeNotFound for an
	// unknown run.
	Supersede(ctx context.Context, run string, at time.Time) ([]string, error)
	// AllMessages is Messages with the superseded messages too, in the
	// same positions: a history that shows what was discarded.
	AllMessages(ctx context.Context, principal, session string, before int64, limit int) (msgs []Message, more bool, err error)

	// PutID records a mapping; an existing (kind, scope, local) is replaced.
	PutID(ctx context.Context, m IDMapping) error
	// RemoteID and LocalID look a mapping up in either direction.
	RemoteID(ctx context.Context, kind IDKind, scope, local string) (string, error)
	LocalID(ctx context.Context, kind IDKind, scope, remote string) (string, error)

	// InterruptRunning closes every run left running (by a crash) as
	// interrupted with reason, appending its final event (numbered in its
	// session's commit order as Commit numbers events); it returns the ids.
	// The runs named in keep stay running (this process resumes them
	// upstream).
	InterruptRunning(ctx context.Context, reason string, now time.Time, keep ...string) ([]string, error)
	// DeleteEventsBefore deletes the events of runs that ended before t.
	DeleteEventsBefore(ctx context.Context, t time.Time) (int64, error)

	Close() error
}

// IdempotencyKeyed reports whether r's client run id is an idempotency key,
// unique per principal in the store: a Hermes run's (POST /v1/runs'
// Idempotency-Key). Other dialects' client run ids (X-Client-Run-Id, an
// A2A messageId) name runs without being unique.
func IdempotencyKeyed(r *Run) bool {
	return r.Inbound == idempotentInbound && r.ClientRunID != ""
}

// idempotentInbound is the dialect whose client run ids are idempotency
// keys (mapping/hermes.Dialect; the stores' unique indexes name it too).
const idempotentInbound = "hermes"
