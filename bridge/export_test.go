package bridge

import (
	"testing"
	"time"
)

// SetResumeRetry sets the resume retry's first backoff and its default
// bound (DefaultResumeRetry's stand-in) for tb, as they were once tb ends. Call it
// before the engine is made: the engine takes the bound when it is made,
// and is closed before they are put back.
func SetResumeRetry(tb testing.TB, backoff, retryFor time.Duration) {
	b, f := resumeBackoff, resumeRetry
	resumeBackoff, resumeRetry = backoff, retryFor
	tb.Cleanup(func() { resumeBackoff, resumeRetry = b, f })
}
