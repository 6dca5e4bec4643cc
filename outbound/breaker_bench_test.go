package outbound_test

import (
	"testing"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/outbound"
)

// BenchmarkBreakerCall is the cost the retry and breaker middleware add to
// one upstream call: open a scripted call and range over its 8 events.
func BenchmarkBreakerCall(b *testing.B) {
	up := &bridgetest.Upstream{Events: bridgetest.TextEvents("a", "b", "c", "d", "e")}
	br := outbound.NewBreaker("u", outbound.BreakerConfig{}, nil, nil)
	for _, bm := range []struct {
		name string
		u    bridge.Upstream
	}{
		{"bare", up},
		{"retry+breaker", outbound.Wrap(up, outbound.Retry(outbound.RetryConfig{}, true), br.Middleware())},
	} {
		b.Run(bm.name, func(b *testing.B) {
			req := &bridge.Request{Model: "m"}
			b.ReportAllocs()
			for b.Loop() {
				call, err := bm.u.Open(b.Context(), req)
				if err != nil {
					b.Fatal(err)
				}
				for _, err := range call.Events {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
