package responses_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	outresponses "github.com/bridge-dev/bridge/outbound/responses"
	"github.com/bridge-dev/bridge/outbound/responses/responsestest"
)

// BenchmarkWebSocketVsHTTPPaired calls one fake Responses upstream (the
// same handler answers both transports with the same events) through two
// clients, one over HTTP (kept-alive connections) and one in WebSocket
// mode, each iteration one call through each, in alternating order, so both
// see the same machine load. It reports each one's median wall time per
// call to the first event and to the end of the stream. short: a one-message
// request; long: a 40-message transcript of about 20 KiB, as a session's
// later calls send. The fake keeps no state between calls, so the fast
// path a real upstream has for a connection's last response is not in the
// figure: what it measures is the transport.
//
//	go test -run '^$' -bench WebSocketVsHTTPPaired -benchtime 2000x -count 5 ./outbound/responses/
func BenchmarkWebSocketVsHTTPPaired(b *testing.B) {
	srv := responsestest.New(func(n int, body []byte) responsestest.Reply {
		e := &responsestest.Events{ID: fmt.Sprintf("resp_%d", n), Model: "gpt-test"}
		return responsestest.Reply{Events: e.Created().Text("Hello", " there,", " friend.", " One", " two", " three.").Completed(20, 6).List()}
	})
	b.Cleanup(srv.Close)
	var turns []string
	for i := range 40 {
		turns = append(turns, fmt.Sprintf("turn %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 18)))
	}
	for _, size := range []struct {
		name string
		req  *bridge.Request
	}{
		{"short", userRequest("sess_bench", "Say hello.")},
		{"long", userRequest("sess_bench", turns...)},
	} {
		b.Run(size.name, func(b *testing.B) {
			overHTTP := outresponses.New(outresponses.Config{Name: "http", BaseURL: srv.BaseURL(), APIKey: "k"})
			overWS := outresponses.New(outresponses.Config{Name: "ws", BaseURL: srv.BaseURL(), APIKey: "k", WebSocket: true})
			b.Cleanup(func() { _ = overHTTP.Close(); _ = overWS.Close() })
			// One call each first: the connections are open before the
			// timing starts, as they are in a running bridge.
			benchCall(b, overHTTP, size.req)
			benchCall(b, overWS, size.req)
			var firstHTTP, firstWS, wholeHTTP, wholeWS []time.Duration
			i := 0
			for b.Loop() {
				clients := [2]*outresponses.Client{overHTTP, overWS}
				if i%2 == 1 {
					clients = [2]*outresponses.Client{overWS, overHTTP}
				}
				for _, c := range clients {
					first, whole := benchCall(b, c, size.req)
					if c == overWS {
						firstWS, wholeWS = append(firstWS, first), append(wholeWS, whole)
					} else {
						firstHTTP, wholeHTTP = append(firstHTTP, first), append(wholeHTTP, whole)
					}
				}
				i++
			}
			b.ReportMetric(median(firstHTTP), "http-first-ns/call")
			b.ReportMetric(median(firstWS), "ws-first-ns/call")
			b.ReportMetric(median(wholeHTTP), "http-ns/call")
			b.ReportMetric(median(wholeWS), "ws-ns/call")
			b.ReportMetric(median(wholeHTTP)-median(wholeWS), "ws-saved-ns/call")
		})
	}
}

// median is the median of ds in ns (a busy machine's stalls move a mean
// more than it).
func median(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds())
}

// benchCall makes one call and reads its stream to the end: the time to
// its first event and to its end.
func benchCall(b *testing.B, c *outresponses.Client, req *bridge.Request) (first, whole time.Duration) {
	t0 := time.Now()
	call, err := c.Open(b.Context(), req)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, err := range call.Events {
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			first = time.Since(t0)
		}
		n++
	}
	whole = time.Since(t0)
	if n == 0 {
		b.Fatal("no events")
	}
	return first, whole
}
