package main

import (
	"slices"
)

// medianResult folds the rounds of one target into one Result: each figure
// is its median over the rounds, each count of streams its sum, so a stream
// cut short in any round is still counted.
func medianResult(rs []*Result) *Result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := *rs[0]
	med := func(f func(*Result) *float64) {
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = *f(r)
		}
		slices.Sort(vs)
		*f(&out) = vs[len(vs)/2]
	}
	medInt := func(f func(*Result) *int64) {
		vs := make([]int64, len(rs))
		for i, r := range rs {
			vs[i] = *f(r)
		}
		slices.Sort(vs)
		*f(&out) = vs[len(vs)/2]
	}
	dist := func(f func(*Result) *Dist) {
		med(func(r *Result) *float64 { return &f(r).P50 })
		med(func(r *Result) *float64 { return &f(r).P99 })
		med(func(r *Result) *float64 { return &f(r).Mean })
		med(func(r *Result) *float64 { return &f(r).Max })
	}
	dist(func(r *Result) *Dist { return &r.Latency.TTFB })
	dist(func(r *Result) *Dist { return &r.Latency.TTLB })
	dist(func(r *Result) *Dist { return &r.Throughput.TTFB })
	dist(func(r *Result) *Dist { return &r.Throughput.TTLB })
	med(func(r *Result) *float64 { return &r.Throughput.StreamsPerSec })
	med(func(r *Result) *float64 { return &r.Throughput.Seconds })
	med(func(r *Result) *float64 { return &r.Throughput.CPUPerStream })
	medInt(func(r *Result) *int64 { return &r.Throughput.UpstreamConns })
	medInt(func(r *Result) *int64 { return &r.Memory.BaselineRSSKiB })
	medInt(func(r *Result) *int64 { return &r.Memory.PeakRSSKiB })
	heap := func(f func(*Result) *uint64) {
		vs := make([]uint64, len(rs))
		for i, r := range rs {
			vs[i] = *f(r)
		}
		slices.Sort(vs)
		*f(&out) = vs[len(vs)/2]
	}
	heap(func(r *Result) *uint64 { return &r.Memory.BaselineHeapBytes })
	heap(func(r *Result) *uint64 { return &r.Memory.PeakHeapBytes })

	out.Latency.Requests, out.Latency.Cut, out.Latency.Reasons = 0, 0, nil
	out.Latency.TTFB.N, out.Latency.TTLB.N = 0, 0
	out.Throughput.Streams, out.Throughput.Cut, out.Throughput.Reasons = 0, 0, nil
	out.Throughput.TTFB.N, out.Throughput.TTLB.N = 0, 0
	out.Memory.Total, out.Memory.Cut, out.Memory.Reasons = 0, 0, nil
	for _, r := range rs {
		out.Latency.Requests += r.Latency.Requests
		out.Latency.Cut += r.Latency.Cut
		out.Latency.Reasons = append(out.Latency.Reasons, r.Latency.Reasons...)
		out.Latency.TTFB.N += r.Latency.TTFB.N
		out.Latency.TTLB.N += r.Latency.TTLB.N
		out.Throughput.Streams += r.Throughput.Streams
		out.Throughput.Cut += r.Throughput.Cut
		out.Throughput.Reasons = append(out.Throughput.Reasons, r.Throughput.Reasons...)
		out.Throughput.TTFB.N += r.Throughput.TTFB.N
		out.Throughput.TTLB.N += r.Throughput.TTLB.N
		out.Memory.Total += r.Memory.Total
		out.Memory.Cut += r.Memory.Cut
		out.Memory.Reasons = append(out.Memory.Reasons, r.Memory.Reasons...)
	}
	if len(rs[0].Store) > 0 {
		out.Store = map[string]*StoreStats{}
		for ph := range rs[0].Store {
			st := *rs[0].Store[ph]
			f := func(g func(*StoreStats) *float64) {
				vs := make([]float64, 0, len(rs))
				for _, r := range rs {
					if s := r.Store[ph]; s != nil {
						vs = append(vs, *g(s))
					}
				}
				slices.Sort(vs)
				*g(&st) = vs[len(vs)/2]
			}
			for _, g := range []func(*StoreStats) *float64{
				func(s *StoreStats) *float64 { return &s.CommitsPer },
				func(s *StoreStats) *float64 { return &s.EventsPerTx },
				func(s *StoreStats) *float64 { return &s.CommitUS },
				func(s *StoreStats) *float64 { return &s.Commit.P50 },
				func(s *StoreStats) *float64 { return &s.Commit.P99 },
				func(s *StoreStats) *float64 { return &s.Commit.Max },
				func(s *StoreStats) *float64 { return &s.CreateSession },
				func(s *StoreStats) *float64 { return &s.CreateRun },
				func(s *StoreStats) *float64 { return &s.Messages },
				func(s *StoreStats) *float64 { return &s.RunReads },
				func(s *StoreStats) *float64 { return &s.RunReadUS },
			} {
				f(g)
			}
			out.Store[ph] = &st
		}
	}
	out.Rounds = len(rs)
	return &out
}
