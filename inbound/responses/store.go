package responses

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/bridge"
)

// Store is the part of bridge.Store the handler reads: a session's
// transcript, for a branch.
type Store interface {
	Messages(ctx context.Context, principal, session string, before int64, limit int) ([]bridge.Message, bool, error)
}

// record is a stored response.
type record = bridge.StoredResponse

// records reads and writes the stored responses of principals; with no
// ResponseStore there are none.
type records struct {
	s    Store
	resp bridge.ResponseStore
}

// get is principal's response id; not found when deleted, or when nothing
// is stored.
func (rs records) get(ctx context.Context, principal, id string) (*record, error) {
	if rs.resp == nil {
		return nil, responseNotFound(id)
	}
	rec, err := rs.resp.Response(ctx, principal, id)
	if err != nil {
		if bridge.ErrorCode(err) == bridge.CodeNotFound {
			return nil, responseNotFound(id)
		}
		return nil, err
	}
	if rec.Deleted || rec.RunID == "" {
		return nil, responseNotFound(id)
	}
	return rec, nil
}

// segments reads a run's responses, oldest first.
func (rs records) segments(ctx context.Context, principal, run string) ([]*record, error) {
	if rs.resp == nil {
		return nil, nil
	}
	return rs.resp.RunResponses(ctx, principal, run)
}

// end records that the responses of session whose end is not recorded
// ended at position pos: a later response of the session has begun.
func (rs records) end(ctx context.Context, principal, session string, pos int64) error {
	if rs.resp == nil {
		return nil
	}
	return rs.resp.EndResponses(ctx, principal, session, pos)
}

// lastPosition is the position of the last message of the caller's
// session, 0 when it has none.
func (rs records) lastPosition(ctx context.Context, session string) (int64, error) {
	msgs, _, err := rs.s.Messages(ctx, bridge.PrincipalFromContext(ctx), session, 0, 1)
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
