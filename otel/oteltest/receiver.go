// Package oteltest is a local OTLP/HTTP trace receiver for tests: an
// httptest server on 127.0.0.1 that decodes the protobuf export requests an
// OTLP exporter posts to /v1/traces and keeps their spans.
package oteltest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is the fake collector. Its URL is what OTEL_EXPORTER_OTLP_ENDPOINT
// takes. It is safe for concurrent use.
type Receiver struct {
	*httptest.Server

	mu       sync.Mutex
	spans    []Span
	requests int
	wake     chan struct{}
}

// Span is one received span, flattened with its resource's service name.
type Span struct {
	Service      string
	Name         string
	Kind         tracepb.Span_SpanKind
	TraceID      string // hex
	SpanID       string // hex
	ParentSpanID string // hex, "" for a root
	Attributes   map[string]string
	Events       []string
	StatusCode   tracepb.Status_StatusCode
}

// NewReceiver starts a receiver; the caller closes it.
func NewReceiver() *Receiver {
	r := &Receiver{wake: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range ex.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Service: service, Name: s.GetName(), Kind: s.GetKind(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Attributes:   attrMap(s.GetAttributes()), StatusCode: s.GetStatus().GetCode(),
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, e.GetName())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()

	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests is the number of export requests received.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Changed returns a channel closed at the next export request.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wake
}

// Named returns the first received span called name, or nil.
func (r *Receiver) Named(name string) *Span {
	for _, s := range r.Spans() {
		if s.Name == name {
			return &s
		}
	}
	return nil
}

// attrMap flattens OTLP attributes to strings (arrays as their elements
// joined by commas).
func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyString(kv.GetValue())
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		s := ""
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				s += ","
			}
			s += anyString(e)
		}
		return s
	}
	return ""
}
