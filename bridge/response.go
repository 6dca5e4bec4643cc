package bridge

import (
	"context"
	"encoding/json"
	"time"
)

// StoredResponse is an OpenAI Responses response its client asked the
// bridge to keep (store: true). A response is a segment of a run: the run's
// events after seq After, up to the first final. The engine never reads
// these; the Responses dialect does (retrieve, input_items, delete, and
// previous_response_id, which continues the response's session).
type StoredResponse struct {
	ID        string
	Principal string // the key that made it; no one else finds it
	RunID     string
	SessionID string
	// After is the run's last seq before the response began.
	After    int64
	Previous string // the previous_response_id it continued, if any
	Created  time.Time
	Model    string
	// Background: created with background: true.
	Background bool
	// Echo holds the request's fields the Response object echoes (JSON).
	Echo json.RawMessage
	// Input is its input items, each with its id (a JSON array).
	Input json.RawMessage
	// Output is the finished Response object; nil until the response has
	// ended and been read once.
	Output json.RawMessage
	// End is the position of its session's last message when a later
	// response of the session began (message positions start at 1); 0 while
	// it is its session's latest.
	End int64
	// Deleted marks a response its client deleted: it is kept (a run's
	// segments still need it) without its input, output or echo.
	Deleted bool
}

// ResponseStore keeps stored Responses objects. A bridge.Store may
// implement it (storage/sqlite, storage/postgres and storage/memory do);
// the Responses dialect keeps no response without it. Implementations are
// safe for concurrent use; each method is its own transaction. Lookups of
// a missing response return an *Error with CodeNotFound.
type ResponseStore interface {
	// PutResponse inserts r; CodeConflict if its principal has one of its
	// id.
	PutResponse(ctx context.Context, r *StoredResponse) error
	// Response returns principal's response id (a deleted one too, marked).
	Response(ctx context.Context, principal, id string) (*StoredResponse, error)
	// RunResponses returns principal's responses of run, by After (the
	// order they began in); none for a run that has none.
	RunResponses(ctx context.Context, principal, run string) ([]*StoredResponse, error)
	// FinishResponse records the finished Response object of a response.
	FinishResponse(ctx context.Context, principal, id string, output json.RawMessage) error
	// EndResponses sets End to end on principal's responses of session whose
	// End is 0: a later response of the session has begun.
	EndResponses(ctx context.Context, principal, session string, end int64) error
	// DeleteResponse marks a response deleted and forgets its input, output
	// and echo.
	DeleteResponse(ctx context.Context, principal, id string) error
}
