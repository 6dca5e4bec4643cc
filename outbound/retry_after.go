package outbound

import (
	"net/http"
	"strconv"
	"time"
)

// ParseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
// Anything else is 0.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
