package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
)

// Store is the part of bridge.Store the handler keeps stored responses in:
// the id map, and a session's transcript for a branch.
type Store interface {
	PutID(ctx context.Context, m bridge.IDMapping) error
	RemoteID(ctx context.Context, kind bridge.IDKind, scope, local string) (string, error)
	Messages(ctx context.Context, session string, before int64, limit int) ([]bridge.Message, bool, error)
}

// The id-map kinds of a stored response, each scoped by principal. Each is
// written by one party, so none needs a read-modify-write of another's.
const (
	kindResponse bridge.IDKind = "response"        // response id -> record (JSON), written at creation
	kindInput    bridge.IDKind = "response.input"  // response id -> its input items (JSON array)
	kindOutput   bridge.IDKind = "response.output" // response id -> the finished Response object
	kindEnd      bridge.IDKind = "response.end"    // response id -> position of its session's last message when it ended
	kindHead     bridge.IDKind = "response.head"   // session id -> the session's latest response id
	kindSegments bridge.IDKind = "response.runs"   // run id -> [[after seq, response id], ...]
)

// record is a stored response.
type record struct {
	ID         string          `json:"id"`
	Run        string          `json:"run"`
	Session    string          `json:"session"`
	After      int64           `json:"after"` // the run's last seq before this response
	Prev       string          `json:"prev,omitempty"`
	Created    int64           `json:"created"` // Unix seconds
	Model      string          `json:"model"`
	Background bool            `json:"background,omitempty"`
	Echo       json.RawMessage `json:"echo,omitempty"`
	Deleted    bool            `json:"deleted,omitempty"`
}

// segment is one response of a run.
type segment struct {
	After int64
	ID    string
}

// records reads and writes the stored responses of principals.
type records struct {
	s Store
}

func (rs records) get(ctx context.Context, principal, id string) (*record, error) {
	v, err := rs.s.RemoteID(ctx, kindResponse, principal, id)
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeNotFound {
			return nil, responseNotFound(id)
		}
		return nil, err
	}
	var rec record
	if err := json.Unmarshal([]byte(v), &rec); err != nil || rec.Deleted || rec.Run == "" {
		return nil, responseNotFound(id)
	}
	rec.ID = id
	return &rec, nil
}

func (rs records) put(ctx context.Context, principal string, rec *record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return rs.s.PutID(ctx, bridge.IDMapping{Kind: kindResponse, Scope: principal, Local: rec.ID, Remote: string(b)})
}

func (rs records) value(ctx context.Context, kind bridge.IDKind, principal, local string) (string, bool, error) {
	v, err := rs.s.RemoteID(ctx, kind, principal, local)
	switch {
	case err == nil:
		return v, v != "", nil
	case bridge.ErrorCode(err) == bridge.CodeNotFound:
		return "", false, nil
	}
	return "", false, err
}

func (rs records) set(ctx context.Context, kind bridge.IDKind, principal, local, v string) error {
	return rs.s.PutID(ctx, bridge.IDMapping{Kind: kind, Scope: principal, Local: local, Remote: v})
}

// segments reads a run's responses, oldest first.
func (rs records) segments(ctx context.Context, principal, run string) ([]segment, error) {
	v, ok, err := rs.value(ctx, kindSegments, principal, run)
	if err != nil || !ok {
		return nil, err
	}
	var raw [][2]json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, fmt.Errorf("segments of run %s: %w", run, err)
	}
	out := make([]segment, 0, len(raw))
	for _, r := range raw {
		var s segment
		if json.Unmarshal(r[0], &s.After) != nil || json.Unmarshal(r[1], &s.ID) != nil {
			return nil, fmt.Errorf("segments of run %s: bad entry", run)
		}
		out = append(out, s)
	}
	return out, nil
}

func (rs records) putSegments(ctx context.Context, principal, run string, segs []segment) error {
	b := []byte{'['}
	for i, s := range segs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, s.After, 10)
		b = append(b, ',')
		id, _ := json.Marshal(s.ID)
		b = append(b, id...)
		b = append(b, ']')
	}
	b = append(b, ']')
	return rs.set(ctx, kindSegments, principal, run, string(b))
}

// lastPosition is the position of the last message of session, 0 when it
// has none.
func (rs records) lastPosition(ctx context.Context, session string) (int64, error) {
	msgs, _, err := rs.s.Messages(ctx, session, 0, 1)
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	return position(msgs[0].ID), nil
}

// position parses a message id "m<position>".
func position(id string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "m"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func responseNotFound(id string) *bridge.Error {
	return &bridge.Error{Code: bridge.CodeNotFound, Type: "invalid_request_error",
		Message: fmt.Sprintf("Response with id '%s' not found.", id)}
}

func previousNotFound(id string) *bridge.Error {
	return &bridge.Error{Code: bridge.CodeNotFound, Type: "invalid_request_error", Param: "previous_response_id",
		UpstreamCode: "previous_response_not_found", Message: fmt.Sprintf("Previous response with id '%s' not found.", id)}
}

// sessionLocks serializes the requests that change one session's chain of
// responses (which response is its latest, and where each ended), in this
// process. Striped: a bounded set of mutexes, picked by the session's hash.
type sessionLocks [64]sync.Mutex

func (l *sessionLocks) lock(session string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(session))
	m := &l[h.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}
