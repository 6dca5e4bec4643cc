package outbound

import (
	"testing"

	"github.com/sony/gobreaker"
)

// TestTrips: n consecutive failures open the breaker unless many more
// calls are still running (failures that ended together while healthy
// streams go on); an upstream that fails every call trips it soon after.
func TestTrips(t *testing.T) {
	for _, c := range []struct {
		name                      string
		requests, ok, failed, run uint32
		want                      bool
	}{
		{"4 in a row", 10, 6, 4, 4, false},
		{"5 in a row, none running", 5, 0, 5, 5, true},
		{"5 in a row, 50 running", 55, 0, 5, 5, true},
		{"5 in a row, 51 running", 56, 0, 5, 5, false},
		{"a wave of 25 short failures among 500 streams", 500, 0, 25, 25, false},
		{"a dead upstream: 46 of 500 failed, the rest failing", 500, 0, 46, 46, true},
	} {
		counts := gobreaker.Counts{Requests: c.requests, TotalSuccesses: c.ok, TotalFailures: c.failed, ConsecutiveFailures: c.run}
		if got := trips(counts, 5); got != c.want {
			t.Errorf("%s: trips = %v, want %v", c.name, got, c.want)
		}
	}
}
