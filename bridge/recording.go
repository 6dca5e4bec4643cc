package bridge

import (
	"context"
	"encoding/json"
	"time"
)

// Recording is one upstream HTTP call of a run as the inspector recorded
// it (the request the bridge sent, the response it got), as JSON in the
// recorder's shape (inbound/ui.Call), credentials already redacted. The
// engine never reads recordings; the inspector does.
type Recording struct {
	RunID   string
	Created time.Time
	Data    json.RawMessage
}

// Bounds of the recordings a RecordingStore keeps.
const (
	// MaxRecording bounds one recording's Data.
	MaxRecording = 1 << 20
	// MaxRecordings bounds the recordings of one run.
	MaxRecordings = 64
)

// RecordingStore keeps the upstream calls recorded for runs, so every
// replica's inspector shows them, after a restart too. A bridge.Store may
// implement it (storage/sqlite, storage/postgres and storage/memory do);
// without it the inspector keeps recent recordings in memory. A run's
// recordings go when its events do (DeleteEventsBefore). Implementations
// are safe for concurrent use; each method is its own transaction.
type RecordingStore interface {
	// AddRecording appends r to its run's recordings. CodeTooLarge when
	// its Data is longer than MaxRecording or the run has MaxRecordings
	// already; CodeNotFound for a run that does not exist.
	AddRecording(ctx context.Context, r *Recording) error
	// Recordings returns run's recordings, oldest first (none for a run
	// without any, or an unknown one).
	Recordings(ctx context.Context, run string) ([]Recording, error)
}
